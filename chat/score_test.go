package chat

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// A last activity at a round millisecond is a time like any other:
// miniredis prints such a score in exponent form ("1.7955e+12" for
// 1795500000000) where real Redis prints every digit, and neither the
// reads that return it nor the routing that checks it may call it
// corrupt.
func TestRoundActivityScore(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithConversationTTL(48*time.Hour))
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	// The activity of a message at the last multiple of 1e8 ms (at most
	// 28 h ago), well within the TTL.
	at := harness.RoundBefore(e.Now().UnixMilli())
	active := c.global[1]
	require.NoError(t, e.Client.ZAddXX(ctx, active, redis.Z{Score: float64(at), Member: "c1"}).Err())
	e.RequireExponentScore("return redis.call('ZSCORE', KEYS[1], ARGV[1])", []string{active}, "c1")

	cv, err := c.Conversation(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, at, cv.LastActivity.UnixMilli())
	act, err := c.Active(ctx, 10)
	require.NoError(t, err)
	require.Len(t, act, 1)
	assert.Equal(t, at, act[0].At.UnixMilli())
	prev, err := c.SetPriority(ctx, "c1", Urgent)
	require.NoError(t, err, "routing reads the activity back")
	assert.Equal(t, Normal, prev)
	cv, err = c.Conversation(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, Urgent, cv.Priority)
}
