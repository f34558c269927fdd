// Package benchutil is the shared plumbing of the benchmarks: a client for
// the real Redis under test, a fresh key prefix per benchmark, clean-up, a
// round-trip counter, and memory probes.
//
// The server is REDIS_ADDR (default 127.0.0.1:6379), or the cluster named by
// REDIS_CLUSTER_ADDRS. Benchmarks never run on miniredis: its numbers would
// say nothing about Redis.
package benchutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Counter is the go-redis hook that counts round trips: one per command
// sent on its own, one per pipeline (or transaction); the connection
// handshake is not counted (see harness.Trips).
type Counter = harness.Trips

// Env is one benchmark's Redis.
type Env struct {
	Client redis.UniversalClient
	NS     keys.Namespace
	Trips  *Counter
}

// New connects to the Redis under test, attaches a Counter, and removes the
// benchmark's keys when it ends. It skips when no server answers.
func New(b testing.TB) *Env {
	b.Helper()
	var c redis.UniversalClient
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 128})
	} else {
		addr := os.Getenv("REDIS_ADDR")
		if addr == "" {
			addr = "127.0.0.1:6379"
		}
		c = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		b.Skipf("benchutil: no Redis: %v", err)
	}
	e := &Env{Client: c, NS: keys.Namespace{Prefix: "rsb:" + randHex() + ":"}, Trips: harness.CountTrips(c)}
	b.Cleanup(func() {
		_ = Clean(context.Background(), c, e.NS.Prefix)
		_ = c.Close()
	})
	return e
}

// NewClient returns another client to the same server, without the
// counter, for peers that want their own (closed with the benchmark).
func (e *Env) NewClient(b testing.TB) redis.UniversalClient {
	var c redis.UniversalClient
	switch cc := e.Client.(type) {
	case *redis.ClusterClient:
		o := *cc.Options()
		c = redis.NewClusterClient(&o)
	case *redis.Client:
		o := *cc.Options()
		c = redis.NewClient(&o)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// Warm opens a connection (the handshake is not the benchmark's) and resets
// the round-trip count. Call it right before b.ResetTimer.
func (e *Env) Warm(b testing.TB) {
	if err := e.Client.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	e.Trips.Reset()
}

// ReportTrips reports the round trips per operation counted since Warm
// as the metric "trips/op".
func (e *Env) ReportTrips(b *testing.B) {
	b.ReportMetric(float64(e.Trips.Total())/float64(b.N), "trips/op")
}

// Clean unlinks every key under prefix on every node (SCAN, never KEYS).
func Clean(ctx context.Context, c redis.UniversalClient, prefix string) error {
	return keys.ForEachNode(ctx, c, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, keys.GlobEscape(prefix)+"*", 1000).Iterator()
		for it.Next(ctx) {
			if err := n.Unlink(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	})
}

// MemoryUnder sums MEMORY USAGE (SAMPLES 0: exact) of every key under
// prefix and returns the total and the key count.
func MemoryUnder(ctx context.Context, c redis.UniversalClient, prefix string) (bytes, n int64, err error) {
	var total, count atomic.Int64
	err = keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		it := node.Scan(ctx, 0, keys.GlobEscape(prefix)+"*", 1000).Iterator()
		for it.Next(ctx) {
			m, err := node.MemoryUsage(ctx, it.Val(), 0).Result()
			if err == redis.Nil {
				continue // expired between SCAN and MEMORY USAGE
			}
			if err != nil {
				return err
			}
			total.Add(m)
			count.Add(1)
		}
		return it.Err()
	})
	return total.Load(), count.Load(), err
}

func randHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
