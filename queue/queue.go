package queue

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Queue is one named job queue holding payloads of type T. It is safe for
// concurrent use; any number of producers and consumers, in any number of
// processes, may share a queue name.
type Queue[T any] struct {
	run    *call.Runner
	name   string
	o      options
	isJSON bool // payloads are JSON: decode a job in one pass
	// keys of this queue; all share the hash tag {name}
	jobs, state, active, stats, dead, wake, inbox, schedules string
	execs                                                    string // the executions list (Handoff); wake and inbox, see New
	progress, done, doneAt, cancel, cancels, events, flows   string
	errors                                                   string
	levels                                                   [3]string // high, normal, low
	all                                                      []string  // dequeue and settle KEYS, less inbox and memo
	live                                                     []string  // list, delete and purge KEYS, less memo
	replyPre                                                 string    // a reply memo key, less its request ID
	dailyPre                                                 string    // a day's counts key, less its day (yyyy-mm-dd)
	limits                                                   string    // the dequeue script's limits (limitSpec), "" for none
	limitKeys                                                []string  // with limits: the rate key and the group keys' prefixes
	middleware                                               []func(Handler[T]) Handler[T]
}

// reserved queue names: with hash tags off, queue:{name}:... keys of a
// queue called "stats" or "dlq" could be another queue's
// queue:stats:{name} or queue:dlq:{name}.
var reserved = map[string]bool{"stats": true, "dlq": true}

// New returns the queue called name over rdb. The name is the hash tag of
// every key of the queue, so all of a queue's scripts run on one cluster
// slot. It fails with ErrInvalid for a nil client, a go-redis client
// without ContextTimeoutEnabled, a bad option, an empty name, or "stats"
// or "dlq" (reserved: with hash tags off, queue:stats:x would be both the
// stats of queue x and a key of a queue called "stats"); a name that
// cannot be a key segment also matches keys.ErrInvalid. New does no
// I/O.
func New[T any](rdb redis.UniversalClient, name string, opts ...Option) (*Queue[T], error) {
	const op = "new"
	o, err := call.Configure(pkg, op, rdb, defaultOptions(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if err := o.durability.Check(pkg, op, "WithDurability", rdb); err != nil {
		return nil, err
	}
	if name == "" || reserved[name] {
		return nil, pkg.Invalidf(op, "queue name %q (empty or reserved)", name)
	}
	var mw []func(Handler[T]) Handler[T]
	for i, m := range o.middleware {
		f, ok := m.(func(Handler[T]) Handler[T])
		if !ok || f == nil {
			return nil, pkg.Invalidf(op, "middleware %d is %T, want a non-nil func(Handler[T]) Handler[T] of the queue's payload type", i, m)
		}
		mw = append(mw, f)
	}
	q := &Queue[T]{run: call.NewRunner(rdb, o.pipelines), name: name, o: o, middleware: mw}
	q.run.SetDurability(o.durability)
	_, q.isJSON = o.codec.(codec.JSON)
	build := func(t *keys.Template, args ...string) string {
		if err != nil {
			return ""
		}
		var k string
		k, err = pkg.Key(op, t, o.ns, args...)
		return k
	}
	q.jobs = build(jobsKey, name)
	q.state = build(stateKey, name)
	q.active = build(activeKey, name)
	q.stats = build(statsKey, name)
	q.dead = build(deadKey, name)
	q.wake = build(wakeKey, name)
	q.inbox = build(inboxKey, name)
	q.execs = q.wake
	if o.seed {
		// The token goes to the inbox, and the executions list, which
		// consumers of the AI platform pop, takes the inbox's place in
		// the dequeue script: every dequeue adopts what it holds (and
		// what a consumer without the option left in the inbox).
		q.wake, q.inbox = q.inbox, q.execs
	}
	q.schedules = build(scheduleKey, name)
	q.progress = build(progressKey, name)
	q.done = build(doneKey, name)
	q.doneAt = build(doneAtKey, name)
	q.cancel = build(cancelKey, name)
	q.cancels = build(cancelChannel, name)
	q.events = build(eventsKey, name)
	q.flows = build(flowsKey, name)
	q.errors = build(errorsKey, name)
	for i, l := range []Priority{High, Normal, Low} {
		q.levels[i] = build(priorityKey, name, l.String())
	}
	// Request IDs are hex and group names letters, digits, '.', '_' and
	// '-' (validGroup), which no key escapes: a memo key is its prefix and
	// the ID, and the dequeue script makes a group's keys from their
	// prefixes, passed in KEYS, and the group it reads in a job.
	prefix := func(t *keys.Template) string {
		if err != nil {
			return ""
		}
		var p string
		if p, err = t.Prefix(o.ns, name); err != nil {
			err = pkg.Fail(op, "", nil, err)
		}
		return p
	}
	q.replyPre = prefix(replyKey)
	q.dailyPre = prefix(dailyKey)
	if q.limits = o.limitSpec(); q.limits != "" {
		q.limitKeys = []string{build(rateKey, name), prefix(groupActiveKey), prefix(groupRateKey)}
	}
	if err != nil {
		return nil, err
	}
	q.all = []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.stats, q.dead, q.wake}
	q.live = []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.dead}
	return q, nil
}

// ev appends the events stream to ks when the queue emits events.
func (q *Queue[T]) ev(ks []string) []string {
	if q.o.events == 0 {
		return ks
	}
	return append(ks, q.events)
}

// twin declares an operation and its twin that also takes the events
// stream as its last key (the same script; WithEvents).
func twin(name, body string, tmpl []*keys.Template, opts ...call.OpOption) (*call.Op, *call.Op) {
	return pkg.Declare(name, body, tmpl, opts...), pkg.Declare(name, body, with(tmpl, eventsKey), opts...)
}

// pick returns the twin to run.
func (q *Queue[T]) pick(op, evOp *call.Op) *call.Op {
	if q.o.events == 0 {
		return op
	}
	return evOp
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.name }

// Lease returns the queue's visibility timeout.
func (q *Queue[T]) Lease() time.Duration { return q.o.lease }

func (q *Queue[T]) levelKey(p Priority) string {
	switch p {
	case High:
		return q.levels[0]
	case Low:
		return q.levels[2]
	}
	return q.levels[1]
}

// jobKey validates a job ID given by the caller: it must be a valid key
// segment (it names the job's uniqueness key).
func (q *Queue[T]) jobKey(op, id string) (string, error) {
	return pkg.Key(op, uniqueKey, q.o.ns, q.name, id)
}

// liveKeys are the KEYS of list (delete and purge add a reply memo).
var liveKeys = []*keys.Template{jobsKey, stateKey, priorityKey, priorityKey, priorityKey, activeKey, deadKey}

// allKeys are the KEYS of settle, less its reply memo.
var allKeys = []*keys.Template{jobsKey, stateKey, priorityKey, priorityKey, priorityKey, activeKey, statsKey, deadKey, wakeKey}

// with returns ts followed by more, in a new slice.
func with[E any](ts []E, more ...E) []E {
	return append(append(make([]E, 0, len(ts)+len(more)), ts...), more...)
}

// request returns the reply memo key of a new write request: random, made
// before the first send, so that a resend by go-redis (the same command)
// finds the first run's outcome.
func (q *Queue[T]) request() string {
	var b [16]byte
	var h [32]byte
	_, _ = rand.Read(b[:])
	hex.Encode(h[:], b[:])
	var k strings.Builder
	k.Grow(len(q.replyPre) + len(h))
	k.WriteString(q.replyPre)
	k.Write(h[:])
	return k.String()
}

func msTime(v int64) time.Time { return time.UnixMilli(v) }
