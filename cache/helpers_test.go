package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// hookLog collects what the error hook receives.
type hookLog struct {
	mu   sync.Mutex
	errs []error
	keys []string
}

func (h *hookLog) hook(_ context.Context, key string, err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.keys = append(h.keys, key)
	h.mu.Unlock()
}

func (h *hookLog) all() ([]string, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.keys...), append([]error(nil), h.errs...)
}

type item struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func newCache[T any](t testing.TB, e *harness.Env, opts ...Option) *Cache[T] {
	t.Helper()
	return newCacheOn[T](t, e.Client, e, opts...)
}

// newCacheOn is newCache over another client of the test's backend (an
// independent instance, or one behind a fault proxy).
func newCacheOn[T any](t testing.TB, rdb redis.UniversalClient, e *harness.Env, opts ...Option) *Cache[T] {
	t.Helper()
	c, err := New[T](rdb, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// counter is a loader that counts its calls.
type counter struct {
	n     atomic.Int64
	delay time.Duration
}

func (c *counter) load(v item) func(ctx context.Context) (item, error) {
	return func(ctx context.Context) (item, error) {
		c.n.Add(1)
		if c.delay > 0 {
			select {
			case <-time.After(c.delay):
			case <-ctx.Done():
				return item{}, ctx.Err()
			}
		}
		return v, nil
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
