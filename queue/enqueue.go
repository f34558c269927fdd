package queue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
)

// EnqueueOptions tunes one Enqueue. The zero value (or nil) means: a
// generated ID, Normal priority, ready now, the queue's default retries,
// no uniqueness window.
type EnqueueOptions struct {
	// ID is the job ID; empty means a random UUID. While a job with this ID
	// is live (pending, scheduled, in flight) another is refused with
	// ErrDuplicate.
	ID string
	// Priority is High, Normal or Low.
	Priority Priority
	// Delay makes the job ready this long after enqueue (server clock).
	// Negative is ErrInvalid.
	Delay time.Duration
	// ProcessAt makes the job ready at this time (if later than Delay).
	ProcessAt time.Time
	// MaxRetries is the number of retries after the first attempt; 0 means
	// the queue's default, NoRetries means none.
	MaxRetries int
	// Unique refuses another enqueue of the same ID for this long after
	// this one, even once the job is done (ErrDuplicate). It requires ID.
	Unique time.Duration
}

type prepared struct {
	id   string
	keys []string
	args []any
}

func (q *Queue[T]) prepare(payload T, o *EnqueueOptions) (prepared, error) {
	var opt EnqueueOptions
	if o != nil {
		opt = *o
	}
	switch {
	case opt.Delay < 0:
		return prepared{}, fmt.Errorf("%w: negative delay %v", ErrInvalid, opt.Delay)
	case opt.Unique < 0:
		return prepared{}, fmt.Errorf("%w: negative uniqueness window %v", ErrInvalid, opt.Unique)
	case opt.Unique > 0 && opt.ID == "":
		return prepared{}, fmt.Errorf("%w: a uniqueness window needs an ID", ErrInvalid)
	case opt.Unique > 0 && opt.Unique < time.Millisecond:
		return prepared{}, fmt.Errorf("%w: uniqueness window %v under 1ms", ErrInvalid, opt.Unique)
	case opt.MaxRetries < NoRetries:
		return prepared{}, fmt.Errorf("%w: max retries %d", ErrInvalid, opt.MaxRetries)
	}
	if _, ok := parseLevel(opt.Priority.String()); !ok {
		return prepared{}, fmt.Errorf("%w: priority %d", ErrInvalid, int(opt.Priority))
	}
	maxRetries := opt.MaxRetries
	switch maxRetries {
	case 0:
		maxRetries = q.o.maxRetries
	case NoRetries:
		maxRetries = 0
	}
	id := opt.ID
	if id == "" {
		id = newID()
	}
	uk, err := uniqueKey.Key(q.o.ns, q.name, id)
	if err != nil {
		return prepared{}, fmt.Errorf("queue: job ID %q: %w", id, err)
	}
	body, err := q.encode(id, payload, opt.Priority, time.Now(), maxRetries)
	if err != nil {
		return prepared{}, err
	}
	var at int64
	if !opt.ProcessAt.IsZero() {
		at = opt.ProcessAt.UnixMilli()
	}
	return prepared{
		id:   id,
		keys: []string{q.jobs, q.state, q.levelKey(opt.Priority), q.stats, q.wake, uk},
		args: []any{id, body, maxRetries, opt.Priority.String(), ms(opt.Delay), at, ms(opt.Unique), ms(wakeTTL)},
	}, nil
}

// Enqueue adds one job and returns its ID. It is one round trip (one
// script): the job is written whole or not at all. A live job with the
// same ID, or one enqueued within its Unique window, gives ErrDuplicate.
// Bad options give ErrInvalid, an oversize job ErrTooLarge, an invalid ID
// keys.ErrInvalidKey; nothing is written then.
func (q *Queue[T]) Enqueue(ctx context.Context, payload T, o *EnqueueOptions) (string, error) {
	p, err := q.prepare(payload, o)
	if err != nil {
		return "", err
	}
	v, err := q.run(ctx, enqueueScript, "enqueue", p.keys, p.args...)
	if err != nil {
		return "", err
	}
	return p.id, q.enqueued(p.id, v)
}

func (q *Queue[T]) enqueued(id string, v any) error {
	n, err := reply.Int64(v)
	switch {
	case err != nil:
		return fmt.Errorf("queue: enqueue %q: %w", q.name, err)
	case n == 0:
		return fmt.Errorf("%w: %q in queue %q", ErrDuplicate, id, q.name)
	}
	return nil
}

// Item is one job of EnqueueBatch.
type Item[T any] struct {
	Payload T
	Options *EnqueueOptions
}

// BatchError reports the items of EnqueueBatch that were not enqueued.
// Errs has one entry per item, nil for the ones that were. It matches
// every item error with errors.Is (ErrDuplicate, ErrInvalid, ...).
type BatchError struct {
	Errs []error
}

// Error summarises the failed items (the first three, and a count).
func (e *BatchError) Error() string {
	var b strings.Builder
	n := 0
	for i, err := range e.Errs {
		if err == nil {
			continue
		}
		if n < 3 {
			if n > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "item %d: %v", i, err)
		}
		n++
	}
	if n > 3 {
		fmt.Fprintf(&b, "; and %d more", n-3)
	}
	return fmt.Sprintf("queue: %d of %d items not enqueued: %s", n, len(e.Errs), b.String())
}

// Unwrap returns the item errors.
func (e *BatchError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// EnqueueBatch enqueues items in one pipeline (one round trip; on a cluster
// every item of one queue goes to the same node). Each item is atomic on
// its own, the batch is not: items that fail validation are not sent, the
// others are. It returns the IDs in item order ("" for items not enqueued)
// and a *BatchError naming the failed items, or nil.
func (q *Queue[T]) EnqueueBatch(ctx context.Context, items []Item[T]) ([]string, error) {
	ids := make([]string, len(items))
	errs := make([]error, len(items))
	ps := make([]prepared, len(items))
	failed := false
	for i, it := range items {
		p, err := q.prepare(it.Payload, it.Options)
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		ps[i] = p
	}
	cmds := make([]*redis.Cmd, len(items))
	send := func(idx []int, eval bool) error {
		pipe := q.client.Pipeline()
		for _, i := range idx {
			if eval {
				cmds[i] = enqueueScript.Eval(ctx, pipe, ps[i].keys, ps[i].args...)
			} else {
				cmds[i] = enqueueScript.EvalSha(ctx, pipe, ps[i].keys, ps[i].args...)
			}
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	var idx []int
	for i := range items {
		if errs[i] == nil {
			idx = append(idx, i)
		}
	}
	if len(idx) > 0 {
		err := send(idx, false)
		if err != nil && ctx.Err() == nil {
			// NOSCRIPT (a restarted server, a new master): resend only the
			// items that did not run, with the script body.
			var again []int
			for _, i := range idx {
				if e := cmds[i].Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
					again = append(again, i)
				}
			}
			if len(again) > 0 {
				_ = send(again, true)
			}
		}
	}
	for _, i := range idx {
		v, err := cmds[i].Result()
		if err != nil {
			errs[i], failed = fmt.Errorf("queue: enqueue %q: %w", q.name, err), true
			continue
		}
		if err := q.enqueued(ps[i].id, v); err != nil {
			errs[i], failed = err, true
			continue
		}
		ids[i] = ps[i].id
	}
	if failed {
		return ids, &BatchError{Errs: errs}
	}
	return ids, nil
}
