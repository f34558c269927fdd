package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	_, err = s.RevokeToken(ctx, "", now.Add(time.Hour))
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = s.RevokeToken(ctx, "j", time.Time{})
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = s.IsRevoked(ctx, "")
	require.ErrorIs(t, err, ErrInvalidInput)

	e.Advance(1100 * time.Millisecond)
	revoked, err = s.IsRevoked(ctx, "jti-live")
	require.NoError(t, err)
	assert.False(t, revoked, "gone once the token would have expired")
	assert.Empty(t, e.Keys())
}
