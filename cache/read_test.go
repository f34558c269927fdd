package cache

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// A hit's freshness is the value's PTTL less the grace its metadata's
// hint records: the server's clock, whatever the application's says.
func TestHitFreshnessIsTheServers(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithBeta(0))
	k := NewKey("/fresh", "GET", nil)
	require.NoError(t, c.Set(ctx, k, item{N: 1}, WithTTL(10*time.Second), WithStaleWhileRevalidate(time.Minute)))
	ref, err := c.ref("t", k)
	require.NoError(t, err)
	meta := e.Client.HGetAll(ctx, ref.meta).Val()
	assert.Equal(t, "60000:0", meta["hint"], "grace and load time")
	_, err = time.Parse(time.RFC3339, meta["created_at"])
	assert.NoError(t, err, "created_at in RFC 3339")
	delete(meta, "created_at")
	delete(meta, "wid")
	assert.Equal(t, map[string]string{"hint": "60000:0", "hits": "0", "size_bytes": "17"}, meta, "no clock stored")
	_, res, err := c.get(ctx, "get", k, func(context.Context) (item, error) { return item{}, errors.New("no load") }, nil)
	require.NoError(t, err)
	assert.Equal(t, Hit, res.Status)
	assert.InDelta(t, float64(10*time.Second), float64(res.TTL), float64(time.Second), "freshness, not life")
	assert.LessOrEqual(t, res.TTL, 10*time.Second)
}

// Entries written by an earlier version of the package (metadata with
// delta_ms and no hint) are read by the read script: served with the
// freshness their fresh_until_ms says, stale within the grace.
func TestOlderMetadataIsReadByTheScript(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	var log cmdLog
	rdb.AddHook(&log)
	c := newCacheOn[item](t, rdb, e, WithBeta(0), WithGrace(time.Minute))
	now := e.Now().UnixMilli()
	plant := func(k Key, freshFor time.Duration) Ref {
		ref, err := c.ref("t", k)
		require.NoError(t, err)
		require.NoError(t, e.Client.Set(ctx, ref.value, `{"name":"old","n":7}`, freshFor+time.Minute).Err())
		require.NoError(t, e.Client.HSet(ctx, ref.meta, "created_at", "2026-01-16T10:00:00Z", "hits", 0, "size_bytes", 20,
			"fresh_until_ms", strconv.FormatInt(now+freshFor.Milliseconds(), 10), "delta_ms", 3, "wid", "old.1").Err())
		require.NoError(t, e.Client.PExpire(ctx, ref.meta, freshFor+time.Minute).Err())
		return ref
	}
	noLoad := func(context.Context) (item, error) { return item{}, errors.New("no load") }

	plant(NewKey("/old", "GET", nil), 20*time.Second)
	log.take()
	v, res, err := c.get(ctx, "get", NewKey("/old", "GET", nil), noLoad, nil)
	require.NoError(t, err)
	assert.Equal(t, item{Name: "old", N: 7}, v)
	assert.Equal(t, Hit, res.Status)
	assert.InDelta(t, float64(20*time.Second), float64(res.TTL), float64(2*time.Second))
	assert.Contains(t, log.take(), "evalsha "+readOp.Script().Hash(), "the read script reads it")

	plant(NewKey("/old-stale", "GET", nil), -time.Second)
	var n atomic.Int64
	v, res, err = c.get(ctx, "get", NewKey("/old-stale", "GET", nil), func(context.Context) (item, error) {
		return item{Name: "new", N: int(n.Add(1))}, nil
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, Stale, res.Status, "within the grace")
	assert.Equal(t, 7, v.N)
}

// A cached "not found" costs one round trip, like a hit.
func TestNegativeHitIsOneRoundTrip(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	c := newCacheOn[item](t, rdb, e, WithNegativeTTL(time.Minute))
	k := NewKey("/404", "GET", nil)
	calls := 0
	missing := func(context.Context) (item, error) { calls++; return item{}, ErrNotFound }
	_, err := c.Get(ctx, k, missing)
	require.ErrorIs(t, err, ErrNotFound)
	trips := harness.CountTrips(rdb)
	for i := 0; i < 5; i++ {
		_, err := c.Get(ctx, k, missing)
		require.ErrorIs(t, err, ErrNotFound)
	}
	assert.Equal(t, 1, calls)
	assert.EqualValues(t, 5, trips.Total(), "one pipeline per cached not-found")
	assert.EqualValues(t, 5, c.Stats().Negative)
}

// Hits racing with Sets, Deletes and cached not-founds of the same keys
// (writes landing between a hit's three reads) never report corruption
// and never fail: each read gets a value that was stored, or loads.
func TestHitsRacingWritesNeverReportCorruption(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var hooks hookLog
	c := newCache[item](t, e, WithErrorHook(hooks.hook), WithNegativeTTL(time.Minute), WithGrace(time.Second))
	ks := []Key{NewKey("/race", "GET", nil), NewKey("/race", "GET", map[string][]string{"p": {"2"}})}
	const rounds = 200
	var wg sync.WaitGroup
	var failed, wrong atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				k := ks[(g+i)%len(ks)]
				v, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{Name: "loaded"}, nil })
				switch {
				case errors.Is(err, ErrNotFound):
				case err != nil:
					failed.Add(1)
					t.Log(err)
				case v.Name != "loaded" && v.Name != "set":
					wrong.Add(1)
				}
			}
		}()
	}
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				k := ks[i%len(ks)]
				var err error
				switch (g + i) % 3 {
				case 0:
					err = c.Set(ctx, k, item{Name: "set"}, WithTTL(time.Duration(1+i%3)*time.Second))
				case 1:
					err = c.Delete(ctx, k)
				default:
					_, err = c.Get(ctx, k, func(context.Context) (item, error) { return item{}, ErrNotFound }, WithRevalidate())
					if errors.Is(err, ErrNotFound) {
						err = nil
					}
				}
				if err != nil {
					failed.Add(1)
					t.Log(err)
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, failed.Load())
	assert.Zero(t, wrong.Load())
	_, errs := hooks.all()
	for _, err := range errs {
		assert.NotErrorIs(t, err, keys.ErrCorrupt, "a torn read is not corruption")
	}
	assert.Zero(t, c.Stats().Corrupt)
}

// GetMany reads every entry in one pipeline of plain reads, whatever
// their slots, and the older layout through the read script.
func TestGetManyReadsPlainly(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	var log cmdLog
	rdb.AddHook(&log)
	c := newCacheOn[item](t, rdb, e)
	var ks []Key
	for i := 0; i < 20; i++ {
		k := NewKey("/many", "GET", map[string][]string{"i": {fmt.Sprint(i)}})
		ks = append(ks, k)
		require.NoError(t, c.Set(ctx, k, item{N: i}))
	}
	log.take()
	got, err := c.GetMany(ctx, ks, func(context.Context, []Key) (map[Key]item, error) {
		return nil, errors.New("no load")
	})
	require.NoError(t, err)
	require.Len(t, got, len(ks))
	for i, k := range ks {
		assert.Equal(t, i, got[k].N)
	}
	sent := log.take()
	assert.Len(t, sent, 3*len(ks), "three plain reads per entry, nothing else")
	for _, cmd := range sent {
		assert.Contains(t, []string{"get", "pttl", "hget"}, cmd)
	}
}

// The lease script finds a fresh value, or a cached not-found, in every
// layout: this version's (freshness from the TTLs and the hint), an older
// version's (fresh_until_ms), and a value without metadata (its TTL).
func TestLeaseReadsEveryLayout(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithNegativeTTL(time.Minute))
	s := c.Store()
	now := e.Now().UnixMilli()
	cfg := &fetchConfig{ttl: time.Minute}
	ref := func(name string) Ref {
		r, err := c.ref("t", NewKey("/"+name, "GET", nil))
		require.NoError(t, err)
		return r
	}
	lease := func(r Ref) leaseOut {
		out, _, err := s.lease(ctx, r, s.newID(), false, false, cfg)
		require.NoError(t, err)
		return out
	}

	cur := ref("current")
	require.NoError(t, s.Set(ctx, cur, []byte(`{"n":1}`), WithTTL(20*time.Second), WithStaleWhileRevalidate(time.Minute)))
	out := lease(cur)
	assert.Equal(t, "hit", out.state)
	assert.InDelta(t, float64(20*time.Second), float64(out.fresh), float64(2*time.Second), "the PTTL less the grace")

	stale := ref("current-stale")
	require.NoError(t, e.Client.Set(ctx, stale.value, `{"n":1}`, 30*time.Second).Err())
	require.NoError(t, e.Client.HSet(ctx, stale.meta, "hint", "60000:3").Err())
	assert.Equal(t, "lease", lease(stale).state, "stale by its hint: leased")

	old := ref("older")
	require.NoError(t, e.Client.Set(ctx, old.value, `{"n":2}`, time.Minute).Err())
	require.NoError(t, e.Client.HSet(ctx, old.meta, "fresh_until_ms", strconv.FormatInt(now+30_000, 10), "delta_ms", 3).Err())
	out = lease(old)
	assert.Equal(t, "hit", out.state)
	assert.InDelta(t, float64(30*time.Second), float64(out.fresh), float64(2*time.Second), "fresh_until_ms")

	bare := ref("bare")
	require.NoError(t, e.Client.Set(ctx, bare.value, `{"n":3}`, 40*time.Second).Err())
	out = lease(bare)
	assert.Equal(t, "hit", out.state)
	assert.InDelta(t, float64(40*time.Second), float64(out.fresh), float64(2*time.Second), "its TTL")

	neg := ref("neg")
	_, err := s.Fetch(ctx, neg, func(context.Context) ([]byte, error) { return nil, ErrNotFound })
	require.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, "neg", e.Client.HGet(ctx, neg.meta, "hint").Val())
	out = lease(neg)
	assert.Equal(t, "neg", out.state)
	assert.InDelta(t, float64(time.Minute), float64(out.fresh), float64(2*time.Second), "the marker's TTL")

	oldNeg := ref("older-neg")
	require.NoError(t, e.Client.HSet(ctx, oldNeg.meta, "state", "neg", "fresh_until_ms", strconv.FormatInt(now+30_000, 10)).Err())
	require.NoError(t, e.Client.Expire(ctx, oldNeg.meta, time.Minute).Err())
	assert.Equal(t, "neg", lease(oldNeg).state)
	_, err = c.Get(ctx, NewKey("/older-neg", "GET", nil), func(context.Context) (item, error) { return item{}, errors.New("no load") })
	require.ErrorIs(t, err, ErrNotFound, "read through the read script")
}

// Outages are not outcomes: hits on a stalled server, alone or queued
// behind a shared pipeline, fail with their own deadline, never as a miss
// or a not-found, and never call the loader; a cut connection is an
// error too.
func TestHitsOnAStalledServerFailByTheirDeadline(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c := newCacheOn[item](t, pc, e, WithNegativeTTL(time.Minute))
	k := NewKey("/stall", "GET", nil)
	require.NoError(t, c.Set(ctx, k, item{N: 1}))
	// A script call first (a miss of another key): on a cluster go-redis
	// fetches its command table (COMMAND) on a script call's first use,
	// waiting up to 5 s whatever the call's deadline, and the Set above,
	// plain commands in a transaction, does not fetch it.
	_, err := c.Get(ctx, NewKey("/stall-warm", "GET", nil), func(context.Context) (item, error) { return item{}, nil })
	require.NoError(t, err)
	p.Stall()
	t.Cleanup(p.Resume)
	var loads atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 20)
	took := make([]time.Duration, 20)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := time.Duration(100+10*g) * time.Millisecond
			cctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			start := time.Now()
			_, errs[g] = c.Get(cctx, k, func(context.Context) (item, error) { loads.Add(1); return item{}, nil })
			took[g] = time.Since(start) - d
		}()
	}
	wg.Wait()
	for g, err := range errs {
		require.Error(t, err, "call %d", g)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "call %d", g)
		assert.NotErrorIs(t, err, ErrNotFound)
		assert.Less(t, took[g], time.Second, "call %d returned %v after its deadline", g, took[g])
	}
	assert.Zero(t, loads.Load(), "an outage is not a miss")
	p.Resume()
	v, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{}, errors.New("no load") })
	require.NoError(t, err)
	assert.Equal(t, 1, v.N)
}

// The lease script's answers and TTLs: a miss, a fresh value, a lease
// held by another owner, a replay and a forced reload. A lease on
// metadata it creates lives for the lease, a lease on an entry's
// metadata keeps the entry's longer TTL, and a waiter is counted.
func TestLeaseStatesAndTTLs(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const lease = 10 * time.Second
	c := newCache[item](t, e, WithLease(lease))
	s := c.Store()
	cfg := &fetchConfig{ttl: time.Minute}
	ref := func(name string) Ref {
		r, err := c.ref("t", NewKey("/"+name, "GET", nil))
		require.NoError(t, err)
		return r
	}
	take := func(r Ref, owner string, force, wait bool) leaseOut {
		out, _, err := s.lease(ctx, r, owner, force, wait, cfg)
		require.NoError(t, err)
		return out
	}
	pttl := func(key string) time.Duration { return e.Client.PTTL(ctx, key).Val() }

	miss := ref("miss")
	first := s.newID()
	assert.Equal(t, "lease", take(miss, first, false, true).state)
	assert.True(t, strings.HasPrefix(e.Client.HGet(ctx, miss.meta, "lease").Val(), first+":"))
	assert.InDelta(t, float64(lease), float64(pttl(miss.meta)), float64(time.Second), "new metadata lives for the lease")

	held := take(miss, s.newID(), false, true)
	assert.Equal(t, "held", held.state)
	assert.InDelta(t, float64(lease), float64(held.remaining), float64(2*time.Second))
	assert.Equal(t, "1", e.Client.HGet(ctx, miss.meta, "waiters").Val(), "the waiter is counted")
	assert.Equal(t, "held", take(miss, s.newID(), false, false).state)
	assert.Equal(t, "1", e.Client.HGet(ctx, miss.meta, "waiters").Val(), "a caller that does not wait is not")
	assert.Equal(t, "lease", take(miss, first, false, true).state, "a replay finds its own lease")

	junk := ref("junk")
	require.NoError(t, e.Client.HSet(ctx, junk.meta, "hits", "3").Err())
	require.NoError(t, e.Client.Expire(ctx, junk.meta, time.Hour).Err())
	assert.Equal(t, "lease", take(junk, s.newID(), false, true).state)
	assert.LessOrEqual(t, pttl(junk.meta), lease, "metadata without an entry lives for the lease")

	hit := ref("hit")
	require.NoError(t, s.Set(ctx, hit, []byte(`{"n":1}`), WithTTL(time.Hour)))
	out := take(hit, s.newID(), false, true)
	assert.Equal(t, "hit", out.state)
	assert.Equal(t, `{"n":1}`, string(out.value))
	assert.InDelta(t, float64(time.Hour), float64(out.fresh), float64(2*time.Second))
	assert.Equal(t, "lease", take(hit, s.newID(), true, false).state)
	assert.InDelta(t, float64(time.Hour), float64(pttl(hit.meta)), float64(2*time.Second), "a lease keeps the entry's TTL")
}

// TestAPIMetaKeyIsTheTemplates checks the shortcut a hit takes to its meta
// key against the registered pattern, with and without hash tags and with
// arguments that need escaping.
func TestAPIMetaKeyIsTheTemplates(t *testing.T) {
	for _, ns := range []keys.Namespace{{}, {Prefix: "app:"}, {Prefix: "x:", NoHashTags: true}} {
		for _, k := range []Key{
			NewKey("/api/v1/files/list", "GET", nil),
			NewKey("/api/v1/files/{id}", "PUT", url.Values{"q": {"a:b%c"}}),
			{Endpoint: "a:b*c", Method: "GET"},
		} {
			h := k.ParamsHash()
			v, err := entryKey.Key(ns, k.Endpoint, k.Method, h)
			if err != nil {
				t.Fatal(err)
			}
			want, err := metaKey.Key(ns, k.Endpoint, k.Method, h)
			if err != nil {
				t.Fatal(err)
			}
			if got := apiMetaOf(ns, v); got != want {
				t.Errorf("apiMetaOf(%q) = %q, want %q", v, got, want)
			}
		}
	}
}

// TestLeaseRoundsUp holds the lease's rounding toward safety: a lease of
// 30.5 ms is 31 ms on the server, so a loader never holds it for less
// than WithLease asked (it was truncated to 30 ms before).
func TestLeaseRoundsUp(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const lease = minLease + 500*time.Microsecond // 30.5 ms
	c := newCache[item](t, e, WithLease(lease))
	s := c.Store()
	assert.Equal(t, int64(31), s.leaseArg)
	r, err := c.ref("t", NewKey("/round", "GET", nil))
	require.NoError(t, err)
	owner := s.newID()
	before := e.Now().UnixMilli()
	out, _, err := s.lease(ctx, r, owner, false, false, &fetchConfig{ttl: time.Minute})
	require.NoError(t, err)
	require.Equal(t, "lease", out.state)
	f := e.Client.HGet(ctx, r.meta, "lease").Val()
	require.True(t, strings.HasPrefix(f, owner+":"), f)
	deadline, err := strconv.ParseInt(strings.TrimPrefix(f, owner+":"), 10, 64)
	require.NoError(t, err)
	if e.Real() {
		assert.GreaterOrEqual(t, deadline-before, int64(31), "the deadline is at least 31 ms after the call began")
	} else {
		assert.Equal(t, before+31, deadline, "on the frozen clock, exactly 31 ms")
	}
}
