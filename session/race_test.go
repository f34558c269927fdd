package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevokeNeverUndoneByConcurrentGetUpdate: 100 goroutines Get and
// Update a session while it is revoked. The revoke is sent only once calls
// are succeeding, and every goroutine keeps calling for a fixed number of
// rounds after it returned. No call that starts after Revoke returned
// succeeds, and nothing is left in Redis: no HSET wrote to the deleted
// hash.
func TestRevokeNeverUndoneByConcurrentGetUpdate(t *testing.T) {
	for _, how := range []string{"Revoke", "RevokeAll", "RevokeOthers", "Rotate reuse"} {
		t.Run(how, func(t *testing.T) {
			e, s := newStore(t)
			ctx := e.Ctx()
			sess, tok := mustCreate(t, e, s, "u1")
			keep, _ := mustCreate(t, e, s, "u1")
			var revoked atomic.Bool
			var late, lateTries, ok atomic.Int64
			var wg sync.WaitGroup
			workers, rounds := 100, 30
			if !e.Real() {
				rounds = 8 // gopher-lua under -race is slow; the real servers run the full size
			}
			start := make(chan struct{})
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					<-start
					for i, post := 0, 0; post < rounds; i++ {
						after := revoked.Load()
						if after {
							post++
							lateTries.Add(1)
						}
						var err error
						if (w+i)%2 == 0 {
							_, err = s.Get(ctx, "u1", sess.ID)
						} else {
							err = s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"w": fmt.Sprint(w)}})
						}
						switch {
						case err == nil && after:
							late.Add(1)
						case err == nil:
							ok.Add(1)
						case !errors.Is(err, ErrNotFound):
							t.Errorf("worker %d: %v", w, err)
							return
						}
					}
				}(w)
			}
			close(start)
			// Revoke while calls are in flight: once some have succeeded.
			for wait := time.Now().Add(10 * time.Second); ok.Load() < int64(workers) && time.Now().Before(wait); {
				time.Sleep(time.Millisecond)
			}
			var err error
			switch how {
			case "Revoke":
				_, err = s.Revoke(ctx, "u1", sess.ID)
			case "RevokeAll":
				_, err = s.RevokeAll(ctx, "u1")
			case "RevokeOthers":
				_, err = s.RevokeOthers(ctx, "u1", keep.ID)
			case "Rotate reuse":
				var next string
				if next, err = s.RotateRefresh(ctx, "u1", sess.ID, tok); err == nil {
					_, err = s.RotateRefresh(ctx, "u1", sess.ID, next)
				}
				if err == nil { // tok is two rotations old: reuse
					_, err = s.RotateRefresh(ctx, "u1", sess.ID, tok)
					if errors.Is(err, ErrTokenReused) {
						err = nil
					}
				}
			}
			require.NoError(t, err)
			revoked.Store(true)
			wg.Wait()
			assert.Zero(t, late.Load(), "calls after the revoke succeeded")
			assert.GreaterOrEqual(t, ok.Load(), int64(workers), "calls were succeeding when the revoke was sent")
			assert.GreaterOrEqual(t, lateTries.Load(), int64(workers*rounds), "every worker kept calling after the revoke")
			t.Logf("%d calls succeeded before the revoke, %d tried after", ok.Load(), lateTries.Load())
			// The hash is gone, or (RevokeAll/Others) unreachable and then
			// deleted by the next Get that names it.
			_, err = s.Get(ctx, "u1", sess.ID)
			require.ErrorIs(t, err, ErrNotFound)
			n, err := e.Client.Exists(ctx, sessKey(t, e, "u1", sess.ID)).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "the revoked hash was brought back")
			e.RequireTTLs(nil)
		})
	}
}

// TestExpiryNeverUndoneByConcurrentGet: goroutines keep using a session
// across its absolute expiry; no call sent after it succeeds, and the hash
// is gone at the end. The server runs on this machine, so TIME and
// time.Now share a clock (20 ms margin).
func TestExpiryNeverUndoneByConcurrentGet(t *testing.T) {
	e, s := newStore(t, WithIdleTimeout(300*time.Millisecond), WithMaxLifetime(300*time.Millisecond))
	if !e.Real() {
		t.Skip("needs the real clock to move while goroutines run; covered by TestSlidingAndAbsoluteExpiry on miniredis")
	}
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	var late atomic.Int64
	var wg sync.WaitGroup
	deadline := sess.AbsoluteExpiry
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline.Add(200 * time.Millisecond)) {
				started := time.Now() // same clock as the server's TIME
				var err error
				if w%2 == 0 {
					_, err = s.Get(ctx, "u1", sess.ID)
				} else {
					err = s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"w": "x"}})
				}
				if err == nil && started.After(deadline.Add(20*time.Millisecond)) {
					late.Add(1)
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	assert.Zero(t, late.Load(), "a call succeeded after the absolute expiry")
	assert.Empty(t, dataKeys(t, e), "nothing brought back")
}

// TestFaultsReturnErrors: a stalled or cut connection gives errors, never
// a panic or a partial write.
func TestFaultsReturnErrors(t *testing.T) {
	e := newEnvOnly(t)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1, ContextTimeoutEnabled: true})
	s, err := New(c, WithNamespace(e.NS))
	require.NoError(t, err)
	u, err := NewUsers(c, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	sess, toks, err := s.Create(ctx, Info{UserID: "u1"})
	require.NoError(t, err)
	tok := toks.Refresh

	p.Stall()
	sctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	_, err = s.Get(sctx, "u1", sess.ID)
	cancel()
	require.Error(t, err, "a stalled server is an error")
	p.Resume()

	p.CutNow()
	for i := 0; i < 3; i++ {
		p.CutAfter(10)
		_, _, _ = s.Create(ctx, Info{UserID: "u1"})
		_, _ = s.Get(ctx, "u1", sess.ID)
		_, _ = s.RotateRefresh(ctx, "u1", sess.ID, tok)
		_, _ = u.Validate(ctx, "u1")
		_, _ = s.List(ctx, "u1")
	}
	p.CutAfter(-1)
	// The store still works and the session is intact or cleanly gone.
	_, err = s.Get(ctx, "u1", sess.ID)
	if err != nil {
		require.ErrorIs(t, err, ErrNotFound)
	}
	e.RequireTTLs(nil)
}

// TestRotateRefreshOneWinner: many goroutines present the same refresh
// token at once, with no rotation grace. Exactly one gets a new token;
// the others present a token that has just been rotated away, which is
// reuse, so the session ends revoked. The token chain never forks.
func TestRotateRefreshOneWinner(t *testing.T) {
	e, s := newStore(t, WithRotationGrace(0))
	ctx := e.Ctx()
	sess, tok := mustCreate(t, e, s, "u1")
	const workers = 100
	var won, reused, gone atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.RotateRefresh(ctx, "u1", sess.ID, tok)
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, ErrTokenReused):
				reused.Add(1)
			case errors.Is(err, ErrNotFound):
				gone.Add(1)
			default:
				t.Errorf("RotateRefresh: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), won.Load(), "exactly one rotation wins")
	assert.Equal(t, int64(1), reused.Load(), "the first loser detects reuse and revokes")
	assert.Equal(t, int64(workers-2), gone.Load(), "the rest find the session revoked")
	_, err := s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, dataKeys(t, e))
}

// TestRotateRefreshConcurrentRetries: many goroutines present the same
// refresh token at once, within the rotation grace (a client retrying,
// or two tabs). One rotation happens; every caller gets its token, the
// session stays live, and the chain never forks: the token they share
// rotates on, and then the first one is reuse.
func TestRotateRefreshConcurrentRetries(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, tok := mustCreate(t, e, s, "u1")
	const workers = 100
	got := make([]string, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var err error
			got[w], err = s.RotateRefresh(ctx, "u1", sess.ID, tok)
			assert.NoError(t, err)
		}()
	}
	close(start)
	wg.Wait()
	for _, g := range got {
		require.Equal(t, got[0], g, "one new token for all")
	}
	require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, got[0]))
	raw, err := e.Client.HGet(ctx, sessKey(t, e, "u1", sess.ID), fRefreshUsed).Result()
	require.NoError(t, err)
	assert.Len(t, strings.Fields(raw), 1, "one rotation")
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, got[0])
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, tok)
	require.ErrorIs(t, err, ErrTokenReused)
	assert.Empty(t, dataKeys(t, e))
}

// TestMaxSessionsUnderConcurrentCreate: 50 goroutines create sessions for
// one user with a cap of 3; the cap holds exactly at the end and every
// evicted session is dead.
func TestMaxSessionsUnderConcurrentCreate(t *testing.T) {
	e, s := newStore(t, WithMaxSessions(3))
	ctx := e.Ctx()
	const workers, each = 50, 4
	ids := createConcurrently(t, e, s, "u1", workers, each)
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 3)
	live := map[string]bool{}
	for _, en := range list {
		live[en.ID] = true
	}
	n := 0
	for _, id := range ids {
		n++
		_, err := s.Get(ctx, "u1", id)
		if live[id] {
			require.NoError(t, err, "listed session %s", id)
		} else {
			require.ErrorIs(t, err, ErrNotFound, "evicted session %s", id)
		}
	}
	assert.Equal(t, workers*each, n)
	assert.Len(t, dataKeys(t, e), 4, "3 hashes and the index: evicted hashes deleted on sight")
	e.RequireTTLs(nil)
}
