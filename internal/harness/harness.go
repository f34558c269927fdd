// Package harness gives tests a Redis to run against: miniredis by default,
// the real server named by REDIS_ADDR, or the Redis Cluster named by
// REDIS_CLUSTER_ADDRS (comma-separated host:port). Every test gets a fresh
// key namespace, so tests may run in parallel on one shared server, and the
// keys under it are removed when the test ends. No test ever flushes a
// database.
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Backend names the kind of Redis a test runs on.
type Backend string

// The backends.
const (
	Mini    Backend = "miniredis"
	Server  Backend = "redis"
	Cluster Backend = "cluster"
)

// MaxRealWait is the longest Advance sleeps for on a real backend; a test
// that needs more time to pass is skipped there (it runs on miniredis).
const MaxRealWait = 3 * time.Second

// Env is one test's Redis: a client, a namespace of its own, and time
// control.
type Env struct {
	T       testing.TB
	Client  redis.UniversalClient
	NS      keys.Namespace
	Backend Backend
	// Mini is the in-process server on the miniredis backend, else nil.
	Mini *miniredis.Miniredis
	// Addr is the address of the single server (miniredis or REDIS_ADDR);
	// empty on a cluster.
	Addr string

	mu  sync.Mutex
	now time.Time // miniredis clock
}

var (
	sharedOnce sync.Once
	shared     redis.UniversalClient
	sharedErr  error
)

// Selected returns the backend chosen by the environment.
func Selected() Backend {
	switch {
	case os.Getenv("REDIS_CLUSTER_ADDRS") != "":
		return Cluster
	case os.Getenv("REDIS_ADDR") != "":
		return Server
	}
	return Mini
}

func sharedClient() (redis.UniversalClient, error) {
	sharedOnce.Do(func() {
		var c redis.UniversalClient
		switch Selected() {
		case Cluster:
			c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("REDIS_CLUSTER_ADDRS"), ","), PoolSize: 64, ContextTimeoutEnabled: true})
		case Server:
			c = redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), PoolSize: 64, ContextTimeoutEnabled: true})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			sharedErr = err
			return
		}
		if cc, ok := c.(*redis.ClusterClient); ok {
			// Make sure every master answers before tests start.
			sharedErr = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })
		}
		shared = c
	})
	return shared, sharedErr
}

// New returns a fresh Env for t. On a real backend whose server does not
// answer, the test fails (CI must not pass silently on a missing server).
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{T: t, Backend: Selected(), NS: keys.Namespace{Prefix: "rst:" + randHex(6) + ":"}}
	switch e.Backend {
	case Mini:
		e.Mini = miniredis.RunT(t)
		e.now = time.Now().Truncate(time.Millisecond)
		e.Mini.SetTime(e.now)
		e.Addr = e.Mini.Addr()
		// miniredis runs each script in gopher-lua, under -race and
		// beside other packages' tests: a pipeline of a few thousand
		// scripts (cache's GetMany of 1,000 keys writes back 2,000) can
		// take longer than go-redis's default 3 s read timeout, which
		// covers a whole pipeline's replies. What the tests time is
		// theirs to bound (contexts, proxies with short timeouts), not
		// the test double's speed.
		c := redis.NewClient(&redis.Options{Addr: e.Addr, ContextTimeoutEnabled: true, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
		t.Cleanup(func() { _ = c.Close() })
		e.Client = c
		return e
	case Server:
		e.Addr = os.Getenv("REDIS_ADDR")
	}
	c, err := sharedClient()
	if err != nil {
		t.Fatalf("harness: %s backend unreachable: %v", e.Backend, err)
	}
	e.Client = c
	t.Cleanup(func() {
		if err := e.deleteAll(context.Background()); err != nil {
			t.Errorf("harness: clean-up of %s: %v", e.NS.Prefix, err)
		}
	})
	return e
}

// FreshClient returns a new client of the test's backend, closed when the
// test ends, for a test that installs hooks (the real backends' client is
// shared by every test of the package).
func (e *Env) FreshClient() redis.UniversalClient {
	e.T.Helper()
	var c redis.UniversalClient
	if e.Backend == Cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("REDIS_CLUSTER_ADDRS"), ","), PoolSize: 64, ContextTimeoutEnabled: true})
	} else {
		c = redis.NewClient(&redis.Options{Addr: e.Addr, PoolSize: 64, ContextTimeoutEnabled: true})
	}
	e.T.Cleanup(func() { _ = c.Close() })
	return c
}

// WaitFor polls cond every millisecond until it holds, and fails the test
// (naming what it waited for) after 10 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Real reports whether the test runs on a real server or cluster.
func (e *Env) Real() bool { return e.Backend != Mini }

// Ctx returns a context cancelled when the test ends, with a 60 s bound.
func (e *Env) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	e.T.Cleanup(cancel)
	return ctx
}

// Now returns the server's clock: the frozen miniredis time, or TIME.
func (e *Env) Now() time.Time {
	if e.Mini != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.now
	}
	now, err := e.Client.Time(context.Background()).Result()
	if err != nil {
		e.T.Fatalf("harness: TIME: %v", err)
	}
	return now
}

// Advance moves time forward by d for both TIME and TTLs. On miniredis the
// clock is frozen between calls and moves exactly by d. On a real backend
// Advance sleeps, and skips the test when d exceeds MaxRealWait.
func (e *Env) Advance(d time.Duration) {
	e.T.Helper()
	if e.Mini == nil {
		if d > MaxRealWait {
			e.T.Skipf("harness: needs %v of real time on %s; covered on miniredis", d, e.Backend)
		}
		time.Sleep(d)
		return
	}
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.Mini.SetTime(e.now)
	e.mu.Unlock()
	e.Mini.FastForward(d)
}

// RequireShortWaits skips the test on real backends when it needs more than
// MaxRealWait of waiting in total.
func (e *Env) RequireShortWaits(total time.Duration) {
	e.T.Helper()
	if e.Real() && total > MaxRealWait {
		e.T.Skipf("harness: needs %v of real time on %s; covered on miniredis", total, e.Backend)
	}
}

// Keys returns every key under the test's namespace, from every node.
func (e *Env) Keys() []string {
	e.T.Helper()
	var mu sync.Mutex
	var out []string
	err := keys.ForEachNode(context.Background(), e.Client, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, e.NS.Match(), 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out = append(out, it.Val())
			mu.Unlock()
		}
		return it.Err()
	})
	if err != nil {
		e.T.Fatalf("harness: scan: %v", err)
	}
	return out
}

// Snapshot renders every key under the namespace as "type value
// ttl=bool" (members of sets sorted, a stream's entries in order), for
// tests that require a failing call to leave every key as it was.
func (e *Env) Snapshot() map[string]string {
	e.T.Helper()
	ctx := context.Background()
	c := e.Client
	out := map[string]string{}
	for _, k := range e.Keys() {
		typ, err := c.Type(ctx, k).Result()
		var v any
		switch {
		case err != nil:
		case typ == "none":
			continue
		case typ == "string":
			v, err = c.Get(ctx, k).Result()
		case typ == "hash":
			v, err = c.HGetAll(ctx, k).Result() // fmt prints a map's keys sorted
		case typ == "list":
			v, err = c.LRange(ctx, k, 0, -1).Result()
		case typ == "set":
			var m []string
			m, err = c.SMembers(ctx, k).Result()
			sort.Strings(m)
			v = m
		case typ == "zset":
			v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		case typ == "stream":
			v, err = c.XRange(ctx, k, "-", "+").Result()
		}
		var ttl time.Duration
		if err == nil {
			ttl, err = c.PTTL(ctx, k).Result()
		}
		if err != nil {
			e.T.Fatalf("harness: snapshot %q: %v", k, err)
		}
		out[k] = fmt.Sprintf("%s %v ttl=%v", typ, v, ttl > 0)
	}
	return out
}

// RequireTTLs fails the test if any key under the namespace has no TTL,
// except those for which persistent returns true.
func (e *Env) RequireTTLs(persistent func(key string) bool) {
	e.T.Helper()
	for _, k := range e.Keys() {
		if persistent != nil && persistent(k) {
			continue
		}
		ttl, err := e.Client.PTTL(context.Background(), k).Result()
		if err != nil {
			e.T.Fatalf("harness: PTTL %q: %v", k, err)
		}
		if ttl == -1 {
			e.T.Errorf("key %q has no TTL", k)
		}
	}
}

func (e *Env) deleteAll(ctx context.Context) error {
	return keys.ForEachNode(ctx, e.Client, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, e.NS.Match(), 1000).Iterator()
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			pipe := n.Pipeline()
			for _, k := range batch {
				pipe.Unlink(ctx, k)
			}
			_, err := pipe.Exec(ctx)
			batch = batch[:0]
			return err
		}
		for it.Next(ctx) {
			if batch = append(batch, it.Val()); len(batch) == 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		return flush()
	})
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
