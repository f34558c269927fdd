package presence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

type snapshot struct {
	raw   string
	conns map[string]string
}

// snap reads a user's presence and connections atomically (MULTI on one
// slot).
func snap(t *testing.T, e *harness.Env, l layout, user string) (snapshot, error) {
	ctx := e.Ctx()
	pk, ck := key(t, e, "presence:{user_id}", user), key(t, e, "connections:{user_id}", user)
	var g *redis.StringCmd
	var h *redis.MapStringStringCmd
	_, err := e.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		g = p.Get(ctx, pk)
		h = p.HGetAll(ctx, ck)
		return nil
	})
	if err != nil && err != redis.Nil {
		return snapshot{}, err
	}
	if l.single() && len(h.Val()) > 0 {
		return snapshot{}, fmt.Errorf("single-key layout wrote %s", ck)
	}
	cs, err := l.storedConns(g.Val(), h.Val())
	return snapshot{raw: g.Val(), conns: cs}, err
}

// check reports a violation of: online <=> at least one connection, and
// activeConnections == the number of connections.
func (s snapshot) check() error {
	if s.raw == "" {
		if len(s.conns) > 0 {
			return fmt.Errorf("no presence key but %d connections", len(s.conns))
		}
		return nil
	}
	var p struct {
		Status string `json:"status"`
		N      int    `json:"activeConnections"`
	}
	if err := json.Unmarshal([]byte(s.raw), &p); err != nil {
		return err
	}
	online := p.Status != "offline"
	switch {
	case online && len(s.conns) == 0:
		return fmt.Errorf("online (%s) with zero connections", s.raw)
	case !online && len(s.conns) > 0:
		return fmt.Errorf("offline with %d live connections", len(s.conns))
	case p.N != len(s.conns):
		return fmt.Errorf("activeConnections %d, hash has %d", p.N, len(s.conns))
	}
	return nil
}

// TestConcurrentInvariant: many goroutines connect, heartbeat, disconnect
// and change status for a few users; an observer takes atomic snapshots
// throughout; no snapshot and no end state shows a user online with zero
// live connections or offline with a live one, and the online index agrees.
// It runs with auto-pipelining (the default) and without.
func TestConcurrentInvariant(t *testing.T) {
	for _, pipe := range []struct {
		name string
		opt  presence.Option
	}{{"pipelined", presence.WithPipelining(presence.DefaultPipelines)}, {"unpipelined", presence.WithPipelining(0)}} {
		t.Run(pipe.name, func(t *testing.T) { concurrentInvariant(t, pipe.opt) })
	}
}

func concurrentInvariant(t *testing.T, pipe presence.Option) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), pipe)
		ctx := e.Ctx()
		users := []string{"u0", "u1", "u2", "u3"}
		conns := []string{"c0", "c1", "c2"}
		const workers, ops = 200, 25

		stop := make(chan struct{})
		var obs sync.WaitGroup
		obs.Add(1)
		var violations []string
		snaps := 0
		go func() {
			defer obs.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				u := users[i%len(users)]
				s, err := snap(t, e, l, u)
				if err != nil {
					violations = append(violations, err.Error())
					return
				}
				if err := s.check(); err != nil {
					violations = append(violations, u+": "+err.Error())
				}
				snaps++
			}
		}()

		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(seed, 7))
				for i := 0; i < ops; i++ {
					u, c := users[rnd.IntN(len(users))], conns[rnd.IntN(len(conns))]
					var err error
					switch rnd.IntN(5) {
					case 0, 1:
						_, err = tr.Connect(ctx, u, presence.Conn{ID: c, Metadata: presence.Metadata{Device: "web"}})
					case 2:
						_, err = tr.Heartbeat(ctx, u, c)
						if err != nil && errorsIs(err, presence.ErrUnknownConnection) {
							err = nil
						}
					case 3:
						_, err = tr.Disconnect(ctx, u, c)
					case 4:
						st := []presence.Status{presence.Online, presence.Away, presence.Invisible}[rnd.IntN(3)]
						_, err = tr.SetStatus(ctx, u, st)
						if err != nil && errorsIs(err, presence.ErrOffline) {
							err = nil
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(uint64(w))
		}
		wg.Wait()
		close(stop)
		obs.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		assert.Empty(t, violations)
		assert.Positive(t, snaps, "the observer checked snapshots during the run")

		var visible []string
		for _, u := range users {
			s, err := snap(t, e, l, u)
			require.NoError(t, err)
			require.NoError(t, s.check(), u)
			p, err := tr.Get(ctx, u)
			require.NoError(t, err)
			if p.Online() && p.Status != presence.Invisible {
				visible = append(visible, u)
			}
		}
		all, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		sort.Strings(all)
		assert.Equal(t, visible, nilIfEmpty(all), "the index agrees with the presence keys")

		for _, u := range users {
			for _, c := range conns {
				_, err := tr.Disconnect(ctx, u, c)
				require.NoError(t, err)
			}
			p, err := tr.Get(ctx, u)
			require.NoError(t, err)
			assert.False(t, p.Online(), u)
		}
		n, err := tr.OnlineCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		e.RequireTTLs(nil)
	})
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TestFaults: a stalled or cut connection gives errors, never a panic, and
// leaves the user's keys consistent.
func TestFaults(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		c, p := e.ProxyClient(&redis.Options{MaxRetries: -1, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
		tr, err := presence.New(c, presence.WithNamespace(e.NS), l.opt())
		require.NoError(t, err)
		ctx := e.Ctx()
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)

		// Outages are not outcomes: a stalled server gives the context's
		// error, never a sentinel, for every operation.
		p.Stall()
		sentinels := []error{presence.ErrUnknownConnection, presence.ErrOffline, presence.ErrTooManyConnections, presence.ErrNoIndex, presence.ErrInvalid, keys.ErrCorrupt}
		ty, err := typingOf(presence.New(c, presence.WithNamespace(e.NS)))
		require.NoError(t, err)
		av, err := availabilityOf(presence.New(c, presence.WithNamespace(e.NS)))
		require.NoError(t, err)
		for name, op := range map[string]func(ctx context.Context) error{
			"heartbeat":  func(ctx context.Context) error { _, err := tr.Heartbeat(ctx, "u", "a"); return err },
			"connect":    func(ctx context.Context) error { _, err := tr.Connect(ctx, "u", presence.Conn{ID: "z"}); return err },
			"disconnect": func(ctx context.Context) error { _, err := tr.Disconnect(ctx, "u", "a"); return err },
			"status":     func(ctx context.Context) error { _, err := tr.SetStatus(ctx, "u", presence.Busy); return err },
			"get":        func(ctx context.Context) error { _, err := tr.Get(ctx, "u"); return err },
			"typing":     func(ctx context.Context) error { _, err := ty.Start(ctx, "c", "u", "n"); return err },
			"stop":       func(ctx context.Context) error { _, err := ty.Stop(ctx, "c", "u"); return err },
			"typers":     func(ctx context.Context) error { _, err := ty.Typers(ctx, "c"); return err },
			"avail":      func(ctx context.Context) error { _, err := av.Get(ctx, "a"); return err },
			"sweep":      func(ctx context.Context) error { _, err := tr.Sweep(ctx, 0, 4); return err },
		} {
			sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			err := op(sctx)
			cancel()
			require.Error(t, err, name)
			for _, s := range sentinels {
				assert.NotErrorIs(t, err, s, "%s: %v", name, err)
			}
		}
		p.Resume()

		p.CutNow()
		_, _ = tr.Connect(ctx, "u", presence.Conn{ID: "b"}) // may fail or not
		p.CutAfter(20)
		// A cluster client may resend the read on a fresh connection once
		// the cut is spent (reads are safe to resend): an error or the
		// right answer, never a wrong one.
		ps, err := tr.GetMany(ctx, []string{"u", "v", "w"})
		if err == nil {
			require.Len(t, ps, 3)
			assert.Equal(t, "u", ps[0].UserID)
			assert.True(t, ps[0].Online(), "u is connected")
			assert.False(t, ps[1].Online())
			assert.False(t, ps[2].Online())
		}
		p.CutAfter(-1)

		var ok bool
		for i := 0; i < 5 && !ok; i++ {
			_, err = tr.Heartbeat(ctx, "u", "a")
			ok = err == nil
		}
		require.NoError(t, err, "recovers after the faults")
		s, err := snap(t, e, l, "u")
		require.NoError(t, err)
		require.NoError(t, s.check())
	})
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
