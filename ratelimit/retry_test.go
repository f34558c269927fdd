package ratelimit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

// proxied builds a limiter on a client of its own that reaches the server
// through a fault proxy; go-redis keeps its default retries, so a reply the
// proxy loses is answered by a resend.
func proxied(t *testing.T, e *harness.Env, p ratelimit.Policy, opts ...ratelimit.Option) (*ratelimit.Limiter, *harness.Proxy) {
	t.Helper()
	startClock(e)
	c, px := e.ProxyClient(nil)
	l, err := ratelimit.New(c, p, append([]ratelimit.Option{ratelimit.WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return l, px
}

// count returns what the state at key says was admitted: a counter's
// value, or a sorted set's size.
func count(t *testing.T, e *harness.Env, key string) int64 {
	t.Helper()
	ctx := e.Ctx()
	typ, err := e.Client.Type(ctx, key).Result()
	require.NoError(t, err)
	switch typ {
	case "zset":
		n, err := e.Client.ZCard(ctx, key).Result()
		require.NoError(t, err)
		return n
	case "none":
		return 0
	}
	n, err := e.Client.Get(ctx, key).Int64()
	require.NoError(t, err)
	return n
}

// A check whose reply is lost after the server ran it is resent by
// go-redis. Where the state is a sliding log, the resend is recognised:
// the caller sees the first decision and the request is logged once. The
// policy's other rules count it once too (all or nothing).
func TestLostReplyOfSlidingCheckIsRecognised(t *testing.T) {
	for _, m := range pipelining {
		for name, pol := range map[string]ratelimit.Policy{
			"lean": one(ratelimit.Sliding, ratelimit.PerHour(3)),
			"policy": {
				{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(3)},
				{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(50)},
				{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 10, Period: time.Hour, Burst: 9}},
			},
		} {
			t.Run(name+"/"+m.name, func(t *testing.T) {
				e := harness.New(t)
				ctx := e.Ctx()
				l, p := proxied(t, e, pol, m.opt)
				id := "lost-" + name
				// lose every reply: each call's first send runs, then its
				// resend must give the same outcome
				for i, want := range []struct {
					allowed   bool
					remaining int
				}{{true, 2}, {true, 1}, {true, 0}, {false, 0}, {false, 0}} {
					p.LoseReply("{" + id + "}")
					r, err := l.Allow(ctx, id)
					require.NoError(t, err, "call %d", i)
					require.EqualValues(t, i+1, p.Lost(), "the reply of call %d was lost", i)
					require.Equal(t, want.allowed, r.Allowed, "call %d: %+v", i, r)
					require.Equal(t, want.remaining, r.Remaining, "call %d: %+v", i, r)
					require.Zero(t, r.Rule, "the log binds")
				}
				require.EqualValues(t, 3, count(t, e, e.NS.Prefix+"sliding_limit:{"+id+"}:hour"), "logged once each")
				if len(pol) > 1 {
					require.EqualValues(t, 3, count(t, e, e.NS.Prefix+"ratelimit:api:{"+id+"}:hour"), "counted once each")
					r, err := l.Peek(ctx, id)
					require.NoError(t, err)
					require.Equal(t, 0, r.Remaining)
				}
				// AllowN: every member of the call is recognised.
				id2 := id + "-n"
				p.LoseReply("{" + id2 + "}")
				r, err := l.AllowN(ctx, id2, 2)
				require.NoError(t, err)
				require.True(t, r.Allowed)
				require.Equal(t, 1, r.Remaining)
				require.EqualValues(t, 2, count(t, e, e.NS.Prefix+"sliding_limit:{"+id2+"}:hour"))
				e.RequireTTLs(nil)
			})
		}
	}
}

// FixedWindow, SlidingCounter and GCRA cannot tell a resend from a new
// request (see the package doc, Retries): a lost reply may count a request
// twice, and the caller may see a refusal for a request counted once, but
// never is more admitted than the limit allows, and the state never counts
// less than the callers were told was admitted.
func TestLostReplyOfCounterCheckIsOnlyStricter(t *testing.T) {
	const limit = 5
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingCounter, ratelimit.GCRA} {
		for _, general := range []bool{false, true} {
			name := a.String() + "/lean"
			var opts []ratelimit.Option
			if general {
				name = a.String() + "/general"
				opts = append(opts, ratelimit.WithRuntimeConfig())
			}
			t.Run(name, func(t *testing.T) {
				e := harness.New(t)
				ctx := e.Ctx()
				l, p := proxied(t, e, one(a, ratelimit.PerHour(limit)), opts...)
				id := "stricter-" + name
				admitted := 0
				for i := 0; i < 2*limit; i++ {
					if i%2 == 0 {
						p.LoseReply("{" + id + "}")
					}
					r, err := l.Allow(ctx, id)
					require.NoError(t, err, "call %d", i)
					if r.Allowed {
						admitted++
					}
				}
				require.EqualValues(t, limit, p.Lost())
				require.LessOrEqual(t, admitted, limit, "never more than the limit")
				require.Positive(t, admitted)
				r, err := l.Peek(ctx, id)
				require.NoError(t, err)
				require.LessOrEqual(t, r.Remaining, limit-admitted, "the state counts at least what was admitted")
				if a == ratelimit.FixedWindow {
					require.GreaterOrEqual(t, count(t, e, e.NS.Prefix+"ratelimit:api:{"+id+"}:hour"), int64(admitted))
				}
				t.Logf("%s: %d admitted of %d, %d lost replies, %d left", name, admitted, 2*limit, p.Lost(), r.Remaining)
			})
		}
	}
}

// A resent pipeline replays every check of the batch. 40 callers at a time
// on one identifier, five rounds, one lost reply per round (of whatever
// goes out first: a lone check or a whole batch): a sliding log still
// admits exactly its limit and reports exactly what it logged; counters
// never admit more than their limit and count at least what they admitted.
func TestLostPipelineReplyNeverOverAdmits(t *testing.T) {
	const limit, rounds, callers = 50, 5, 40
	for _, a := range []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.FixedWindow, ratelimit.SlidingCounter, ratelimit.GCRA} {
		for _, lean := range []bool{true, false} {
			name := a.String() + "/policy"
			pol := ratelimit.Policy{
				{Algorithm: a, Limit: ratelimit.PerHour(limit)},
				{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(1000)},
			}
			if lean {
				name, pol = a.String()+"/lean", pol[:1]
			}
			t.Run(name, func(t *testing.T) {
				e := harness.New(t)
				ctx := e.Ctx()
				l, p := proxied(t, e, pol)
				admitted := hammerRounds(t, p, e.NS.Prefix, rounds, callers, func() (ratelimit.Result, error) { return l.Allow(ctx, "hot") })
				r, err := l.Peek(ctx, "hot")
				require.NoError(t, err)
				t.Logf("%s: %d admitted of %d, %d left", name, admitted, rounds*callers, r.Remaining)
				require.LessOrEqual(t, admitted, limit)
				require.LessOrEqual(t, r.Remaining, max(limit-admitted, 0), "the state counts at least what was admitted")
				if !lean {
					require.GreaterOrEqual(t, count(t, e, e.NS.Prefix+"ratelimit:api:{hot}:day"), int64(admitted))
				}
				if a == ratelimit.Sliding {
					require.Equal(t, limit, admitted, "a log tells every resend apart")
					require.EqualValues(t, limit, count(t, e, e.NS.Prefix+"sliding_limit:{hot}:hour"))
					if !lean {
						require.EqualValues(t, limit, count(t, e, e.NS.Prefix+"ratelimit:api:{hot}:day"), "all or nothing: the other rule counted each once")
					}
				}
			})
		}
	}
}

// hammerRounds runs rounds of callers concurrent calls of f, losing one
// reply per round (the first request whose bytes contain match), and
// returns how many calls were admitted.
func hammerRounds(t *testing.T, p *harness.Proxy, match string, rounds, callers int, f func() (ratelimit.Result, error)) int {
	t.Helper()
	var mu sync.Mutex
	admitted := 0
	for round := 0; round < rounds; round++ {
		p.LoseReply(match)
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for w := 0; w < callers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := f()
				if err != nil {
					errs <- err
					return
				}
				if r.Allowed {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, round+1, p.Lost(), "round %d lost one reply", round)
	}
	return admitted
}

// A Block whose reply is lost reports success, and its resend finds its own
// request ID: the block is not set again (it still ends d after the first
// send), as the TTL shows on a real server, whose clock runs while the
// client waits before resending.
func TestLostReplyOfBlock(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	startClock(e)
	c, p := e.ProxyClient(&redis.Options{MinRetryBackoff: 300 * time.Millisecond, MaxRetryBackoff: 300 * time.Millisecond})
	l, err := ratelimit.New(c, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	p.LoseReply("{blk}")
	start := time.Now()
	require.NoError(t, l.Block(ctx, "blk", time.Hour))
	require.EqualValues(t, 1, p.Lost())
	ttl, err := e.Client.PTTL(ctx, e.NS.Prefix+"ratelimit:block:{blk}").Result()
	require.NoError(t, err)
	require.LessOrEqual(t, ttl, time.Hour)
	if e.Real() {
		require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the resend waited")
		require.LessOrEqual(t, ttl, time.Hour-250*time.Millisecond, "set by the first send only")
	}
	r, err := l.Allow(ctx, "blk")
	require.NoError(t, err)
	require.False(t, r.Allowed)
}

// SetConfig and Reset whose replies are lost report success and leave the
// state their first send made.
func TestLostReplyOfConfigAndReset(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l, p := proxied(t, e, seed001, ratelimit.WithRuntimeConfig())
	cfg := ratelimit.Config{PerHour: 7, Burst: 3}
	p.LoseReply("{cfg}")
	require.NoError(t, l.SetConfig(ctx, "cfg", cfg))
	got, err := l.Config(ctx, "cfg")
	require.NoError(t, err)
	require.Equal(t, cfg, got)

	for i := 0; i < 3; i++ {
		_, err := l.Allow(ctx, "cfg")
		require.NoError(t, err)
	}
	p.LoseReply("{cfg}")
	require.NoError(t, l.Reset(ctx, "cfg"))
	p.LoseReply("{cfg}")
	require.NoError(t, l.DeleteConfig(ctx, "cfg"))
	require.EqualValues(t, 3, p.Lost())
	require.Empty(t, e.Keys(), "state, block and config gone")
}

// A resend that comes after another admission of the same identifier is
// still recognised by a sliding log (its members name the request), which
// a record of the last request only could not do.
func TestResendAfterOtherAdmissionsIsRecognised(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	startClock(e)
	// The resend waits 300 ms; meanwhile another client admits requests.
	c, p := e.ProxyClient(&redis.Options{MinRetryBackoff: 300 * time.Millisecond, MaxRetryBackoff: 300 * time.Millisecond})
	pol := one(ratelimit.Sliding, ratelimit.PerHour(10))
	slow, err := ratelimit.New(c, pol, ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	fast := newLimiter(t, e, pol)
	p.LoseReply("{busy}")
	done := make(chan ratelimit.Result)
	go func() {
		r, err := slow.Allow(ctx, "busy")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	harness.WaitFor(t, "the lost reply", func() bool { return p.Lost() == 1 })
	others := 0
	for i := 0; i < 4; i++ {
		r, err := fast.Allow(ctx, "busy")
		require.NoError(t, err)
		if r.Allowed {
			others++
		}
	}
	r := <-done
	require.True(t, r.Allowed)
	require.Equal(t, 4, others)
	require.EqualValues(t, 5, count(t, e, e.NS.Prefix+"sliding_limit:{busy}:hour"), "1 + 4, the resend counted once")
	// as things stand at the resend: its own entry and the others' in
	require.LessOrEqual(t, r.Remaining, 9)
}
