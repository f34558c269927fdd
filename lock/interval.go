package lock

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed interval_claim.lua
	intervalClaimSrc string
	//go:embed last_run.lua
	lastRunSrc string

	intervalClaimOp = pkg.Declare("claim", intervalClaimSrc, []*keys.Template{cronKey, lockKey, fenceKey}, call.Durable(),
		call.Uses(libSrc), call.On(call.Conflict, ErrNotObtained), call.Shared())
	lastRunOp = pkg.Declare("last run", lastRunSrc, []*keys.Template{cronKey}, call.Shared())
)

// CronResource is the resource type of the lease an Interval holds while
// its job runs (see the lease of Client.Interval): lock:cron:{job_name}.
const CronResource = "cron"

// Interval guards a cron-like job so that, across any number of instances
// with skewed clocks, it runs at most once per interval. Its state is the
// chat app's cron:last-run:{job_name} (docs/chat-app.md): the start of
// the last run as Unix milliseconds in decimal, with no TTL (one key per
// job). An Interval is safe for concurrent use.
type Interval struct {
	c     *Client
	job   string
	every time.Duration
	lease time.Duration
	key   string
	keys  []string // last run, lease lock, lease fence: one slot
}

// Interval returns the guard of job, to run at most once per every.
//
// A lease of 0 takes no run lease. A lease above 0 makes a claim also take
// the lease lock:cron:{job_name} for that long (at most the client's max
// TTL), and makes Claim refuse while that lease is held, so a slow run
// never overlaps the next one even when it outlasts the interval, as long
// as the lease is held: Do refreshes it with a watchdog while the job runs
// and releases it at the end; a caller of Claim must refresh Run.Lease
// itself for runs longer than the lease, and release it.
//
// It fails with ErrInvalid for an empty or oversize job name, every
// outside [1ms, 366 days] or a lease outside 0 or [1ms, max TTL]; it does
// not contact Redis.
func (c *Client) Interval(job string, every, lease time.Duration) (*Interval, error) {
	const op = "interval"
	g := &Interval{c: c, job: job, every: every, lease: lease}
	if every < time.Millisecond || every > maxInterval {
		return nil, pkg.Invalidf(op, "interval %v outside [1ms, %v]", every, maxInterval)
	}
	if g.lease != 0 {
		if err := c.checkTTL(op, "lease", g.lease); err != nil {
			return nil, err
		}
	}
	var err error
	if g.key, err = pkg.Key(op, cronKey, c.opt.ns, job); err != nil {
		return nil, err
	}
	r, err := c.resource(op, CronResource, job)
	if err != nil {
		return nil, err
	}
	g.keys = []string{g.key, r.lock, r.fenc}
	return g, nil
}

// Run is the outcome of a Claim.
type Run struct {
	// Claimed reports whether this caller won the run and must do the job.
	Claimed bool
	// At is the server time of the claim (the new last run when Claimed).
	At time.Time
	// Previous is the last run before this claim; zero if the job never ran.
	Previous time.Time
	// Next is the earliest time the next run can be claimed (when not
	// Claimed; a held lease may delay it further).
	Next time.Time
	// Lease is the held run lease when Claimed with a lease, else nil.
	Lease *Lock
}

// Claim claims the job's run now if at least the interval has passed since
// its last run, in one round trip: a Lua script compares against server
// TIME and writes the new last run in the same step, so exactly one of any
// number of concurrent callers wins (the chat app's GET-compare-SET from
// the application races and trusts app clocks). With a lease a claim also
// takes the run lease and is refused while a previous run holds it. A
// last-run value that is not a number is an error matching keys.ErrCorrupt
// that names the key (so is one more than a day ahead of the server
// clock). A claim whose reply was lost and that go-redis sends again is
// recognised by its claim ID and reports the same claim. A claim that
// fails on the wire for good may still have been recorded (the interval's
// run is then lost, never doubled); its lease, if any, is given back in the
// background. With WithDurability, a claim recorded but acknowledged by
// fewer replicas than asked returns its Run with ErrNotDurable.
func (g *Interval) Claim(ctx context.Context) (Run, error) {
	owner := g.c.newOwner()
	start := g.c.now()
	rep, err := g.c.run.Run(ctx, intervalClaimOp, g.keys, unit.MsCeil(g.every), unit.MsCeil(g.lease), owner, g.c.fenceArg)
	nd, err := call.NotDurable(err)
	if err == nil || errors.Is(err, ErrNotObtained) {
		run := Run{Claimed: err == nil, At: time.UnixMilli(rep.Int(0))}
		prev, third := rep.Int(1), rep.Int(2)
		if rerr := rep.Err(); rerr == nil {
			return g.run(run, prev, third, owner, start), nd
		} else {
			err = rerr
		}
	}
	if g.lease > 0 && !errors.Is(err, keys.ErrCorrupt) {
		// The claim may have run with its reply lost: give its lease back
		// so that it does not hold off the next run (see Client.Acquire).
		g.c.abandon(ctx, g.keys[1], nil, owner)
	}
	return Run{}, err
}

// run completes a Run from the claim script's reply: the previous run (ms,
// or -1) and the fence token (when claimed) or the remaining lease (when
// not).
func (g *Interval) run(run Run, prev, third int64, owner string, start time.Time) Run {
	if prev >= 0 {
		run.Previous = time.UnixMilli(prev)
	}
	if run.Claimed {
		run.Next = run.At.Add(g.every)
		if g.lease > 0 {
			run.Lease = newLock(g.c, g.keys[1:2:2], owner, third, g.lease, start, lockOps)
		}
		return run
	}
	run.Next = run.At
	if prev >= 0 {
		run.Next = run.Previous.Add(g.every)
	}
	if held := run.At.Add(time.Duration(third) * time.Millisecond); held.After(run.Next) {
		run.Next = held
	}
	return run
}

// Do claims the run and, if this caller won it, calls fn. With a lease,
// fn's context is cancelled if the lease is lost, a watchdog refreshes the
// lease every third of its TTL while fn runs, and the lease is released
// when fn returns. It reports whether fn ran, and fn's error.
func (g *Interval) Do(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	run, err := g.Claim(ctx)
	if err != nil || !run.Claimed {
		return false, err
	}
	if run.Lease == nil {
		return true, fn(ctx)
	}
	l := run.Lease
	l.startWatchdog(-1)
	runCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	err = fn(runCtx)
	stop()
	cancel(nil)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	if rerr := l.Release(rctx); rerr != nil && err == nil && !errors.Is(rerr, ErrNotHeld) {
		err = rerr
	}
	return true, err
}

// LastRun returns the start of the job's last run, or the zero time if it
// never ran: one round trip. A value that Claim would not accept (not Unix
// milliseconds, or more than a day ahead of the server clock) is an error
// matching keys.ErrCorrupt that names the key.
func (g *Interval) LastRun(ctx context.Context) (time.Time, error) {
	rep, err := g.c.run.Run(ctx, lastRunOp, g.keys[:1])
	if err != nil {
		return time.Time{}, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil || n < 0 {
		return time.Time{}, err
	}
	return time.UnixMilli(n), nil
}

// Job returns the job name.
func (g *Interval) Job() string { return g.job }

// Key returns the job's last-run key (namespace included).
func (g *Interval) Key() string { return g.key }
