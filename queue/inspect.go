package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// Stats is a queue's stats hash (seed 001's queue:stats:{queue_name}) and
// the depth of each state, read at one instant by one script.
type Stats struct {
	TotalEnqueued  int64 // jobs accepted by Enqueue
	TotalProcessed int64 // jobs acked
	// TotalFailed counts failed attempts: handler errors, panics, Nack,
	// expired leases.
	TotalFailed int64
	TotalDead   int64 // jobs moved to the dead-letter list
	// TotalDeadTrimmed counts dead letters dropped from the tail of the
	// dead-letter list because it was at its cap (WithDeadLetterCap).
	TotalDeadTrimmed int64
	AvgProcessTime   time.Duration // mean handler time of acked jobs
	LastProcessedAt  time.Time     // server time of the last ack; zero if none

	Ready    map[Priority]int64 // ready now, per priority
	Delayed  map[Priority]int64 // waiting for a delay or a retry backoff
	InFlight int64              // leased to a consumer
	Dead     int64              // entries in the dead-letter list
}

// Pending returns the ready jobs of all priorities.
func (s Stats) Pending() int64 { return s.Ready[High] + s.Ready[Normal] + s.Ready[Low] }

// Stats reads the stats hash and counts every state in one script (one
// round trip). A stats field that is not a number is an error matching
// keys.ErrCorrupt.
func (q *Queue[T]) Stats(ctx context.Context) (Stats, error) {
	v, err := q.run(ctx, statsScript, "stats", []string{q.levels[0], q.levels[1], q.levels[2], q.active, q.stats, q.dead})
	if err != nil {
		return Stats{}, err
	}
	a, err := reply.Slice(v, 9)
	if err != nil {
		return Stats{}, fmt.Errorf("queue: stats %q: %w", q.name, err)
	}
	h, err := reply.Strings(a[0])
	if err != nil || len(h)%2 != 0 {
		return Stats{}, fmt.Errorf("queue: stats %q: %w", q.name, errors.Join(err, reply.ErrUnexpected))
	}
	n, err := reply.Int64s(a[1:])
	if err != nil {
		return Stats{}, fmt.Errorf("queue: stats %q: %w", q.name, err)
	}
	s := Stats{
		Ready:    map[Priority]int64{High: n[0], Normal: n[2], Low: n[4]},
		Delayed:  map[Priority]int64{High: n[1], Normal: n[3], Low: n[5]},
		InFlight: n[6], Dead: n[7],
	}
	for i := 0; i < len(h); i += 2 {
		f, val := h[i], h[i+1]
		var dst *int64
		switch f {
		case "total_enqueued":
			dst = &s.TotalEnqueued
		case "total_processed":
			dst = &s.TotalProcessed
		case "total_failed":
			dst = &s.TotalFailed
		case "total_dead":
			dst = &s.TotalDead
		case "total_dead_trimmed":
			dst = &s.TotalDeadTrimmed
		case "last_processed_at":
			ms, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return Stats{}, keys.Corrupt(q.stats, fmt.Errorf("field %s: %w", f, err))
			}
			s.LastProcessedAt = msTime(ms)
			continue
		case "avg_process_time_ms":
			x, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return Stats{}, keys.Corrupt(q.stats, fmt.Errorf("field %s: %w", f, err))
			}
			s.AvgProcessTime = time.Duration(x * float64(time.Millisecond))
			continue
		default:
			continue
		}
		x, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return Stats{}, keys.Corrupt(q.stats, fmt.Errorf("field %s: %w", f, err))
		}
		*dst = x
	}
	return s, nil
}

// State names where a job is.
type State string

// The states of a job.
const (
	Pending   State = "pending"   // ready, waiting for a consumer
	Scheduled State = "scheduled" // waiting for its delay or retry backoff
	Active    State = "active"    // leased to a consumer
	Dead      State = "dead"      // in the dead-letter list
)

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

// maxList bounds one List call, so a single script never blocks Redis
// for long.
const maxList = 10000

// List returns up to limit jobs (1..10,000) in state, skipping offset:
// pending jobs by priority then FIFO, scheduled jobs by priority then
// ready time, active jobs by lease deadline, dead jobs newest first. One
// script (one round trip), read-only. Info.Delivery is the job's last
// lease token (0 if never delivered).
func (q *Queue[T]) List(ctx context.Context, state State, offset, limit int) ([]Info[T], error) {
	switch state {
	case Pending, Scheduled, Active, Dead:
	default:
		return nil, fmt.Errorf("%w: state %q", ErrInvalid, state)
	}
	if offset < 0 || limit < 1 || limit > maxList {
		return nil, fmt.Errorf("%w: offset %d, limit %d (1..%d)", ErrInvalid, offset, limit, maxList)
	}
	return q.list(ctx, string(state), strconv.Itoa(offset), limit)
}

// Peek returns the job with the given ID in whatever state it is, or
// ErrNotFound. One round trip, read-only; a dead job is found by a scan of
// the dead-letter list (bounded by its cap).
func (q *Queue[T]) Peek(ctx context.Context, id string) (*Info[T], error) {
	if _, err := uniqueKey.Key(q.o.ns, q.name, id); err != nil {
		return nil, fmt.Errorf("queue: job ID %q: %w", id, err)
	}
	out, err := q.list(ctx, "id", id, 1)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %q in queue %q", ErrNotFound, id, q.name)
	}
	return &out[0], nil
}

func (q *Queue[T]) list(ctx context.Context, what, arg string, limit int) ([]Info[T], error) {
	v, err := q.run(ctx, listScript, "list", []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.dead}, what, arg, limit)
	if err != nil {
		return nil, err
	}
	a, err := reply.Slice(v, -1)
	if err != nil || len(a) == 0 {
		return nil, fmt.Errorf("queue: list %q: %w", q.name, errors.Join(err, reply.ErrUnexpected))
	}
	out := make([]Info[T], 0, len(a)-1)
	for _, rv := range a[1:] {
		row, err := reply.Strings(rv)
		if err != nil {
			return nil, fmt.Errorf("queue: list %q: %w", q.name, err)
		}
		var in Info[T]
		if len(row) == 2 && row[0] == "dead" {
			if err := q.decodeDead(row[1], &in); err != nil {
				return nil, err
			}
			out = append(out, in)
			continue
		}
		if len(row) != 5 {
			return nil, fmt.Errorf("queue: list %q: %w: row of %d", q.name, reply.ErrUnexpected, len(row))
		}
		in.State = State(row[0])
		dlv, retry, max, p, lastErr, err := parseState(q.state, row[2])
		if err != nil {
			return nil, err
		}
		if err := q.decodeBody(q.jobs, row[3], &in.Job); err != nil {
			return nil, err
		}
		score, err := strconv.ParseInt(row[4], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("queue: list %q: %w", q.name, errors.Join(err, reply.ErrUnexpected))
		}
		if in.State != Active {
			score /= 1000
		}
		in.ID, in.Delivery, in.RetryCount, in.MaxRetries, in.Priority, in.LastError = row[1], dlv, retry, max, p, lastErr
		in.At = msTime(score)
		if in.State == Active {
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

// Delete removes the job with the given ID from any state (one script).
// A consumer holding it gets ErrLeaseLost when it settles. ErrNotFound if
// there is none.
func (q *Queue[T]) Delete(ctx context.Context, id string) error {
	if _, err := uniqueKey.Key(q.o.ns, q.name, id); err != nil {
		return fmt.Errorf("queue: job ID %q: %w", id, err)
	}
	v, err := q.run(ctx, deleteScript, "delete", []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.dead}, id)
	if err != nil {
		return err
	}
	n, err := reply.Int64(v)
	switch {
	case err != nil:
		return fmt.Errorf("queue: delete %q: %w", q.name, err)
	case n == 0:
		return fmt.Errorf("%w: %q in queue %q", ErrNotFound, id, q.name)
	}
	return nil
}

// Requeue moves the job with the given ID from the dead-letter list back
// to ready at its priority, with its retry count reset (one script). It
// returns ErrNotFound if the ID is not in the dead-letter list and
// ErrDuplicate if a live job has taken the ID meanwhile (the dead entry
// stays).
func (q *Queue[T]) Requeue(ctx context.Context, id string) error {
	if _, err := uniqueKey.Key(q.o.ns, q.name, id); err != nil {
		return fmt.Errorf("queue: job ID %q: %w", id, err)
	}
	v, err := q.run(ctx, requeueScript, "requeue", []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.dead, q.wake}, id, ms(wakeTTL))
	if err != nil {
		return err
	}
	n, err := reply.Int64(v)
	switch {
	case err != nil:
		return fmt.Errorf("queue: requeue %q: %w", q.name, err)
	case n == 0:
		return fmt.Errorf("%w: %q in the dead letters of %q", ErrNotFound, id, q.name)
	case n == -1:
		return fmt.Errorf("%w: %q is live in queue %q", ErrDuplicate, id, q.name)
	case n == -2:
		return keys.Corrupt(q.dead, fmt.Errorf("malformed dead-letter entry for %q", id))
	}
	return nil
}

// maxPurge bounds one Purge call, so a single script never blocks Redis
// for long.
const maxPurge = 10000

// Purge deletes up to limit jobs in state (at most 10,000 per call, so the
// script stays short; call again until it returns fewer than limit): pending
// and scheduled jobs by priority then age, active jobs by lease deadline
// (their workers get ErrLeaseLost), dead letters oldest first. One script
// (one round trip). It returns how many were deleted. The stats counters
// are not changed: purged jobs were neither processed nor failed.
func (q *Queue[T]) Purge(ctx context.Context, state State, limit int) (int, error) {
	switch state {
	case Pending, Scheduled, Active, Dead:
	default:
		return 0, fmt.Errorf("%w: state %q", ErrInvalid, state)
	}
	if limit < 1 || limit > maxPurge {
		return 0, fmt.Errorf("%w: purge limit %d (1..%d)", ErrInvalid, limit, maxPurge)
	}
	v, err := q.run(ctx, purgeScript, "purge", []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.dead}, string(state), limit)
	if err != nil {
		return 0, err
	}
	n, err := reply.Int64(v)
	if err != nil {
		return 0, fmt.Errorf("queue: purge %q: %w", q.name, err)
	}
	return int(n), nil
}
