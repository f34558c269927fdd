package session

import (
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// retryEnv is a Store whose client reaches Redis through the fault proxy
// with go-redis's retries off, so that a lost reply reaches the caller
// as an error (as it does once go-redis's retries run out), and a Store
// on the direct client for the other writers of the same user.
type retryEnv struct {
	e     *harness.Env
	p     *harness.Proxy
	s     *Store // through the proxy, no retries
	other *Store // direct
}

func newRetryEnv(t *testing.T, opts ...Option) *retryEnv {
	t.Helper()
	e := harness.New(t)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	opts = append([]Option{WithNamespace(e.NS)}, opts...)
	s, err := New(c, opts...)
	require.NoError(t, err)
	other, err := New(e.Client, opts...)
	require.NoError(t, err)
	require.NoError(t, rotateOp.Load(e.Ctx(), c))
	return &retryEnv{e: e, p: p, s: s, other: other}
}

// loseRotation rotates token with the script's reply lost: the server
// rotated, the caller sees an error (not a business outcome).
func (r *retryEnv) loseRotation(t *testing.T, uid, sid, token string) {
	t.Helper()
	before := r.p.Lost()
	r.p.LoseReply(rotateOp.Script().Hash())
	_, err := r.s.RotateRefresh(r.e.Ctx(), uid, sid, token)
	require.Error(t, err, "the reply was lost")
	for _, sentinel := range []error{ErrTokenReused, ErrInvalidToken, ErrNotFound, ErrInvalid} {
		require.False(t, errors.Is(err, sentinel), "an outage is not an outcome: %v", err)
	}
	require.Equal(t, before+1, r.p.Lost(), "one reply lost")
	require.Zero(t, r.p.Pending())
}

// writers starts n goroutines that each rotate and verify a session of
// their own of user uid, on the direct client, one rotation per credit.
func (r *retryEnv) writers(t *testing.T, uid string, n int) *harness.Traffic {
	t.Helper()
	tr := harness.NewTraffic(t)
	ctx := r.e.Ctx()
	for i := 0; i < n; i++ {
		sess, tok := mustCreate(t, r.e, r.other, uid)
		tr.Writer(func(int) error {
			next, err := r.other.RotateRefresh(ctx, uid, sess.ID, tok)
			if err != nil {
				return err
			}
			tok = next
			if err := r.other.VerifyRefresh(ctx, uid, sess.ID, tok); err != nil {
				return err
			}
			_, err = r.other.Get(ctx, uid, sess.ID)
			return err
		})
	}
	return tr
}

// TestRotateRetryAfterLostReply: RotateRefresh's reply is lost after the
// server rotated (go-redis's retries off, so the error reaches the
// caller, as it does once they run out), while other sessions of the same
// user are rotated and read. The client retries with the same old token:
// it gets the new token the lost run made (the current one), as often as
// it asks, the session is not revoked, and the new token rotates on.
func TestRotateRetryAfterLostReply(t *testing.T) {
	r := newRetryEnv(t)
	ctx := r.e.Ctx()
	sess, t0 := mustCreate(t, r.e, r.s, "u1")
	tr := r.writers(t, "u1", 4)

	tr.Give(40) // the writers run while the rotation's reply is lost
	r.loseRotation(t, "u1", sess.ID, t0)
	tr.Run(40) // and between the loss and the retry

	t1, err := r.s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err, "an honest retry after a lost reply is not reuse")
	require.NoError(t, r.s.VerifyRefresh(ctx, "u1", sess.ID, t1), "the retry returns the token the lost run made current")
	tr.Give(20)
	again, err := r.s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err)
	require.Equal(t, t1, again, "every retry gets the same new token")
	_, err = r.s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err, "the session was not revoked")

	t2, err := r.s.RotateRefresh(ctx, "u1", sess.ID, t1)
	require.NoError(t, err, "the new token rotates")
	require.NoError(t, r.s.VerifyRefresh(ctx, "u1", sess.ID, t2))
	tr.Drain()
	list, err := r.s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Len(t, list, 5, "no session of the user was revoked")
	r.e.RequireTTLs(nil)
}

// TestRotateRetryAfterGraceIsReuse: within the grace a retry with the old
// token gets the new one; once the grace has passed, the old token is
// reuse again and revokes the session.
func TestRotateRetryAfterGraceIsReuse(t *testing.T) {
	grace := defaultRotationGrace
	if harness.Selected() != harness.Mini {
		grace = 500 * time.Millisecond // real time passes on the servers
	}
	r := newRetryEnv(t, WithRotationGrace(grace))
	ctx := r.e.Ctx()
	sess, t0 := mustCreate(t, r.e, r.s, "u1")
	keep, _ := mustCreate(t, r.e, r.s, "u1")
	r.loseRotation(t, "u1", sess.ID, t0)
	if !r.e.Real() {
		r.e.Advance(grace - time.Millisecond)
	}
	t1, err := r.s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err, "a retry within the grace")
	require.NoError(t, r.s.VerifyRefresh(ctx, "u1", sess.ID, t1))

	r.e.Advance(time.Millisecond)
	if r.e.Real() {
		r.e.Advance(grace)
	}
	_, err = r.s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.ErrorIs(t, err, ErrTokenReused, "the old token after the grace is reuse")
	_, err = r.s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "reuse revoked the session")
	_, err = r.s.RotateRefresh(ctx, "u1", sess.ID, t1)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = r.s.Get(ctx, "u1", keep.ID)
	require.NoError(t, err, "only that session")
	assert.Len(t, dataKeys(t, r.e), 2, "the other session and the index: the revoked session's keys are gone")
}

// TestRotateRetryAfterNextRotationIsReuse: once the new token has been
// rotated again, the old token is reuse, even within the grace.
func TestRotateRetryAfterNextRotationIsReuse(t *testing.T) {
	r := newRetryEnv(t)
	ctx := r.e.Ctx()
	sess, t0 := mustCreate(t, r.e, r.s, "u1")
	r.loseRotation(t, "u1", sess.ID, t0)
	t1, err := r.s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err, "the honest retry")
	_, err = r.s.RotateRefresh(ctx, "u1", sess.ID, t1)
	require.NoError(t, err)
	_, err = r.s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.ErrorIs(t, err, ErrTokenReused, "t0 after t1 was rotated is reuse")
	_, err = r.s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, dataKeys(t, r.e))
}

// TestRotateRetryKeepsNoTokenInClear: what a rotation keeps for the
// retry holds neither the new token nor the old one in any spelling (text,
// raw bytes, hex), nor do the commands sent; the old token's digest is
// there (the record exists).
func TestRotateRetryKeepsNoTokenInClear(t *testing.T) {
	e := harness.New(t)
	c := e.FreshClient()
	sent := &sentLog{}
	c.AddHook(sent)
	s, err := New(c, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	sess, t0 := mustCreate(t, e, s, "u1")
	t1, err := s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err)
	again, err := s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err)
	require.Equal(t, t1, again)

	rk, err := rotationKey.Key(e.NS, "u1", sess.ID)
	require.NoError(t, err)
	dump := dumpKeyspace(t, e)
	require.Contains(t, dump, rk, "the rotation record exists")
	require.Contains(t, dump, hashToken(t0), "and names the old token by its digest")
	for _, tok := range []string{t0, t1} {
		raw, err := b64.DecodeString(tok)
		require.NoError(t, err)
		for _, spelling := range []string{tok, string(raw), hex.EncodeToString(raw)} {
			assert.NotContains(t, dump, spelling, "the keyspace holds a token")
			assert.NotContains(t, sent.String(), spelling, "a command carried a token")
		}
	}
}
