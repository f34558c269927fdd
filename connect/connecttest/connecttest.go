package connecttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
)

// cleanupTimeout bounds the deletion of one test's keys.
const cleanupTimeout = 30 * time.Second

// Cluster reports whether the suite runs on a cluster.
func Cluster() bool { return os.Getenv("REDIS_CLUSTER_ADDRS") != "" }

// URL returns the connect URL of database db of the suite's backend:
// the cluster's addresses (a cluster has database 0 only, so db is
// ignored), redis://REDIS_ADDR/db, or "" for connect's embedded server.
func URL(db int) string {
	switch {
	case Cluster():
		return os.Getenv("REDIS_CLUSTER_ADDRS")
	case os.Getenv("REDIS_ADDR") != "":
		return fmt.Sprintf("redis://%s/%d", os.Getenv("REDIS_ADDR"), db)
	}
	return ""
}

// Use points REDIS_URL at database 0 of the suite's backend for the
// rest of t (t.Setenv: not in parallel tests) and returns a prefix
// ("{name}-test-{8 hex digits}:") whose keys, in that database and in
// databases 1 to dbs-1 on a server, are deleted when t ends. On the
// embedded server, which goes with the program, nothing is deleted.
func Use(t testing.TB, name string, dbs int) string {
	t.Helper()
	url := URL(0)
	t.Setenv("REDIS_URL", url)
	prefix := Prefix(name)
	if url == "" {
		return prefix
	}
	urls := []string{url}
	for db := 1; db < dbs && !Cluster(); db++ {
		urls = append(urls, URL(db))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		for _, u := range urls {
			rdb, closeRedis, err := connect.Open(ctx, u)
			if err != nil {
				t.Error(err)
				return
			}
			err = deleteUnder(ctx, rdb, prefix)
			closeRedis()
			if err != nil {
				t.Error(err)
			}
		}
	})
	return prefix
}

// Open connects to database 0 of the suite's backend (an embedded server
// of its own when none is named) for the rest of t, and returns the
// client with a namespace under a new prefix of name's (see Use), whose
// keys are deleted when t ends.
func Open(t testing.TB, name string) (redis.UniversalClient, keys.Namespace) {
	t.Helper()
	rdb, closeRedis, err := connect.Open(context.Background(), URL(0))
	if err != nil {
		t.Fatal(err)
	}
	ns := keys.Namespace{Prefix: Prefix(name)}
	t.Cleanup(func() {
		defer closeRedis()
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := deleteUnder(ctx, rdb, ns.Prefix); err != nil {
			t.Error(err)
		}
	})
	return rdb, ns
}

// Prefix returns a new key prefix for name: "{name}-test-{8 hex
// digits}:".
func Prefix(name string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return name + "-test-" + hex.EncodeToString(b) + ":"
}

// deleteUnder deletes every key under prefix on every node (SCAN, never
// KEYS).
func deleteUnder(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	return keys.ForEachNode(ctx, rdb, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 1000).Iterator()
		for it.Next(ctx) {
			if err := n.Del(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	})
}

// Buffer is a bytes.Buffer safe for concurrent use: a program's output,
// written by its server while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
