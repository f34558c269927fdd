package queue

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed progress.lua
	progressSrc string

	progressOp, progressEvOp = twin("progress", progressSrc, []*keys.Template{stateKey, activeKey, progressKey}, call.Uses(lib, call.Batched, call.JSONStr))
)

// SetProgress records p, encoded as JSON (at most 4 KiB), as
// the job's progress: Peek reads it while the job runs and, with
// WithRetention, after it finished. Only the holder of the lease can
// write it (ErrLeaseLost otherwise); a later call replaces it, and it is
// deleted when the delivery is settled (a retry starts with none). One
// round trip. j must come from Dequeue, TryDequeue or Run.
func (j *Job[T]) SetProgress(ctx context.Context, p any) error {
	const op = "progress"
	if j == nil || j.q == nil {
		return pkg.Invalidf(op, "job not from a dequeue")
	}
	q := j.q
	b, err := json.Marshal(p)
	if err != nil {
		return pkg.Invalid(op, fmt.Errorf("progress does not encode: %w", err))
	}
	if len(b) > maxProgress {
		return pkg.Fail(op, q.progress, ErrTooLarge, fmt.Errorf("progress of job %q is %d bytes, limit %d", j.ID, len(b), maxProgress))
	}
	rep, err := q.run.Run(ctx, q.pick(progressOp, progressEvOp), q.ev([]string{q.state, q.active, q.progress}), j.ID, j.Delivery, b, q.o.events)
	if err != nil {
		return err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return err
	}
	if n != 1 {
		return pkg.Fail(op, q.active, ErrLeaseLost, fmt.Errorf("job %q, delivery %d", j.ID, j.Delivery))
	}
	return nil
}

// SetResult sets the result kept with the job when it is acked (by Ack or
// by Run after its handler returns nil), encoded as JSON (at most
// 64 KiB): with WithRetention, Peek and List(Completed) return
// it; without, it is dropped. It writes nothing to Redis itself; a later
// call replaces it. ErrInvalid when v does not encode, ErrTooLarge when
// it is too large (the result is then unchanged).
func (j *Job[T]) SetResult(v any) error {
	const op = "result"
	if j == nil {
		return pkg.Invalidf(op, "nil job")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return pkg.Invalid(op, fmt.Errorf("result does not encode: %w", err))
	}
	if len(b) > maxResult {
		return pkg.Fail(op, "", ErrTooLarge, fmt.Errorf("result of job %q is %d bytes, limit %d", j.ID, len(b), maxResult))
	}
	j.result = b
	return nil
}
