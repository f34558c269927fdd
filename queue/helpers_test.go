package queue_test

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// redisNop is a client that is never used: New does no I/O.
func redisNop() redis.UniversalClient {
	return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
}

// timeout returns a context that ends 200 ms from now (its cancel runs
// when ctx ends).
func timeout(ctx context.Context) context.Context {
	c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	go func() { <-c.Done(); cancel() }()
	return c
}

// set makes k a string, the wrong type for every queue key but the
// string ones.
func set(e *harness.Env, k string) {
	require.NoError(e.T, e.Client.Set(context.Background(), k, "x", time.Minute).Err())
}

// hset makes k a hash.
func hset(e *harness.Env, k string) {
	require.NoError(e.T, e.Client.HSet(context.Background(), k, "x", "y").Err())
}

// noLatency returns s without OldestReady, which moves with the server
// clock between two reads on a real server.
func noLatency(s queue.Stats) queue.Stats {
	s.OldestReady = 0
	return s
}

func zmember(score float64, m string) redis.Z { return redis.Z{Score: score, Member: m} }

// replaceTag puts the queue name in place of {q} (keeping the braces of
// the hash tag).
func replaceTag(s, name string) string { return strings.ReplaceAll(s, "{q}", "{"+name+"}") }
