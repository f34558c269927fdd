package session

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func TestJWTBlacklist(t *testing.T) {
	t.Parallel()
	e, s := newStore(t)
	ctx := e.Ctx()
	now := e.Now()

	ok, err := s.RevokeToken(ctx, "jti-live", now.Add(time.Second))
	require.NoError(t, err)
	assert.True(t, ok)
	revoked, err := s.IsRevoked(ctx, "jti-live")
	require.NoError(t, err)
	assert.True(t, revoked)
	key, err := blacklistKey.Key(e.NS, "jti-live")
	require.NoError(t, err)
	assert.Equal(t, e.NS.Prefix+"session:blacklist:jti-live", key, "seed 001 bytes")
	v, err := e.Client.Get(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, "1", v)
	ttl := pttl(t, e, key)
	assert.True(t, ttl > 500*time.Millisecond && ttl <= time.Second, "TTL = remaining validity, got %v", ttl)

	ok, err = s.RevokeToken(ctx, "jti-old", now.Add(-time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "an expired token is not written")
	revoked, err = s.IsRevoked(ctx, "jti-old")
	require.NoError(t, err)
	assert.False(t, revoked)

	ok, err = s.RevokeToken(ctx, "jti-live", now.Add(time.Hour))
	require.NoError(t, err)
	assert.True(t, ok, "already blacklisted")
	assert.True(t, pttl(t, e, key) <= time.Second, "the entry is left as it was")

	// Bounds: an expiry in year 9999 never writes an 8,000-year TTL.
	for name, at := range map[string]time.Time{
		"year 9999":            time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		"a day past the max":   now.Add(maxTokenExpiry + 48*time.Hour),
		"an hour past the max": now.Add(maxTokenExpiry + time.Hour), // passes the early check, the script refuses
		"before 1970":          time.UnixMilli(-5),
	} {
		_, err = s.RevokeToken(ctx, "jti-far", at)
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	revoked, err = s.IsRevoked(ctx, "jti-far")
	require.NoError(t, err)
	assert.False(t, revoked, "nothing written")
	ok, err = s.RevokeToken(ctx, "jti-year", now.Add(maxTokenExpiry-time.Hour))
	require.NoError(t, err)
	assert.True(t, ok, "up to the bound")
	yk, _ := blacklistKey.Key(e.NS, "jti-year")
	assert.InDelta(t, (maxTokenExpiry - time.Hour).Hours(), pttl(t, e, yk).Hours(), 0.1)
	require.NoError(t, e.Client.Del(ctx, yk).Err())

	_, err = s.RevokeToken(ctx, "", now.Add(time.Hour))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.RevokeToken(ctx, "j", time.Time{})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.IsRevoked(ctx, "")
	require.ErrorIs(t, err, ErrInvalid)

	e.Advance(1100 * time.Millisecond)
	revoked, err = s.IsRevoked(ctx, "jti-live")
	require.NoError(t, err)
	assert.False(t, revoked, "gone once the token would have expired")
	assert.Empty(t, dataKeys(t, e))
}

// Checks made at once go out in shared pipelines (auto-pipelining),
// each with its own token's answer.
func TestIsRevokedSharesPipelines(t *testing.T) {
	e, s0 := newStore(t)
	ctx := e.Ctx()
	const tokens = 200
	jti := func(i int) string { return "jti-" + strconv.Itoa(i) }
	for i := 0; i < tokens; i += 2 {
		_, err := s0.RevokeToken(ctx, jti(i), e.Now().Add(time.Hour))
		require.NoError(t, err)
	}
	c := e.FreshClient()
	trips := harness.CountTrips(c)
	s, err := New(c, WithNamespace(e.NS), WithPipelining(1))
	require.NoError(t, err)
	harness.AllAtOnce(tokens, func(i int) {
		revoked, err := s.IsRevoked(ctx, jti(i))
		assert.NoError(t, err)
		assert.Equal(t, i%2 == 0, revoked, jti(i))
	})
	trips.CheckShared(t, 1, tokens)
}
