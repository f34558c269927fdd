package presence_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// short004 is seed 004's format and no retention, with short lifetimes.
var short004 = presence.Profile{Format: presence.FormatCompact, TTL: time.Second, Heartbeat: 400 * time.Millisecond, TypingTTL: 900 * time.Millisecond, TypingThrottle: 600 * time.Millisecond}

// sweepShort is short with a retention long enough for a whole sweep of
// 16384 shards on a loaded machine to end before announced members are
// pruned.
var sweepShort = func() presence.Profile { p := short; p.Retention = 5 * time.Second; return p }()

// eachLayoutFormat runs f for both layouts and both formats (seed 002 with
// retention, seed 004 without), with short lifetimes.
func eachLayoutFormat(t *testing.T, f func(t *testing.T, l layout, p presence.Profile)) {
	eachLayout(t, func(t *testing.T, l layout) {
		for _, p := range []struct {
			name string
			p    presence.Profile
		}{{"002", sweepShort}, {"004", short004}} {
			t.Run(p.name, func(t *testing.T) { f(t, l, p.p) })
		}
	})
}

// collect reads want events (failing after 10 s), then whatever else
// arrives within quiet, and returns them all.
func collect(t *testing.T, sub *presence.Subscription, want int, quiet time.Duration) []presence.Event {
	t.Helper()
	return collectWithin(t, sub, want, quiet, 10*time.Second)
}

// collectWithin is collect failing after limit.
func collectWithin(t *testing.T, sub *presence.Subscription, want int, quiet, limit time.Duration) []presence.Event {
	t.Helper()
	var out []presence.Event
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for len(out) < want {
		ev, err := sub.Next(ctx)
		require.NoError(t, err, "after %d of %d events: %v", len(out), want, out)
		out = append(out, ev)
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		ev, err := sub.Next(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return out
		}
		out = append(out, ev)
	}
}

// byUser groups events as "previous->status" per user, in order.
func byUser(evs []presence.Event) map[string][]string {
	m := map[string][]string{}
	for _, ev := range evs {
		m[ev.UserID] = append(m[ev.UserID], string(ev.Previous)+"->"+string(ev.Status))
	}
	return m
}

func slotOf(t *testing.T, e *harness.Env, user string) int {
	return keys.Slot(key(t, e, "presence:{user_id}", user))
}

func TestSweepAnnouncesSilentExpiryOnce(t *testing.T) {
	eachLayoutFormat(t, func(t *testing.T, l layout, prof presence.Profile) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(prof))
		ctx := e.Ctx()
		sub, err := tr.Subscribe(ctx)
		require.NoError(t, err)
		defer sub.Close()

		users := []string{"on", "aw", "inv", "dis", "re", "late"}
		t0 := e.Now()
		for _, u := range users {
			c := presence.Conn{ID: "c"}
			if u == "inv" {
				c.Status = presence.Invisible
			}
			_, err := tr.Connect(ctx, u, c)
			require.NoError(t, err)
		}
		_, err = tr.SetStatus(ctx, "aw", presence.Away)
		require.NoError(t, err)
		_, err = tr.Disconnect(ctx, "dis", "c")
		require.NoError(t, err)
		e.Advance(1100 * time.Millisecond) // every presence expired silently
		_, err = tr.Connect(ctx, "re", presence.Conn{ID: "c2"})
		require.NoError(t, err, "reconnected before any sweep")
		if e.Real() {
			// re's client keeps heartbeating while the test runs, which can
			// take longer than the TTL on a loaded machine
			beat, stop := context.WithCancel(ctx)
			defer stop()
			go func() {
				for beat.Err() == nil {
					_, _ = tr.Heartbeat(beat, "re", "c2")
					time.Sleep(prof.Heartbeat)
				}
			}()
		}
		_, err = tr.Heartbeat(ctx, "late", "c")
		require.ErrorIs(t, err, presence.ErrUnknownConnection, "a late heartbeat does not consume the silent expiry")

		// several sweepers at once over the shards of the users, one of them
		// sweeping all shards in one call
		full := e.Real() && l.Layout == presence.LayoutHash && prof.Format == presence.FormatDetailed
		var announced atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if g == 0 && full { // one whole pass (too slow for miniredis's Lua)
					n, err := tr.Sweep(ctx, 0, presence.Shards)
					assert.NoError(t, err)
					announced.Add(int64(n))
					return
				}
				for _, u := range users {
					n, err := tr.Sweep(ctx, slotOf(t, e, u), 1)
					assert.NoError(t, err)
					announced.Add(int64(n))
				}
			}()
		}
		wg.Wait()
		assert.EqualValues(t, 3, announced.Load(), "on, aw and late, once each")

		evs := collect(t, sub, 11, 300*time.Millisecond)
		assert.Equal(t, map[string][]string{
			"on":   {"offline->online", "online->offline"},
			"aw":   {"offline->online", "online->away", "away->offline"},
			"dis":  {"offline->online", "online->offline"},
			"re":   {"offline->online", "offline->online"},
			"late": {"offline->online", "online->offline"},
		}, byUser(evs), "invisible leaks nothing; no second offline for dis; re not announced")
		for _, ev := range evs {
			if ev.UserID == "on" && ev.Status == presence.Offline {
				assert.WithinDuration(t, t0.Add(prof.TTL), ev.At, 300*time.Millisecond, "at is the expiry")
			}
		}

		// swept again: nothing; explicit calls after the sweep: no event
		for _, u := range users {
			n, err := tr.Sweep(ctx, slotOf(t, e, u), 1)
			require.NoError(t, err)
			assert.Zero(t, n)
		}
		_, err = tr.Disconnect(ctx, "on", "c")
		require.NoError(t, err)
		_, err = tr.Connect(ctx, "aw", presence.Conn{ID: "c", Status: presence.Invisible})
		require.NoError(t, err)
		assert.Empty(t, collect(t, sub, 0, 200*time.Millisecond))

		// last seen survives the announcement for the retention
		p, err := tr.Get(ctx, "late")
		require.NoError(t, err)
		assert.Equal(t, presence.Offline, p.Status)
		if prof.Retention > 0 {
			assert.WithinDuration(t, t0, p.LastSeen, 300*time.Millisecond)
		} else {
			assert.True(t, p.LastSeen.IsZero(), "no retention, no last seen")
		}
		on, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"re"}, on)
		e.RequireTTLs(nil)
	})
}

// A user who comes back Invisible after a silent expiry that no sweep has
// announced yet would stay online in others' eyes: Connect announces it.
func TestSweepInvisibleReturn(t *testing.T) {
	eachLayoutFormat(t, func(t *testing.T, l layout, prof presence.Profile) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(prof))
		ctx := e.Ctx()
		sub, err := tr.Subscribe(ctx)
		require.NoError(t, err)
		defer sub.Close()
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		_, err = tr.SetStatus(ctx, "u", presence.Busy)
		require.NoError(t, err)
		e.Advance(1100 * time.Millisecond)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "b", Status: presence.Invisible})
		require.NoError(t, err)
		n, err := tr.Sweep(ctx, slotOf(t, e, "u"), 1)
		require.NoError(t, err)
		assert.Zero(t, n)
		evs := collect(t, sub, 3, 200*time.Millisecond)
		assert.Equal(t, map[string][]string{"u": {"offline->online", "online->busy", "busy->offline"}}, byUser(evs))
	})
}

// RunSweeper cycles through all shards (one layout and format here: a
// cycle is slow on miniredis's Lua; Sweep is tested on all of them).
func TestRunSweeper(t *testing.T) {
	e := harness.New(t)
	// a 5 s sweep window: a cycle of 16 sweeps of 1024 shards may take
	// longer than the TTL on a loaded machine
	p := short004
	p.Retention = 5 * time.Second
	tr := newTracker(t, e, presence.WithLayout(presence.LayoutSingleKey), presence.WithProfile(p))
	ctx := e.Ctx()
	sub, err := tr.Subscribe(ctx)
	require.NoError(t, err)
	defer sub.Close()
	const users = 30
	for i := 0; i < users; i++ {
		_, err := tr.Connect(ctx, fmt.Sprint("u", i), presence.Conn{ID: "c"})
		require.NoError(t, err)
	}
	e.Advance(1100 * time.Millisecond)

	run, stop := context.WithCancel(ctx)
	errs := make(chan error, 2)
	var failed atomic.Int64
	// two instances; one on miniredis, whose Lua takes seconds per cycle
	// (a fresh interpreter per script)
	instances := 2
	if !e.Real() {
		instances = 1
	}
	for i := 0; i < instances; i++ {
		go func() {
			errs <- tr.RunSweeper(run, 10*time.Millisecond, presence.Shards/16, func(err error) { failed.Add(1); t.Log(err) })
		}()
	}
	evs := collectWithin(t, sub, 2*users, 400*time.Millisecond, 40*time.Second)
	stop()
	for i := 0; i < instances; i++ {
		assert.ErrorIs(t, <-errs, context.Canceled)
	}
	assert.Zero(t, failed.Load())
	got := byUser(evs)
	assert.Len(t, got, users)
	for u, evs := range got {
		assert.Equal(t, []string{"offline->online", "online->offline"}, evs, u)
	}
}

func TestSweepInput(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	tr := newTracker(t, e, presence.WithProfile(short))
	assert.Equal(t, short.Retention, tr.SweepWindow())
	for _, c := range [][2]int{{-1, 1}, {presence.Shards, 1}, {0, 0}, {0, presence.Shards + 1}} {
		_, err := tr.Sweep(ctx, c[0], c[1])
		assert.ErrorIs(t, err, presence.ErrInvalid, "%v", c)
	}
	n, err := tr.Sweep(ctx, presence.Shards-1, 2) // wraps
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.ErrorIs(t, tr.RunSweeper(ctx, 0, 1, nil), presence.ErrInvalid)
	assert.ErrorIs(t, tr.RunSweeper(ctx, time.Millisecond, 0, nil), presence.ErrInvalid)
	err = tr.RunSweeper(ctx, time.Second, 512, nil) // 32 s cycle > 1.5 s window
	assert.ErrorIs(t, err, presence.ErrInvalid)
	assert.Contains(t, err.Error(), "sweep window")

	t4 := newTracker(t, e, presence.WithProfile(short004))
	assert.Equal(t, short004.TTL, t4.SweepWindow(), "no retention: the TTL")

	off := newTracker(t, e, presence.WithoutOnlineIndex())
	_, err = off.Sweep(ctx, 0, 1)
	assert.ErrorIs(t, err, presence.ErrNoIndex)
	assert.ErrorIs(t, off.RunSweeper(ctx, time.Second, 1, nil), presence.ErrNoIndex)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err = tr.RunSweeper(canceled, 10*time.Millisecond, presence.Shards, nil)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}
