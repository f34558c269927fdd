package session

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// replayEnv is a Store and Users on a client whose connections go through
// the fault proxy, so that a test can lose the reply of one command after
// the server ran it: go-redis then sends the command again, as it does
// after any broken connection.
type replayEnv struct {
	e      *harness.Env
	p      *harness.Proxy
	s      *Store
	u      *Users
	calls  int
	loaded map[*call.Op]bool
}

func newReplayEnv(t *testing.T, opts ...Option) *replayEnv {
	t.Helper()
	e := harness.New(t)
	// Quick retries: each lost reply costs one backoff.
	c, p := e.ProxyClient(&redis.Options{MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	opts = append([]Option{WithNamespace(e.NS)}, opts...)
	s, err := New(c, opts...)
	require.NoError(t, err)
	u, err := NewUsers(c, opts...)
	require.NoError(t, err)
	return &replayEnv{e: e, p: p, s: s, u: u, loaded: map[*call.Op]bool{}}
}

// lose runs fn with the reply of op's next call lost once: the script is
// loaded on every master first, so that the call is an EVALSHA carrying
// the script's hash. It checks that exactly one reply was lost.
func (r *replayEnv) lose(t *testing.T, op *call.Op, fn func()) {
	t.Helper()
	if !r.loaded[op] {
		require.NoError(t, op.Load(r.e.Ctx(), r.s.run.Client()))
		r.loaded[op] = true
	}
	before := r.p.Lost()
	r.p.LoseReply(op.Script().Hash())
	fn()
	require.Equal(t, before+1, r.p.Lost(), "%s: one reply lost", op.Name())
	require.Zero(t, r.p.Pending())
	r.calls++
}

// TestReplayReportsFirstOutcome loses the reply of every mutating
// operation once, after the server ran it; go-redis resends the command,
// and the caller must see the outcome of the first run, with the state
// it left (no duplicate, no false theft, no false "not found").
func TestReplayReportsFirstOutcome(t *testing.T) {
	r := newReplayEnv(t, WithMaxSessions(3))
	s, u, ctx := r.s, r.u, r.e.Ctx()

	// Create: the resend finds its own session; no collision, no orphan,
	// and the cap evicts exactly one session.
	var ids []string
	for i := 0; i < 3; i++ {
		sess, _, err := s.Create(ctx, Info{UserID: "u1"})
		require.NoError(t, err)
		ids = append(ids, sess.ID)
		r.e.Advance(2 * time.Millisecond) // distinct expiries: the eviction order is defined
	}
	var sess *Session
	var tok Tokens
	r.lose(t, createOp, func() {
		var err error
		sess, tok, err = s.Create(ctx, Info{UserID: "u1", Email: "a@example.com"})
		require.NoError(t, err, "a resent Create is not a collision")
	})
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 3, "one eviction, not two")
	assert.Equal(t, sess.ID, list[2].ID, "the new session is live")
	_, err = s.Get(ctx, "u1", ids[0])
	require.ErrorIs(t, err, ErrNotFound, "the oldest was evicted")
	uid, sid, err := ParseHandle(tok.Handle)
	require.NoError(t, err)
	got, err := s.Get(ctx, uid, sid)
	require.NoError(t, err)
	assert.Equal(t, "a@example.com", got.Email)

	// RotateRefresh: the resend recognises its own rotation; no reuse.
	var next string
	r.lose(t, rotateOp, func() {
		next, err = s.RotateRefresh(ctx, "u1", sess.ID, tok.Refresh)
		require.NoError(t, err, "an honest rotation resent is not theft")
	})
	require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, next))
	// A retry with the old token within the grace: the resend gets the
	// same new token too.
	r.lose(t, rotateOp, func() {
		again, err := s.RotateRefresh(ctx, "u1", sess.ID, tok.Refresh)
		require.NoError(t, err)
		require.Equal(t, next, again)
	})
	next, err = s.RotateRefresh(ctx, "u1", sess.ID, next)
	require.NoError(t, err)
	// A reuse revokes the session; its resend still reports the reuse,
	// not a session that is merely gone.
	r.lose(t, rotateOp, func() {
		_, err = s.RotateRefresh(ctx, "u1", sess.ID, tok.Refresh)
		require.ErrorIs(t, err, ErrTokenReused, "the old token is still retired")
	})
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, next)
	require.ErrorIs(t, err, ErrNotFound, "the session was revoked for the reuse")
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	sess, tok, err = s.Create(ctx, Info{UserID: "u1"})
	require.NoError(t, err)

	// Update, Get, VerifyRefresh: writing the same fields twice is the same.
	r.lose(t, updateOp, func() {
		require.NoError(t, s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"cart": "3"}, Delete: []string{"none"}}))
	})
	r.lose(t, getOp, func() {
		got, err := s.Get(ctx, "u1", sess.ID)
		require.NoError(t, err)
		assert.Equal(t, "3", got.Extra["cart"])
	})
	r.lose(t, refreshHashOp, func() { require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, tok.Refresh)) })

	// Revoke: the resend reports that a live session ended.
	r.lose(t, revokeOp, func() {
		ok, err := s.Revoke(ctx, "u1", sess.ID)
		require.NoError(t, err)
		assert.True(t, ok, "the first run revoked a live session")
	})
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)

	// RevokeOthers and RevokeAll: the resend reports the first count.
	list, err = s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 2)
	r.lose(t, revokeOthersOp, func() {
		n, err := s.RevokeOthers(ctx, "u1", list[1].ID)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
	r.lose(t, revokeAllOp, func() {
		n, err := s.RevokeAll(ctx, "u1")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
	list, err = s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Empty(t, list)

	// Users: login, validate, block, unblock (of a record Block made, which
	// the first run deletes), logout.
	var usr *User
	r.lose(t, userLoginOp, func() {
		usr, err = u.Login(ctx, "u1", LoginInfo{DeviceID: "d"})
		require.NoError(t, err)
	})
	r.lose(t, userValidateOp, func() {
		v, err := u.Validate(ctx, "u1")
		require.NoError(t, err)
		assert.True(t, v.LoginTime.Equal(usr.LoginTime), "one login: %v vs %v", v.LoginTime, usr.LoginTime)
	})
	sess, _, err = s.Create(ctx, Info{UserID: "u1"})
	require.NoError(t, err)
	r.lose(t, authenticateOp, func() {
		_, _, err := s.Authenticate(ctx, u, "u1", sess.ID)
		require.NoError(t, err)
	})
	r.lose(t, userBlockOp, func() { require.NoError(t, u.Block(ctx, "u2")) })
	_, err = u.Validate(ctx, "u2")
	require.ErrorIs(t, err, ErrBlocked)
	r.lose(t, userUnblockOp, func() {
		require.NoError(t, u.Unblock(ctx, "u2"), "the first run lifted the block and deleted the record Block made")
	})
	_, err = u.Validate(ctx, "u2")
	require.ErrorIs(t, err, ErrNotFound)
	r.lose(t, userLogoutOp, func() { require.NoError(t, u.Logout(ctx, "u1")) })
	_, err = u.Validate(ctx, "u1")
	require.ErrorIs(t, err, ErrNotFound)

	// RevokeToken: blacklisted once, reported as blacklisted.
	r.lose(t, blacklistOp, func() {
		ok, err := s.RevokeToken(ctx, "jti-1", time.Now().Add(time.Hour))
		require.NoError(t, err)
		assert.True(t, ok)
	})
	ok, err := s.IsRevoked(ctx, "jti-1")
	require.NoError(t, err)
	assert.True(t, ok)
	t.Logf("%s: %d calls with a lost reply, each reported its first outcome", r.e.Backend, r.calls)
}

// TestReplayUnderRepeatedLoss rotates refresh tokens and creates sessions
// with the reply of every call lost once: no rotation may be taken for
// theft, no Create may fail or leave a second session.
func TestReplayUnderRepeatedLoss(t *testing.T) {
	r := newReplayEnv(t, WithMaxSessions(2))
	s, ctx := r.s, r.e.Ctx()
	rounds := 100
	if !r.e.Real() {
		rounds = 30 // gopher-lua under -race is slow; the real servers run the full size
	}
	var misreported int
	for i := 0; i < rounds; i++ {
		var sess *Session
		var tok Tokens
		r.lose(t, createOp, func() {
			var err error
			sess, tok, err = s.Create(ctx, Info{UserID: "u1"})
			if err != nil {
				misreported++
				t.Errorf("create %d: %v", i, err)
			}
		})
		if sess == nil {
			continue
		}
		refresh := tok.Refresh
		for j := 0; j < 3; j++ {
			r.lose(t, rotateOp, func() {
				next, err := s.RotateRefresh(ctx, "u1", sess.ID, refresh)
				if err != nil {
					misreported++
					t.Errorf("rotation %d.%d: %v", i, j, err)
					return
				}
				refresh = next
			})
		}
		require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, refresh))
	}
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Len(t, list, 2, "the cap holds: every resent Create found its own session")
	assert.Zero(t, misreported)
	t.Logf("%s: %d creates and %d rotations with a lost reply, %d misreported", r.e.Backend, rounds, 3*rounds, misreported)
}

// A Create that fails on the wire (no retry) may have written its session:
// nobody holds that handle, so Create revokes it in the background.
func TestCreateAbandonedOnLostReply(t *testing.T) {
	e := harness.New(t)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	s, err := New(c, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	require.NoError(t, createOp.Load(ctx, c))
	p.LoseReply(createOp.Script().Hash())
	_, _, err = s.Create(ctx, Info{UserID: "u1"})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid), "an outage is not an outcome: %v", err)
	require.EqualValues(t, 1, p.Lost())
	harness.WaitFor(t, "the abandoned session revoked", func() bool {
		list, err := s.List(ctx, "u1")
		return err == nil && len(list) == 0
	})
	harness.WaitFor(t, "its hash deleted", func() bool {
		for _, k := range dataKeys(t, e) {
			if _, err := sessionKey.Parse(e.NS, k); err == nil {
				return false
			}
		}
		return true
	})
}

// Auto-pipelined Creates and Gets share a pipeline; when its reply is
// lost, go-redis sends the whole pipeline again and every script in it
// runs twice. Each Create still reports one session of its own (no
// duplicate, no orphan, the cap counted once per session), and each Get
// the session it asked for.
func TestReplayedPipeline(t *testing.T) {
	const creates, gets = 30, 10
	r := newReplayEnv(t, WithPipelining(2), WithMaxSessions(creates+gets))
	s, ctx := r.s, r.e.Ctx()
	trips := harness.CountTrips(r.s.run.Client())
	var old []*Session
	for i := 0; i < gets; i++ {
		sess, _ := mustCreate(t, r.e, s, "u1")
		old = append(old, sess)
	}
	require.NoError(t, createOp.Load(ctx, r.e.Client))
	require.NoError(t, getOp.Load(ctx, r.e.Client))
	// Two Gets take both lanes and stall; the rest queue behind them and
	// go out as pipelines when the lanes come back. The test waits for
	// each step to be observed (the Gets sent, every caller started), not
	// for a fixed time.
	r.p.Stall()
	trips.Reset()
	var started atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Get(ctx, "u1", old[i].ID)
			assert.NoError(t, err)
		}()
	}
	harness.WaitFor(t, "both Gets sent, holding the two lanes", func() bool { return trips.Total() >= 2 })
	made := make([]*Session, creates)
	toks := make([]Tokens, creates)
	errs := make([]error, creates+gets)
	for i := 0; i < creates; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Add(1)
			made[i], toks[i], errs[i] = s.Create(ctx, Info{UserID: "u1", Email: fmt.Sprint(i, "@example.com")})
		}()
	}
	got := make([]*Session, gets)
	for i := 0; i < gets; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Add(1)
			got[i], errs[creates+i] = s.Get(ctx, "u1", old[i].ID)
		}()
	}
	harness.WaitFor(t, "every other call made, queued behind the stalled lanes", func() bool {
		return started.Load() == creates+gets
	})
	require.EqualValues(t, 2, trips.Total(), "nothing else went out while the lanes were held")
	r.p.LoseReply(createOp.Script().Hash())
	r.p.Resume()
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, i)
	}
	require.EqualValues(t, 1, r.p.Lost(), "one reply lost")
	assert.Positive(t, trips.Pipelines(), "the calls went out in pipelines")
	for i, sess := range got {
		assert.Equal(t, old[i].ID, sess.ID)
	}
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Len(t, list, creates+gets, "one index entry per session, none evicted")
	for i, sess := range made {
		uid, sid, err := ParseHandle(toks[i].Handle)
		require.NoError(t, err)
		assert.Equal(t, sess.ID, sid)
		back, err := s.Get(ctx, uid, sid)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint(i, "@example.com"), back.Email)
		assert.True(t, back.CreatedAt.Equal(sess.CreatedAt), "the first run's session")
	}
}

// A revoke's request key outlives go-redis's whole retry schedule (about
// 2 min 8 s at worst), so a late resend still reports the first outcome.
func TestRequestKeyOutlivesTheRetrySchedule(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "42")
	ok, err := s.Revoke(ctx, "42", sess.ID)
	require.NoError(t, err)
	require.True(t, ok)
	n := 0
	for _, k := range e.Keys() {
		if _, err := requestKey.Parse(e.NS, k); err == nil {
			n++
			assert.Greater(t, e.Client.PTTL(ctx, k).Val(), 150*time.Second, k)
		}
	}
	assert.Equal(t, 1, n, "the revoke's request key")
}
