package session

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// An index deadline at a round millisecond is a deadline like any other:
// miniredis prints such a score in exponent form ("1.7956e+12" for
// 1795600000000) where real Redis prints every digit, and List and Get,
// which read the index's latest deadline back, must not call it corrupt.
func TestRoundIndexDeadline(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	// A "remember me" session, idle for up to three days, and a default
	// one (idle one hour).
	long, _, err := s.Create(ctx, Info{UserID: "u", Email: "u@example.com", IPAddress: "192.168.1.100", UserAgent: "Mozilla/5.0",
		DeviceFingerprint: "fp", IdleTimeout: 72 * time.Hour, MaxLifetime: 7 * 24 * time.Hour})
	require.NoError(t, err)
	short, _ := mustCreate(t, e, s, "u")
	// The long one's deadline as a Get at round - 72 h wrote it: a
	// multiple of 1e8 ms between 2 h and 30 h from now, so later than
	// any deadline the short one gets.
	at := harness.RoundBefore(e.Now().Add(2*time.Hour).UnixMilli()) + harness.RoundMs
	idx := idxKey(t, e, "u")
	require.NoError(t, e.Client.ZAddXX(ctx, idx, redis.Z{Score: float64(at), Member: long.ID}).Err())
	e.RequireExponentScore("return redis.call('ZSCORE', KEYS[1], ARGV[1])", []string{idx}, long.ID)

	list, err := s.List(ctx, "u")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, short.ID, list[0].ID)
	assert.Equal(t, long.ID, list[1].ID)
	assert.Equal(t, at, list[1].ExpiresAt.UnixMilli())

	got, err := s.Get(ctx, "u", short.ID)
	require.NoError(t, err, "Get reads the index's latest deadline back")
	assert.Equal(t, short.ID, got.ID)
	ttl := pttl(t, e, idx)
	assert.Greater(t, ttl, time.Duration(at-e.Now().UnixMilli())*time.Millisecond-time.Minute,
		"the index lives as long as its latest deadline")
}

// A session whose deadline was a round millisecond expires with an event
// whose time is that deadline, in digits the event reader parses.
func TestRoundDeadlineExpiredEvent(t *testing.T) {
	e, s := newStore(t, WithEvents(1000))
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u")
	// Its deadline as a Get an hour before the last multiple of 1e8 ms
	// (at most 28 h ago) wrote it.
	at := harness.RoundBefore(e.Now().UnixMilli())
	require.NoError(t, e.Client.ZAddXX(ctx, idxKey(t, e, "u"), redis.Z{Score: float64(at), Member: sess.ID}).Err())

	list, err := s.List(ctx, "u")
	require.NoError(t, err)
	assert.Empty(t, list, "the entry has expired")
	var expired []Event
	for _, ev := range readAll(t, e, s) {
		if ev.Kind == Expired {
			expired = append(expired, ev)
		}
	}
	require.Len(t, expired, 1)
	assert.Equal(t, sess.ID, expired[0].SessionID)
	assert.Equal(t, at, expired[0].At.UnixMilli())
}
