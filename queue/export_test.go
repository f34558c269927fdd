package queue

import "context"

// SchedulePass runs one pass of RunSchedules, for tests that control time.
func (q *Queue[T]) SchedulePass(ctx context.Context) error {
	_, err := q.schedulePass(ctx)
	return err
}
