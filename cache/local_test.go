package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Two instances with local tiers: a Set, a Delete or an InvalidateTag in
// one reaches the other's local tier through the events channel. The
// staleness (from the writer's return to the reader seeing the change)
// and the hit rate of a skewed workload are measured and logged.
func TestLocalTierIsCoherent(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	a := newCacheOn[item](t, e.FreshClient(), e, WithLocal(1000, 5*time.Second), WithPolicy(Policy{Default: time.Hour}))
	b := newCacheOn[item](t, e.FreshClient(), e, WithLocal(1000, 5*time.Second), WithPolicy(Policy{Default: time.Hour}))
	k := NewKey("/local", "GET", nil)
	noLoad := func(context.Context) (item, error) { return item{}, fmt.Errorf("unexpected load") }

	var stale []time.Duration
	for round := 1; round <= 50; round++ {
		require.NoError(t, b.Set(ctx, k, item{N: round}))
		// a may still hold round-1 locally: measure until it sees round.
		start := time.Now()
		for {
			v, err := a.Get(ctx, k, noLoad)
			require.NoError(t, err)
			if v.N == round {
				break
			}
			require.Less(t, time.Since(start), 10*time.Second, "the local tier never saw the Set")
			time.Sleep(100 * time.Microsecond)
		}
		stale = append(stale, time.Since(start))
		// Now a holds it locally.
		_, res, err := a.get(ctx, "get", k, noLoad, nil)
		require.NoError(t, err)
		require.True(t, res.Local)
	}
	slices.Sort(stale)
	t.Logf("local tier staleness after a Set in another instance: p50 %v, p99 %v, max %v (50 rounds)", stale[len(stale)/2], stale[len(stale)*99/100], stale[len(stale)-1])

	require.NoError(t, b.Delete(ctx, k))
	harness.WaitFor(t, "the Delete to reach a's local tier", func() bool {
		v, err := a.Get(ctx, k, func(context.Context) (item, error) { return item{N: -1}, nil })
		return err == nil && v.N == -1
	})

	tk := NewKey("/local-tagged", "GET", nil)
	require.NoError(t, b.Set(ctx, tk, item{N: 1}, WithTags("files")))
	_, err := a.Get(ctx, tk, noLoad, WithTags("files"))
	require.NoError(t, err)
	_, err = b.InvalidateTag(ctx, "files")
	require.NoError(t, err)
	harness.WaitFor(t, "the invalidation to reach a's local tier", func() bool {
		v, err := a.Get(ctx, tk, func(context.Context) (item, error) { return item{N: 2}, nil }, WithTags("files"))
		return err == nil && v.N == 2
	})

	// Hit rate: Zipf-like reads of 500 keys, a local tier of 100.
	c := newCache[item](t, e, WithLocal(100, 5*time.Second), WithPolicy(Policy{Default: time.Hour}))
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.2, 1, 499)
	for i := 0; i < 5000; i++ {
		n := int(z.Uint64())
		_, err := c.Get(ctx, NewKey("/zipf", "GET", map[string][]string{"k": {fmt.Sprint(n)}}), func(context.Context) (item, error) { return item{N: n}, nil })
		require.NoError(t, err)
	}
	st := c.Stats()
	t.Logf("zipf(1.2) over 500 keys, local tier of 100: local hits %.1f%%, Redis hits %.1f%%, loads %d", 100*float64(st.LocalHits)/5000, 100*float64(st.Hits)/5000, st.Loads)
	assert.Greater(t, st.LocalHits, int64(2500))
}

// Concurrent Sets share round trips, and each round trip publishes one set
// event naming all its keys, on the server of their writes: every key
// reaches the other instance's local tier, in fewer messages than Sets.
// On the test's backend, and on a Ring of two shards, whose batches split
// per shard: each shard's event names only that shard's keys.
func TestSetEventsNameEveryKeyOfARoundTrip(t *testing.T) {
	e := harness.New(t)
	t.Run("backend", func(t *testing.T) {
		checkSetEvents(t, e.FreshClient(), e.FreshClient(), e.NS, map[string]redis.UniversalClient{"": e.FreshClient()}, nil)
	})
	t.Run("ring", func(t *testing.T) {
		addrs := ringShards(t, e)
		ring := func() *redis.Ring {
			r := redis.NewRing(&redis.RingOptions{Addrs: addrs, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = r.Close() })
			return r
		}
		r := ring()
		shards := map[string]redis.UniversalClient{}
		for _, c := range r.GetShardClients() {
			shards[c.Options().Addr] = c
		}
		require.Len(t, shards, 2)
		shardOf := func(key string) string {
			c, err := r.GetShardClientForKey(key)
			require.NoError(t, err)
			return c.Options().Addr
		}
		checkSetEvents(t, ring(), ring(), keys.Namespace{Prefix: "ring-events:"}, shards, shardOf)
	})
}

// checkSetEvents fills a local tier over ca with 300 keys, Sets them from
// 32 goroutines over cb, and checks the set events heard on subs (every
// server that publishes, by name) and that the local tier drops every
// key. With shardOf (a Ring), every key an event names must be on the
// shard that published it, and the keys must fall on every shard.
func checkSetEvents(t *testing.T, ca, cb redis.UniversalClient, ns keys.Namespace, subs map[string]redis.UniversalClient, shardOf func(key string) string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	policy := WithPolicy(Policy{Default: time.Hour})
	a, err := New[item](ca, WithNamespace(ns), WithLocal(1000, time.Minute), policy)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	b, err := New[item](cb, WithNamespace(ns), policy)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	const n, workers = 300, 32
	ks := make([]Key, n)
	want := map[string]bool{}
	perShard := map[string]int{}
	for i := range ks {
		ks[i] = NewKey("/batch", "GET", map[string][]string{"i": {fmt.Sprint(i)}})
		ref, err := b.ref("set", ks[i])
		require.NoError(t, err)
		want[ref.Key()] = true
		if shardOf != nil {
			perShard[shardOf(ref.Key())]++
		}
		v, err := a.Get(ctx, ks[i], func(context.Context) (item, error) { return item{N: 0}, nil })
		require.NoError(t, err)
		require.Equal(t, 0, v.N)
	}
	if shardOf != nil {
		require.Len(t, perShard, len(subs), "the keys fall on every shard: %v", perShard)
	}

	// Listen as another process would, on every server, to count the
	// messages and tell which server published each.
	type heard struct {
		server string
		m      *redis.Message
	}
	msgs := make(chan heard, 2*n)
	for server, c := range subs {
		ps := c.Subscribe(ctx, b.s.channel)
		t.Cleanup(func() { _ = ps.Close() })
		_, err := ps.Receive(ctx)
		require.NoError(t, err)
		go func() {
			for m := range ps.Channel() {
				msgs <- heard{server, m}
			}
		}()
	}

	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := b.Set(ctx, ks[i], item{N: 1}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	got, messages := map[string]bool{}, 0
	for len(got) < len(want) {
		select {
		case h := <-msgs:
			ev, err := decodeEvent(h.m.Payload)
			require.NoError(t, err)
			require.Equal(t, byte('k'), ev.kind)
			require.Equal(t, b.s.origin, ev.origin)
			messages++
			for key := range strings.SplitSeq(ev.arg, "\n") {
				require.True(t, want[key], "event names %q, which no Set wrote", key)
				if shardOf != nil {
					require.Equal(t, shardOf(key), h.server, "%q announced by another shard than its own", key)
				}
				got[key] = true
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d keys announced in %d messages", len(got), len(want), messages)
		}
	}
	t.Logf("%d Sets from %d goroutines: %d set events", n, workers, messages)
	require.Less(t, messages, n, "concurrent Sets should share set events")

	for _, k := range ks {
		harness.WaitFor(t, "a's local tier to drop "+k.ParamsHash(), func() bool {
			v, err := a.Get(ctx, k, func(context.Context) (item, error) { return item{}, fmt.Errorf("unexpected load") })
			return err == nil && v.N == 1
		})
	}
}
