package sensor

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// newClient returns a client on the test's backend whose local clock is
// the server's (miniredis's clock is frozen and moved by e.Advance).
func newClient(t testing.TB, e *harness.Env, opts ...Option) *Client {
	t.Helper()
	c, err := New(e.Client, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	followServerClock(e, c)
	return c
}

func followServerClock(e *harness.Env, c *Client) {
	if e.Mini != nil {
		c.now = e.Now
		return
	}
	skew := time.Until(e.Now())
	c.now = func() time.Time { return time.Now().Add(skew) }
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
