package session

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

// Renew moves everything to the new ID: fields, extras, created_at and
// the absolute expiry, the refresh history; the old handle, ID and
// refresh token stop working; the index lists only the new ID.
func TestRenew(t *testing.T) {
	e, s := newStore(t, WithIdleTimeout(time.Minute), WithMaxLifetime(time.Hour))
	ctx := e.Ctx()
	sess, tok, err := s.Create(ctx, Info{UserID: "u1", Email: "a@example.com", IPAddress: "10.0.0.1", UserAgent: "ua", DeviceFingerprint: "fp", Extra: map[string]string{"role": "guest"}})
	require.NoError(t, err)
	other, _ := mustCreate(t, e, s, "u1")
	r1, err := s.RotateRefresh(ctx, "u1", sess.ID, tok.Refresh)
	require.NoError(t, err)
	e.Advance(50 * time.Millisecond)

	renewed, ntok, err := s.Renew(ctx, "u1", sess.ID)
	require.NoError(t, err)
	assert.NotEqual(t, sess.ID, renewed.ID)
	assert.NotEqual(t, tok.Handle, ntok.Handle)
	uid, nsid, err := ParseHandle(ntok.Handle)
	require.NoError(t, err)
	assert.Equal(t, "u1", uid)
	assert.Equal(t, renewed.ID, nsid, "the new handle names the new ID")
	assert.Equal(t, "a@example.com", renewed.Email)
	assert.Equal(t, "10.0.0.1", renewed.IPAddress)
	assert.Equal(t, "ua", renewed.UserAgent)
	assert.Equal(t, "fp", renewed.DeviceFingerprint)
	assert.Equal(t, map[string]string{"role": "guest"}, renewed.Extra)
	assert.True(t, sess.CreatedAt.Equal(renewed.CreatedAt), "created_at moves with the session")
	assert.True(t, sess.AbsoluteExpiry.Equal(renewed.AbsoluteExpiry), "the lifetime cap does not move")
	assert.True(t, renewed.ExpiresAt.After(sess.ExpiresAt), "renewing slides the session")

	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "the old ID is dead")
	got, err := s.Get(ctx, "u1", renewed.ID)
	require.NoError(t, err)
	assert.Equal(t, "guest", got.Extra["role"])
	n, err := e.Client.Exists(ctx, sessKey(t, e, "u1", sess.ID)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the old hash is gone")

	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	var ids []string
	for _, en := range list {
		ids = append(ids, en.ID)
	}
	assert.ElementsMatch(t, []string{other.ID, renewed.ID}, ids)

	// The refresh token before the renewal is retired: presenting it is
	// reuse; the new one rotates.
	require.ErrorIs(t, s.VerifyRefresh(ctx, "u1", renewed.ID, r1), ErrInvalidToken)
	require.NoError(t, s.VerifyRefresh(ctx, "u1", renewed.ID, ntok.Refresh))
	r2, err := s.RotateRefresh(ctx, "u1", renewed.ID, ntok.Refresh)
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u1", renewed.ID, tok.Refresh)
	require.ErrorIs(t, err, ErrTokenReused, "the history moved with the session")
	_, err = s.RotateRefresh(ctx, "u1", renewed.ID, r2)
	require.ErrorIs(t, err, ErrNotFound, "reuse revoked the renewed session")

	// Renewing a dead or unknown session is ErrNotFound and writes nothing.
	_, _, err = s.Renew(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = s.Renew(ctx, "nobody", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = s.Renew(ctx, "", sess.ID)
	require.ErrorIs(t, err, ErrInvalid)
	e.RequireTTLs(nil)
}

// A session renewed keeps its absolute expiry: renewing never extends
// the lifetime cap, and an expired session cannot be renewed.
func TestRenewKeepsLifetimeCap(t *testing.T) {
	e, s := newStore(t, WithIdleTimeout(time.Second), WithMaxLifetime(1500*time.Millisecond))
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	abs := sess.AbsoluteExpiry
	for i := 0; i < 3; i++ {
		e.Advance(600 * time.Millisecond)
		r, _, err := s.Renew(ctx, "u1", sess.ID)
		if i == 2 {
			require.ErrorIs(t, err, ErrNotFound, "past the absolute expiry")
			break
		}
		require.NoError(t, err)
		assert.True(t, r.AbsoluteExpiry.Equal(abs), "the cap does not move")
		assert.False(t, r.ExpiresAt.After(abs), "sliding stops at the cap")
		sess = r
	}
	assert.Empty(t, dataKeys(t, e), "nothing is left of the expired session")
}

// Renew names the old hash when it holds data this package did not
// write, and moves nothing.
func TestRenewCorrupt(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	k := sessKey(t, e, "u1", sess.ID)
	require.NoError(t, e.Client.HSet(ctx, k, fRefreshHash, "not-hex").Err())
	_, _, err := s.Renew(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), k)
	n, err := e.Client.Exists(ctx, k).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "nothing was moved")
}

// TestRenewNoWindow: a chain of renewals while 100 goroutines Get every
// ID of the chain. Once any call has seen ID k work (or Renew has moved
// the session past it), no Get of an earlier ID that starts later
// succeeds: there is no moment when two IDs work. Each renewal is sent
// once some reader has seen the current ID work, and the current ID is
// always there to renew (never a moment when no ID works).
func TestRenewNoWindow(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	renews, workers := 200, 100
	if !e.Real() {
		renews, workers = 30, 20 // gopher-lua under -race is slow; the real servers run the full size
	}
	ids := make([]string, 1, renews+1)
	ids[0] = sess.ID
	var mu sync.RWMutex
	var floor atomic.Int64 // every ID below it is dead
	var stale, okCalls, calls atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				mu.RLock()
				n := len(ids)
				// half the calls on the two newest IDs, half on any
				k := n - 1 - (w+i)%2
				if (w+i)%4 == 0 {
					k = (w*7919 + i) % n
				}
				if k < 0 {
					k = 0
				}
				id := ids[k]
				mu.RUnlock()
				low := floor.Load()
				_, err := s.Get(ctx, "u1", id)
				calls.Add(1)
				switch {
				case err == nil:
					okCalls.Add(1)
					if int64(k) < low {
						stale.Add(1)
					}
					for {
						f := floor.Load()
						if int64(k) <= f || floor.CompareAndSwap(f, int64(k)) {
							break
						}
					}
				case !errors.Is(err, ErrNotFound):
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		}(w)
	}
	cur := sess.ID
	for i := 0; i < renews; i++ {
		// Renew while readers are using the current ID.
		for seen, wait := okCalls.Load(), time.Now().Add(5*time.Second); okCalls.Load() == seen && time.Now().Before(wait); {
			time.Sleep(100 * time.Microsecond)
		}
		r, _, err := s.Renew(ctx, "u1", cur)
		require.NoError(t, err, "renew %d: the current ID is always live", i)
		mu.Lock()
		ids = append(ids, r.ID)
		mu.Unlock()
		cur = r.ID
		for {
			f := floor.Load()
			if int64(i+1) <= f || floor.CompareAndSwap(f, int64(i+1)) {
				break
			}
		}
	}
	done.Store(true)
	wg.Wait()
	assert.Zero(t, stale.Load(), "a Get of an ID older than one seen working succeeded")
	assert.GreaterOrEqual(t, okCalls.Load(), int64(renews), "readers were succeeding during the renewals")
	t.Logf("%d renewals, %d Gets, %d succeeded", renews, calls.Load(), okCalls.Load())
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, cur, list[0].ID)
	for _, id := range ids[:renews] {
		_, err := s.Get(ctx, "u1", id)
		require.ErrorIs(t, err, ErrNotFound, fmt.Sprint("old ID ", id))
	}
	assert.Len(t, dataKeys(t, e), 2, "one hash and the index")
	e.RequireTTLs(nil)
}

// A Renew whose reply is lost after the server ran it is resent by
// go-redis: the resend finds its own renewed session and reports it; the
// old ID stays dead and the new handle works.
func TestRenewReplayed(t *testing.T) {
	r := newReplayEnv(t)
	s, ctx := r.s, r.e.Ctx()
	sess, tok, err := s.Create(ctx, Info{UserID: "u1", Email: "a@example.com"})
	require.NoError(t, err)
	var renewed *Session
	var ntok Tokens
	r.lose(t, renewOp, func() {
		renewed, ntok, err = s.Renew(ctx, "u1", sess.ID)
		require.NoError(t, err, "a resent Renew reports its own renewal")
	})
	assert.Equal(t, "a@example.com", renewed.Email)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	uid, sid, err := ParseHandle(ntok.Handle)
	require.NoError(t, err)
	_, err = s.Get(ctx, uid, sid)
	require.NoError(t, err)
	require.NoError(t, s.VerifyRefresh(ctx, uid, sid, ntok.Refresh))
	require.ErrorIs(t, s.VerifyRefresh(ctx, uid, sid, tok.Refresh), ErrInvalidToken)
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, sid, list[0].ID)
}
