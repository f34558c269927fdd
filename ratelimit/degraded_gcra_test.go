package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The Go GCRA of degraded mode (one instance) and the Lua GCRA, in both
// the lean gcra.lua and allow.lua, decide the same on the same requests
// at the same times. The scripts run on a private miniredis, whose clock
// the test moves, so the test runs the same on every backend.
func TestDegradedGCRAMatchesLua(t *testing.T) {
	m := miniredis.RunT(t)
	now := time.Now().Truncate(time.Millisecond)
	m.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	pol := Policy{{Algorithm: GCRA, Limit: Limit{Rate: 10, Period: time.Second, Burst: 4}}}
	lean, err := New(rdb, pol, WithPipelining(0))
	if err != nil {
		t.Fatal(err)
	}
	general, err := New(rdb, pol, WithPipelining(0), WithRuntimeConfig())
	if err != nil {
		t.Fatal(err)
	}
	if lean.singleOp == nil || general.singleOp != nil {
		t.Fatal("want the lean script on one limiter and allow.lua on the other")
	}
	local := &degraded{l: lean, state: map[string][]time.Time{}}
	local.count.Store(1)

	// steps: wait, then a request of cost
	steps := []struct {
		wait time.Duration
		cost int
	}{
		{0, 1}, {0, 2}, {0, 1}, {0, 1}, {10 * time.Millisecond, 1}, {90 * time.Millisecond, 1},
		{0, 1}, {250 * time.Millisecond, 3}, {0, 1}, {time.Second, 4}, {0, 1}, {99 * time.Millisecond, 1},
		{time.Millisecond, 1}, {37 * time.Millisecond, 2}, {163 * time.Millisecond, 2}, {5 * time.Second, 5},
	}
	at := now
	var admitted, refused int
	for i, s := range steps {
		at = at.Add(s.wait)
		m.SetTime(at)
		want, _ := local.allowAt("u", s.cost, false, at)
		if want.Allowed {
			admitted++
		} else {
			refused++
		}
		for name, l := range map[string]*Limiter{"gcra.lua": lean, "allow.lua": general} {
			got, err := l.AllowN(ctx, "u-"+name, s.cost)
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed != want.Allowed || (got.Allowed && got.Remaining != want.Remaining) {
				t.Fatalf("step %d (cost %d at +%v): %s %+v, Go %+v", i, s.cost, at.Sub(now), name, got, want)
			}
			if d := got.RetryAfter - want.RetryAfter; !got.Allowed && got.RetryAfter != Never && (d < -time.Microsecond || d > time.Microsecond) {
				t.Fatalf("step %d: %s retries after %v, Go after %v", i, name, got.RetryAfter, want.RetryAfter)
			}
		}
	}
	if admitted == 0 || refused == 0 {
		t.Fatalf("the steps should admit and refuse: %d admitted, %d refused", admitted, refused)
	}
}
