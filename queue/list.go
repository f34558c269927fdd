package queue

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redschema/redschema/keys"
)

var (
	//go:embed list.lua
	listSrc string

	listOp = pkg.Declare("list", libSrc+"\n"+listSrc, liveKeys)
)

// State names where a job is.
type State string

// The states of a job.
const (
	Pending   State = "pending"   // ready, waiting for a consumer
	Scheduled State = "scheduled" // waiting for its delay or retry backoff
	Active    State = "active"    // leased to a consumer
	Dead      State = "dead"      // in the dead-letter list
)

func (s State) valid() bool { return s == Pending || s == Scheduled || s == Active || s == Dead }

// Info describes a job found by List or Peek.
type Info[T any] struct {
	Job[T]
	State State
	// At is when the job becomes ready (Pending, Scheduled), when its
	// lease expires (Active), or when it failed for good (Dead).
	At time.Time
	// Raw is the stored job text of a dead job whose JSON did not decode
	// (its Payload is then zero); empty otherwise. A dead-letter entry that
	// is not JSON at all is an error matching keys.ErrCorrupt.
	Raw string
}

// MaxList bounds one List call, so a single script never blocks Redis
// for long.
const MaxList = 10000

// List returns up to limit jobs (1..10,000) in state, skipping offset:
// pending jobs by priority then FIFO, scheduled jobs by priority then
// ready time, active jobs by lease deadline, dead jobs newest first. One
// script (one round trip), read-only. Info.Delivery is the job's last
// lease token (0 if never delivered).
func (q *Queue[T]) List(ctx context.Context, state State, offset, limit int) ([]Info[T], error) {
	const op = "list"
	if !state.valid() {
		return nil, pkg.Invalidf(op, "state %q", state)
	}
	if offset < 0 || limit < 1 || limit > MaxList {
		return nil, pkg.Invalidf(op, "offset %d, limit %d (1..%d)", offset, limit, MaxList)
	}
	return q.list(ctx, op, string(state), strconv.Itoa(offset), limit)
}

// Peek returns the job with the given ID in whatever state it is, or
// ErrNotFound. One round trip, read-only; a dead job is found by a scan of
// the dead-letter list (bounded by its cap).
func (q *Queue[T]) Peek(ctx context.Context, id string) (*Info[T], error) {
	const op = "peek"
	if _, err := q.jobKey(op, id); err != nil {
		return nil, err
	}
	out, err := q.list(ctx, op, "id", id, 1)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, pkg.Fail(op, q.jobs, ErrNotFound, fmt.Errorf("job %q", id))
	}
	return &out[0], nil
}

func (q *Queue[T]) list(ctx context.Context, op, what, arg string, limit int) ([]Info[T], error) {
	rep, err := q.run.Run(ctx, listOp, q.live, what, arg, limit)
	if err != nil {
		return nil, err
	}
	rows := rep.List(1)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	out := make([]Info[T], 0, len(rows))
	for _, rv := range rows {
		row, ok := rv.([]any)
		if !ok {
			return nil, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: row %T", rv))
		}
		r := rowReader{vals: row}
		var in Info[T]
		if len(row) == 2 && r.str(0) == "dead" {
			if err := q.decodeDead(r.str(1), &in); err != nil {
				return nil, pkg.Fail(op, q.dead, nil, err)
			}
			out = append(out, in)
			continue
		}
		if len(row) != 5 {
			return nil, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: row of %d", len(row)))
		}
		state, id, st, body, score := State(r.str(0)), r.str(1), r.str(2), r.str(3), r.int(4)
		if r.err != nil {
			return nil, pkg.Fail(op, q.jobs, nil, r.err)
		}
		if err := q.decodeBody(q.jobs, body, &in.Job); err != nil {
			return nil, pkg.Fail(op, q.jobs, nil, err)
		}
		// A job never delivered has no state entry: no delivery, no
		// attempt, its JSON's retries and priority.
		dlv, retry, max, p, lastErr := int64(0), 0, in.MaxRetries, in.Priority, ""
		if st != "" {
			var err error
			if dlv, retry, max, p, lastErr, err = parseState(q.state, st); err != nil {
				return nil, pkg.Fail(op, q.state, nil, err)
			}
		}
		if state != Active {
			score /= 1000
		}
		in.State = state
		in.ID, in.Delivery, in.RetryCount, in.MaxRetries, in.Priority, in.LastError = id, dlv, retry, max, p, lastErr
		in.At = msTime(score)
		if state == Active {
			in.LeaseDeadline = in.At
		}
		out = append(out, in)
	}
	return out, nil
}

// deadEntry is the dead-letter list's element: the job JSON as it was
// stored, with why and when it failed for good.
type deadEntry struct {
	ID         string          `json:"id"`
	Error      string          `json:"error"`
	FailedAt   int64           `json:"failed_at"` // Unix ms, server clock
	RetryCount int             `json:"retry_count"`
	MaxRetries int             `json:"max_retries"`
	Level      string          `json:"level"`
	Raw        *string         `json:"raw,omitempty"`
	Job        json.RawMessage `json:"job"`
}

func (q *Queue[T]) decodeDead(s string, in *Info[T]) error {
	var e deadEntry
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return keys.Corrupt(q.dead, err)
	}
	if len(e.Job) > 0 && string(e.Job) != "null" {
		if err := q.decodeBody(q.dead, string(e.Job), &in.Job); err != nil {
			// The entry is readable, its job is not (stored by another
			// program or payload type): show it raw rather than failing
			// the whole listing.
			in.Job = Job[T]{}
			raw := string(e.Job)
			e.Raw = &raw
		}
	}
	p, ok := parseLevel(e.Level)
	if !ok {
		return keys.Corrupt(q.dead, fmt.Errorf("bad level %q", e.Level))
	}
	in.ID, in.State, in.At = e.ID, Dead, msTime(e.FailedAt)
	in.RetryCount, in.MaxRetries, in.Priority, in.LastError = e.RetryCount, e.MaxRetries, p, e.Error
	if e.Raw != nil {
		in.Raw = *e.Raw
	}
	return nil
}
