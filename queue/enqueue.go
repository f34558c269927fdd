package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed enqueue.lua
	enqueueSrc string
	// enqueueLib is enqueue_lib.lua, the library of enqueue and tick.
	//go:embed enqueue_lib.lua
	enqueueLib string

	// KEYS[6], the unique key, goes only with a uniqueness window; it
	// takes the last template's type, a string, as its own is. Without
	// the reply memo (WithoutReplayMemo, a generated ID, so no window):
	// no KEYS[5], and the events stream comes right after the wake list.
	enqueueOp, enqueueEvOp = twin("enqueue", enqueueSrc, []*keys.Template{jobsKey, priorityKey, statsKey, wakeKey, replyKey},
		call.Uses(enqueueLib), call.Shared(), call.Durable())
	enqueueBareOp, enqueueBareEvOp = twin("enqueue", enqueueSrc, []*keys.Template{jobsKey, priorityKey, statsKey, wakeKey},
		call.Uses(enqueueLib), call.Shared(), call.Durable())
)

// EnqueueOption tunes one Enqueue (or one Item of EnqueueBatch). Without
// any: a generated ID, Normal priority, ready now, the queue's default
// retries, no uniqueness window.
type EnqueueOption func(*enqueueConfig)

type enqueueConfig struct {
	id         string
	idSet      bool // WithID was given: id is the caller's, even if empty
	priority   Priority
	delay      time.Duration
	processAt  time.Time
	maxRetries int // -1: the queue's default
	unique     time.Duration
	timeout    time.Duration
	headers    map[string]string
	group      string
}

// Bounds of a job's envelope extras.
const (
	// maxTimeout bounds WithTimeout.
	maxTimeout = maxLease
	// maxHeaders bounds the entries of WithHeaders.
	maxHeaders = 64
	// maxHeaderBytes bounds the total length of WithHeaders' names and
	// values.
	maxHeaderBytes = 8 << 10
)

// WithTimeout gives the job its own time limit (1ms to 24h, the longest lease): Run
// runs its handler with a context that ends d after the handler starts
// (context.DeadlineExceeded); a handler that returns an error then counts
// a failed attempt, as any error does. It is stored in the job's envelope
// ("timeout_ms") and shown as Job.Timeout.
//
// Default: none. Range: 1ms to 24h.
func WithTimeout(d time.Duration) EnqueueOption { return func(c *enqueueConfig) { c.timeout = d } }

// WithHeaders stores h in the job's envelope ("headers"), for middleware
// and tracing: Job.Headers returns it to the handler (at most 64
// entries of non-empty names, 8 KiB in all, else ErrInvalid).
// The map is copied; several WithHeaders add up, a later value winning.
//
// Default: none.
func WithHeaders(h map[string]string) EnqueueOption {
	return func(c *enqueueConfig) {
		if len(h) == 0 {
			return
		}
		if c.headers == nil {
			c.headers = make(map[string]string, len(h))
		}
		for k, v := range h {
			c.headers[k] = v
		}
	}
}

// checkHeaders bounds a job's headers.
func checkHeaders(op string, h map[string]string) error {
	if len(h) > maxHeaders {
		return pkg.Invalidf(op, "%d headers, at most %d", len(h), maxHeaders)
	}
	n := 0
	for k, v := range h {
		if k == "" {
			return pkg.Invalidf(op, "empty header name")
		}
		n += len(k) + len(v)
	}
	if n > maxHeaderBytes {
		return pkg.Invalidf(op, "headers of %d bytes, at most %d", n, maxHeaderBytes)
	}
	return nil
}

// maxGroupLen bounds the length of a group name (WithGroup).
const maxGroupLen = 128

// WithGroup puts the job in group g (a tenant, a customer, a resource):
// the queue's group limits (WithGroupLimits, WithGroupLimit) then cap how
// many jobs of g run at once and how many start per period, across every
// consumer, and a group at its limit is skipped, not waited for. g is 1
// to 128 bytes of ASCII letters, digits, '.', '_' and '-' (it
// names the group's keys), else ErrInvalid. It is stored in the job's
// envelope ("group") and shown as Job.Group.
//
// Default: no group.
func WithGroup(g string) EnqueueOption { return func(c *enqueueConfig) { c.group = g } }

// validGroup reports whether g is a group name WithGroup accepts.
func validGroup(g string) bool {
	if g == "" || len(g) > maxGroupLen {
		return false
	}
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// WithID sets the job ID (default: a random UUID). While a job with this
// ID is live (pending, scheduled, in flight) another Enqueue of it is
// refused with ErrDuplicate. It must be a valid key segment: non-empty
// UTF-8 of at most 1,024 bytes, else ErrInvalid: an empty ID
// (an idempotency key that came out empty) is refused, not replaced by a
// random one, so that deduplication is never lost silently.
//
// Default: a random UUID.
func WithID(id string) EnqueueOption {
	return func(c *enqueueConfig) { c.id, c.idSet = id, true }
}

// WithPriority sets the job's priority: High, Normal (the default) or Low.
//
// Default: Normal.
func WithPriority(p Priority) EnqueueOption { return func(c *enqueueConfig) { c.priority = p } }

// WithDelay makes the job ready d after enqueue (server clock): 0 to
// 366 days, else ErrInvalid.
//
// Default: 0. Range: 0 to 8784h.
func WithDelay(d time.Duration) EnqueueOption { return func(c *enqueueConfig) { c.delay = d } }

// WithProcessAt makes the job ready at t (if later than its delay); a time
// in the past means ready now. A t further than 366 days from now is
// ErrInvalid.
//
// Default: now.
func WithProcessAt(t time.Time) EnqueueOption { return func(c *enqueueConfig) { c.processAt = t } }

// WithJobMaxRetries sets the retries after the first attempt for this job
// (0 to 100,000; 0 means one attempt only), instead of the
// queue's default (WithMaxRetries).
//
// Default: the queue's WithMaxRetries. Range: 0 to 100000.
func WithJobMaxRetries(n int) EnqueueOption { return func(c *enqueueConfig) { c.maxRetries = n } }

// WithUnique refuses another enqueue of the same ID for d after this one
// (1ms to 366 days), even once the job is done (ErrDuplicate). It needs
// WithID.
//
// Default: off. Range: 1ms to 8784h.
func WithUnique(d time.Duration) EnqueueOption { return func(c *enqueueConfig) { c.unique = d } }

// clockSlack is how far the server clock may run behind the producer's
// before the script itself refuses a process-at the producer accepted.
const clockSlack = 24 * time.Hour

// prepared is one checked, encoded enqueue request, with its reply memo
// (KEYS[5], but for the bare op): a resend by go-redis reports the first
// outcome.
type prepared struct {
	id   string
	op   *call.Op
	keys []string
	args []any
}

func (q *Queue[T]) prepare(op string, payload T, opts []EnqueueOption) (prepared, error) {
	c := enqueueConfig{maxRetries: -1}
	for _, f := range opts {
		f(&c)
	}
	switch {
	case c.idSet && c.id == "":
		return prepared{}, pkg.Invalidf(op, "empty job ID (WithID)")
	case c.delay < 0 || c.delay > maxDelay:
		return prepared{}, pkg.Invalidf(op, "delay %v outside [0, %v]", c.delay, maxDelay)
	case c.unique < 0 || c.unique > maxDelay:
		return prepared{}, pkg.Invalidf(op, "uniqueness window %v outside [0, %v]", c.unique, maxDelay)
	case !c.processAt.IsZero() && c.processAt.After(time.Now().Add(maxDelay)):
		return prepared{}, pkg.Invalidf(op, "process-at %v is more than %v ahead", c.processAt, maxDelay)
	case c.unique > 0 && c.id == "":
		return prepared{}, pkg.Invalidf(op, "a uniqueness window needs an ID")
	case c.unique > 0 && c.unique < time.Millisecond:
		return prepared{}, pkg.Invalidf(op, "uniqueness window %v under 1ms", c.unique)
	case c.maxRetries < -1 || c.maxRetries > maxRetries:
		return prepared{}, pkg.Invalidf(op, "max retries %d outside [0, %d]", c.maxRetries, maxRetries)
	case !c.priority.valid():
		return prepared{}, pkg.Invalidf(op, "priority %d", int(c.priority))
	case c.timeout < 0 || c.timeout > maxTimeout || (c.timeout > 0 && c.timeout < time.Millisecond):
		return prepared{}, pkg.Invalidf(op, "timeout %v outside [1ms, %v]", c.timeout, maxTimeout)
	}
	if err := checkHeaders(op, c.headers); err != nil {
		return prepared{}, err
	}
	if c.group != "" && !validGroup(c.group) {
		return prepared{}, pkg.Invalidf(op, "group %.64q: want 1 to %d ASCII letters, digits, '.', '_' or '-'", c.group, maxGroupLen)
	}
	retries := c.maxRetries
	if retries < 0 {
		retries = q.o.maxRetries
	}
	id, uk := c.id, ""
	if id == "" {
		id = newID()
	} else {
		// The caller's ID must be a key segment (it names the unique key).
		k, err := q.jobKey(op, id)
		if err != nil {
			return prepared{}, err
		}
		uk = k
	}
	body, err := q.encode(op, id, payload, c.priority, time.Now(), retries, jobExt{headers: c.headers, timeout: c.timeout, group: c.group})
	if err != nil {
		return prepared{}, err
	}
	var at int64 // 0: no process-at (a time before 1970 is in the past too)
	if !c.processAt.IsZero() {
		at = max(c.processAt.UnixMilli(), 0)
	}
	ks := make([]string, 4, 7)
	ks[0], ks[1], ks[2], ks[3] = q.jobs, q.levelKey(c.priority), q.stats, q.wake
	// A generated ID (so no window) WithoutReplayMemo: the job itself
	// tells a resend, and there is no memo key.
	bare := q.o.noMemo && uk == ""
	script := q.pick(enqueueOp, enqueueEvOp)
	if bare {
		script = q.pick(enqueueBareOp, enqueueBareEvOp)
	} else {
		ks = append(ks, q.request())
	}
	if c.unique > 0 {
		ks = append(ks, uk)
	} else if q.o.events > 0 && !bare {
		ks = append(ks, q.events) // a placeholder: no window, not read
	}
	args := []any{id, body}
	if c.delay > 0 || at > 0 || c.unique > 0 || q.o.events > 0 {
		args = []any{id, body, unit.MsCeil(c.delay), at, unit.MsCeil(c.unique)}
	}
	if q.o.events > 0 {
		ks = append(ks, q.events)
		args = append(args, q.o.events)
	}
	return prepared{id: id, op: script, keys: ks, args: args}, nil
}

// Enqueue adds one job and returns its ID. It is one round trip (one
// script): the job is written whole or not at all. A live job with the
// same ID, or one enqueued within its WithUnique window, gives
// ErrDuplicate. Bad options give ErrInvalid, an oversize job ErrTooLarge;
// nothing is written then. A request that go-redis resends after its reply
// was lost reports the first outcome: a job enqueued by the first send is
// reported enqueued, never ErrDuplicate. A network error or a timeout is
// returned as such: the job may or may not have been enqueued (retry with
// the same WithID to find out: ErrDuplicate then means it was). With
// WithDurability, an enqueue that fewer replicas acknowledged than asked
// returns the ID with an error matching ErrNotDurable: the job is
// enqueued.
func (q *Queue[T]) Enqueue(ctx context.Context, payload T, opts ...EnqueueOption) (string, error) {
	const op = "enqueue"
	p, err := q.prepare(op, payload, opts)
	if err != nil {
		return "", err
	}
	rep, err := q.run.Run(ctx, p.op, p.keys, p.args...)
	nd, err := call.NotDurable(err)
	if err := q.enqueued(p, rep, err); err != nil {
		return "", err
	}
	return p.id, nd
}

// enqueued turns an enqueue reply into the caller's error.
func (q *Queue[T]) enqueued(p prepared, rep call.Reply, err error) error {
	if err != nil {
		return err
	}
	if rep.Status == call.Conflict {
		why, _ := rep.OptStr(0)
		return pkg.Fail("enqueue", q.jobs, ErrDuplicate, fmt.Errorf("job %q (%s)", p.id, why))
	}
	return nil
}
