package cache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Every instance hears every invalidation, wherever the entry lives: two
// instances with local tiers both hold 20 keys, one Sets each of them,
// and the other's local tier drops every one. On a Ring a script's
// PUBLISH reaches only its own shard's subscribers: before the Store
// listened on every shard, the keys on the shard that does not hold the
// channel stayed in the local tier for its whole max age. Run on the
// test's backend (a single server, or a Cluster, where PUBLISH reaches
// every node) and on a Ring of two shards: two miniredis, and two
// redis-servers started by the test on a real backend.
func TestEveryInstanceHearsEveryInvalidation(t *testing.T) {
	e := harness.New(t)
	t.Run("backend", func(t *testing.T) {
		checkInvalidationsReachLocalTiers(t, e.FreshClient(), e.FreshClient(), e.NS, nil, nil)
	})
	t.Run("ring", func(t *testing.T) {
		addrs := ringShards(t, e)
		ring := func() redis.UniversalClient {
			r := redis.NewRing(&redis.RingOptions{Addrs: addrs, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = r.Close() })
			return r
		}
		a, b := ring(), ring()
		checkInvalidationsReachLocalTiers(t, a, b, keys.Namespace{Prefix: "ring:"}, a.(*redis.Ring), nil)
	})
	// A shard added after the Stores subscribed (Ring.SetAddrs) is
	// listened to within shardCheck.
	t.Run("ring grown", func(t *testing.T) {
		addrs := ringShards(t, e)
		ring := func() *redis.Ring {
			r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"s1": addrs["s1"]}, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = r.Close() })
			return r
		}
		a, b := ring(), ring()
		grow := func() {
			a.SetAddrs(addrs)
			b.SetAddrs(addrs)
		}
		checkInvalidationsReachLocalTiers(t, a, b, keys.Namespace{Prefix: "ring-grown:"}, a, grow)
	})
}

// checkInvalidationsReachLocalTiers loads 20 keys in an instance over cb,
// Sets them in an instance over ca, and waits for the first to drop each
// from its local tier.
// With ring, it checks first that the keys fall on every shard.
// grow, if not nil, adds shards once both instances have subscribed.
func checkInvalidationsReachLocalTiers(t *testing.T, ca, cb redis.UniversalClient, ns keys.Namespace, ring *redis.Ring, grow func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := []Option{WithNamespace(ns), WithLocal(100, time.Hour), WithPolicy(Policy{Default: time.Hour})}
	a, err := New[item](ca, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	b, err := New[item](cb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })

	if grow != nil {
		grow()
		for _, c := range []*Cache[item]{a, b} {
			harness.WaitFor(t, "a listener on each shard", func() bool {
				c.s.events.mu.Lock()
				defer c.s.events.mu.Unlock()
				return len(c.s.events.subs) == 2
			})
		}
	}
	const n = 20
	ks := make([]Key, n)
	refs := make([]Ref, n)
	shards := map[string]int{}
	for i := range ks {
		ks[i] = NewKey("/ring/"+strconv.Itoa(i), "GET", nil)
		refs[i], err = b.ref("test", ks[i])
		require.NoError(t, err)
		if ring != nil {
			c, err := ring.GetShardClientForKey(refs[i].value)
			require.NoError(t, err)
			shards[c.Options().Addr]++
		}
		// b loads the key itself (a load nobody waits for publishes
		// nothing): no event of this step can arrive late and empty b's
		// local tier before the Sets below.
		v, res, err := b.get(ctx, "get", ks[i], func(context.Context) (item, error) { return item{N: 1}, nil }, nil)
		require.NoError(t, err)
		require.Equal(t, 1, v.N)
		require.True(t, res.Stored)
		_, _, ok := b.s.local.get(refs[i].value)
		require.True(t, ok, "b holds key %d locally", i)
	}
	if ring != nil {
		require.Len(t, shards, 2, "the keys fall on both shards: %v", shards)
	}
	for i := range ks {
		require.NoError(t, a.Set(ctx, ks[i], item{N: 2}))
	}
	for i := range ks {
		harness.WaitFor(t, fmt.Sprintf("b's local tier to drop key %d", i), func() bool {
			_, _, ok := b.s.local.get(refs[i].value)
			return !ok
		})
		v, err := b.Get(ctx, ks[i], func(context.Context) (item, error) { return item{}, fmt.Errorf("unexpected load") })
		require.NoError(t, err)
		require.Equal(t, 2, v.N, "key %d", i)
	}
}

// ringShards returns the addresses of two servers for a Ring: two
// miniredis on the miniredis backend; on a real backend two redis-servers
// started for the test (skipped when redis-server is not installed).
func ringShards(t *testing.T, e *harness.Env) map[string]string {
	if !e.Real() {
		return map[string]string{"s1": miniredis.RunT(t).Addr(), "s2": miniredis.RunT(t).Addr()}
	}
	return map[string]string{"s1": harness.PrivateRedis(t), "s2": harness.PrivateRedis(t)}
}

// panicOnBatchedSets is a go-redis hook that panics in a pipeline
// carrying two Sets or more: a Ring's batch of Sets, which txPipe sends
// on a goroutine of its own per shard.
type panicOnBatchedSets struct{ panics *atomic.Int64 }

func (panicOnBatchedSets) DialHook(next redis.DialHook) redis.DialHook { return next }

func (panicOnBatchedSets) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h panicOnBatchedSets) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sets := 0
		for _, c := range cmds {
			if c.Name() == "set" {
				sets++
			}
		}
		if sets >= 2 {
			h.panics.Add(1)
			panic("hook refuses batched Sets")
		}
		return next(ctx, cmds)
	}
}

// A panic in a Ring shard's pipeline of Sets (a hook's) does not end the
// process from the goroutine that sent it: those Sets go again through
// the write script, and every Set lands.
func TestRingShardPanicFailsOnlyItsSets(t *testing.T) {
	e := harness.New(t)
	var panics atomic.Int64
	r := redis.NewRing(&redis.RingOptions{Addrs: ringShards(t, e), ContextTimeoutEnabled: true,
		NewClient: func(o *redis.Options) *redis.Client {
			c := redis.NewClient(o)
			c.AddHook(panicOnBatchedSets{&panics})
			return c
		}})
	t.Cleanup(func() { _ = r.Close() })
	c, err := New[item](r, WithNamespace(keys.Namespace{Prefix: "ring-panic:"}), WithPolicy(Policy{Default: time.Hour}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const goroutines, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				errs <- c.Set(ctx, NewKey("/ring-panic/"+strconv.Itoa(g*each+i), "GET", nil), item{N: g*each + i})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NotZero(t, panics.Load(), "no batch of Sets reached a shard")
	for n := range goroutines * each {
		v, err := c.Get(ctx, NewKey("/ring-panic/"+strconv.Itoa(n), "GET", nil), func(context.Context) (item, error) { return item{}, fmt.Errorf("unexpected load") })
		require.NoError(t, err)
		require.Equal(t, n, v.N)
	}
}
