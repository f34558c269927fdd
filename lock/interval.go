package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed interval_claim.lua
	intervalClaimSrc    string
	intervalClaimScript = script.New(fenceSrc, intervalClaimSrc)
)

// CronResource is the resource type of the lease an Interval holds while
// its job runs (see WithLease): lock:cron:{job_name}.
const CronResource = "cron"

// Interval guards a cron-like job so that, across any number of instances
// with skewed clocks, it runs at most once per interval. Its state is seed
// 004's cron:last-run:{job_name}: the start of the last run as Unix
// milliseconds in decimal, with no TTL (one key per job). An Interval is
// safe for concurrent use.
type Interval struct {
	c     *Client
	job   string
	every time.Duration
	lease time.Duration
	key   string
	keys  []string // last run, lease lock, lease fence: one slot
}

// IntervalOption configures an Interval.
type IntervalOption func(*Interval)

// WithLease makes a claim also take the lease lock:cron:{job_name} for ttl
// (at most the client's max TTL), and makes Claim refuse while that lease
// is held, so a slow run never overlaps the next one even when it outlasts
// the interval, as long as the lease is held: Do refreshes it with a
// watchdog while the job runs and releases it at the end; a caller of Claim
// must refresh Run.Lease itself for runs longer than ttl, and release it.
func WithLease(ttl time.Duration) IntervalOption { return func(g *Interval) { g.lease = ttl } }

// Interval returns the guard of job, to run at most once per every. It
// fails with ErrInvalid for an empty or oversize job name, every below 1ms
// or a bad lease; it does not contact Redis.
func (c *Client) Interval(job string, every time.Duration, opts ...IntervalOption) (*Interval, error) {
	g := &Interval{c: c, job: job, every: every}
	for _, o := range opts {
		o(g)
	}
	if every < time.Millisecond {
		return nil, fmt.Errorf("%w: interval %v below 1ms", ErrInvalid, every)
	}
	if g.lease != 0 {
		if err := c.checkTTL("lease", g.lease); err != nil {
			return nil, err
		}
	}
	var err error
	if g.key, err = buildKey(cronKey, c.ns, job); err != nil {
		return nil, err
	}
	r, err := c.resource(CronResource, job)
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
	// Lease is the held run lease when Claimed under WithLease, else nil.
	Lease *Lock
}

// Claim claims the job's run now if at least the interval has passed since
// its last run, in one round trip: a Lua script compares against server
// TIME and writes the new last run in the same step, so exactly one of any
// number of concurrent callers wins (the seed's GET-compare-SET from the
// application races and trusts app clocks). Under WithLease a claim also
// takes the run lease and is refused while a previous run holds it. A
// last-run value that is not a number is an error matching keys.ErrCorrupt
// that names the key. A claim that fails on the wire may still have been
// recorded (the interval's run is then lost, never doubled); its lease, if
// any, is given back in the background.
func (g *Interval) Claim(ctx context.Context) (Run, error) {
	owner := ""
	if g.lease > 0 {
		owner = g.c.newOwner()
	}
	start := time.Now()
	v, err := intervalClaimScript.Run(ctx, g.c.rdb, g.keys, ms(g.every), ms(g.lease), owner, g.c.fenceArg).Result()
	if err == nil {
		var res [4]int64
		if res, err = ints(v, 4); err == nil {
			return g.run(res, owner, start)
		}
	}
	if g.lease > 0 {
		// The claim may have run with its reply lost: give its lease back
		// so that it does not hold off the next run (see Client.Acquire).
		g.c.abandon(ctx, g.keys[1], nil, owner)
	}
	return Run{}, fmt.Errorf("lock: claim %q: %w", g.key, err)
}

// run turns the claim script's reply into a Run.
func (g *Interval) run(res [4]int64, owner string, start time.Time) (Run, error) {
	switch res[0] {
	case -1:
		return Run{}, fmt.Errorf("lock: claim: %w", keys.Corrupt(g.key, errors.New("last run is not Unix milliseconds")))
	case -2:
		return Run{}, fmt.Errorf("lock: claim: %w", keys.Corrupt(g.keys[2], errors.New("fence is not a number")))
	}
	run := Run{Claimed: res[0] == 1, At: time.UnixMilli(res[1])}
	if res[2] >= 0 {
		run.Previous = time.UnixMilli(res[2])
	}
	if run.Claimed {
		run.Next = run.At.Add(g.every)
		if g.lease > 0 {
			run.Lease = newLock(g.c, g.keys[1:2:2], owner, res[3], g.lease, start, false)
		}
		return run, nil
	}
	run.Next = run.At
	if res[2] >= 0 {
		run.Next = run.Previous.Add(g.every)
	}
	if held := run.At.Add(time.Duration(res[3]) * time.Millisecond); held.After(run.Next) {
		run.Next = held
	}
	return run, nil
}

// Do claims the run and, if this caller won it, calls fn. Under WithLease,
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
// never ran: one GET. A value that is not a number is an error matching
// keys.ErrCorrupt that names the key.
func (g *Interval) LastRun(ctx context.Context) (time.Time, error) {
	s, err := g.c.rdb.Get(ctx, g.key).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("lock: last run %q: %w", g.key, err)
	}
	n, err := parseMillis(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("lock: last run: %w", keys.Corrupt(g.key, err))
	}
	return time.UnixMilli(n), nil
}

// parseMillis accepts what interval_claim.lua accepts: 1 to 15 decimal
// digits.
func parseMillis(s string) (int64, error) {
	if len(s) == 0 || len(s) > 15 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("last run %q is not Unix milliseconds", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// Job returns the job name.
func (g *Interval) Job() string { return g.job }

// Key returns the job's last-run key (namespace included).
func (g *Interval) Key() string { return g.key }
