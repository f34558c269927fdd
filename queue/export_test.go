package queue

import (
	"context"

	"github.com/redschema/redschema/internal/call"
)

// SchedulePass runs one pass of RunSchedules, for tests that control time.
func (q *Queue[T]) SchedulePass(ctx context.Context) error {
	_, err := q.schedulePass(ctx)
	return err
}

// The bounds the external tests check the edges of, under their
// former exported names.
const (
	ReplayWindow      = replayWindow
	MinLease          = minLease
	MaxLease          = maxLease
	DefaultLease      = defaultLease
	DefaultMaxRetries = defaultRetries
	MaxRetriesLimit   = maxRetries
	MaxDelay          = maxDelay
	MaxDeadCap        = maxDeadCap
	MaxPayloadLimit   = maxPayload
	MaxShutdownGrace  = maxGrace
	MaxHeaders        = maxHeaders
	MaxHeaderBytes    = maxHeaderBytes
	DeadTTL           = deadTTL
	MaxRatePeriod     = maxRatePeriod
	MaxPipelines      = call.MaxLanes
	MaxProgress       = maxProgress
	MaxList           = maxList
)

// DequeueN leases up to n jobs in one script call, as a worker's prefetch
// does, returning the error the script's notes make.
func (q *Queue[T]) DequeueN(ctx context.Context, n int) ([]*Job[T], error) {
	jobs, _, err := q.dequeue(ctx, n)
	return jobs, err
}
