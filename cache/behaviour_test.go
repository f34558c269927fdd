package cache

import (
	"context"
	"errors"
	"fmt"
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

// cmdLog is a go-redis hook that records the commands sent.
type cmdLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd)
		return next(ctx, cmd)
	}
}
func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			l.add(c)
		}
		return next(ctx, cmds)
	}
}
func (l *cmdLog) add(c redis.Cmder) {
	s := c.Name()
	if s == "hello" || s == "client" {
		return // a new connection's handshake, not a command of the cache
	}
	if args := c.Args(); s == "evalsha" && len(args) > 1 {
		s += " " + fmt.Sprint(args[1])
	}
	l.mu.Lock()
	l.cmds = append(l.cmds, s)
	l.mu.Unlock()
}
func (l *cmdLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.cmds
	l.cmds = nil
	return out
}

// Hits write nothing: each is one pipeline of three plain reads; the
// counts reach the metadata in one pipeline per flush.
func TestHitsAreCountedInBatches(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	var log cmdLog
	rdb.AddHook(&log)
	c := newCacheOn[item](t, rdb, e, WithHitFlush(time.Hour))
	keys := make([]Key, 10)
	for i := range keys {
		keys[i] = NewKey("/h", "GET", map[string][]string{"i": {fmt.Sprint(i)}})
		_, err := c.Get(ctx, keys[i], func(context.Context) (item, error) { return item{N: i}, nil })
		require.NoError(t, err)
	}
	require.NoError(t, hitsOp.Load(ctx, rdb)) // else the first flush falls back to EVAL
	log.take()
	trips := harness.CountTrips(rdb)
	for round := 0; round < 5; round++ {
		for _, k := range keys {
			_, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{}, errors.New("no load on a hit") })
			require.NoError(t, err)
		}
	}
	sent := log.take()
	require.Len(t, sent, 3*5*len(keys))
	for i, cmd := range sent {
		assert.Equal(t, []string{"get", "pttl", "hget"}[i%3], cmd, "a hit sends three plain reads only")
	}
	assert.EqualValues(t, 5*len(keys), trips.Pipelines(), "one round trip per hit")
	assert.Zero(t, trips.Single())
	require.NoError(t, c.Flush(ctx))
	flush := log.take()
	for len(flush) > 0 && flush[0] == "exists" {
		flush = flush[1:] // on a cluster, the pipeline's lead per master (see script.Pipeline)
	}
	assert.Len(t, flush, len(keys), "one hits script per entry, in one pipeline")
	for _, k := range keys {
		ref, _ := c.ref("t", k)
		assert.Equal(t, "5", e.Client.HGet(ctx, ref.meta, "hits").Val())
	}
}

func TestNegativeCaching(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithNegativeTTL(time.Minute))
	calls := 0
	missing := func(context.Context) (item, error) {
		calls++
		return item{}, fmt.Errorf("no such file: %w", ErrNotFound)
	}
	k := NewKey("/api/v1/files/404", "GET", nil)
	for i := 0; i < 3; i++ {
		_, err := c.Get(ctx, k, missing, WithTags("files"))
		require.ErrorIs(t, err, ErrNotFound)
	}
	assert.Equal(t, 1, calls, "not found is cached")
	_, err := c.InvalidateTag(ctx, "files")
	require.NoError(t, err)
	v, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{Name: "created"}, nil }, WithTags("files"))
	require.NoError(t, err)
	assert.Equal(t, "created", v.Name, "a tag invalidation drops the cached not-found")

	plain := newCache[item](t, e)
	calls = 0
	for i := 0; i < 2; i++ {
		_, err := plain.Get(ctx, NewKey("/other", "GET", nil), missing)
		require.ErrorIs(t, err, ErrNotFound)
	}
	assert.Equal(t, 2, calls, "without WithNegativeTTL nothing is cached")
}

// Within the grace a stale value is served at once while one background
// refresh replaces it; with WithStaleOnError it is served when the loader
// fails.
func TestStaleServing(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	var hooks hookLog
	c := newCache[item](t, e, WithGrace(time.Minute), WithStaleOnError(), WithErrorHook(hooks.hook), WithBeta(0),
		WithPolicy(Policy{Default: time.Second}))
	k := NewKey("/s", "GET", nil)
	var n atomic.Int64
	load := func(context.Context) (item, error) { return item{N: int(n.Add(1))}, nil }
	_, err := c.Get(ctx, k, load)
	require.NoError(t, err)
	e.Advance(1100 * time.Millisecond)
	v, res, err := c.get(ctx, "get", k, load, nil)
	require.NoError(t, err)
	assert.Equal(t, Stale, res.Status)
	assert.Equal(t, 1, v.N, "the stale value, at once")
	// A refreshed value: 2, or 3 when a stale read that raced the first
	// refresh's write started a second one.
	deadline := time.Now().Add(10 * time.Second)
	refreshed := 0
	for {
		v, res, err := c.get(ctx, "get", k, load, nil)
		if err == nil && res.Status == Hit && v.N >= 2 {
			refreshed = v.N
			break
		}
		if time.Now().After(deadline) {
			_, errs := hooks.all()
			t.Fatalf("no background refresh: last %v %+v %v; stats %+v; hook %v", v, res, err, c.Stats(), errs)
		}
		time.Sleep(time.Millisecond)
	}
	// A second refresh, started by a stale read that raced the first
	// one's write, may still be writing: were it to land after the clock
	// moves below, the entry would be fresh again and served as a hit.
	c.s.bg.Wait()

	// Stale-on-error: without a grace-window serve (the caller's config has
	// no grace), a failing loader falls back to the stale value.
	e.Advance(1100 * time.Millisecond)
	boom := errors.New("db down")
	v, res, err = c.get(ctx, "get", k, func(context.Context) (item, error) { return item{}, boom }, []FetchOption{WithStaleWhileRevalidate(0)})
	require.NoError(t, err)
	assert.Equal(t, Stale, res.Status)
	assert.GreaterOrEqual(t, v.N, refreshed, "the last stored value (a raced refresh may still have landed)")
	assert.LessOrEqual(t, v.N, int(n.Load()))
	_, errs := hooks.all()
	require.NotEmpty(t, errs)
	assert.ErrorIs(t, errs[len(errs)-1], boom, "the loader's error goes to the hook")
}

func TestBadInput(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	_, err := New[item](nil)
	assert.ErrorIs(t, err, ErrInvalid)
	noTimeout := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noTimeout.Close()
	_, err = New[item](noTimeout)
	assert.ErrorIs(t, err, ErrInvalid, "a client that ignores deadlines")
	for name, opt := range map[string]Option{
		"max TTL":      WithMaxTTL(-time.Second),
		"grace":        WithGrace(-time.Second),
		"negative TTL": WithNegativeTTL(-1),
		"beta":         WithBeta(-1),
		"lease":        WithLease(time.Millisecond),
		"load timeout": WithLoadTimeout(time.Hour),
		"value size":   WithMaxValueSize(0),
		"hit flush":    WithHitFlush(time.Millisecond),
		"pipelining":   WithPipelining(-1),
		"local size":   WithLocal(-1, 0),
		"namespace":    WithNamespace(keys.Namespace{Prefix: "a{b"}),
		"policy TTL":   WithPolicy(Policy{Rules: []Rule{{Endpoint: "/x", TTL: -time.Second}}}),
		"policy star":  WithPolicy(Policy{Rules: []Rule{{Endpoint: "/x/*/y", TTL: time.Second}}}),
		"policy max":   WithPolicy(Policy{Rules: []Rule{{Endpoint: "/x", TTL: 48 * time.Hour}}}),
	} {
		_, err := New[item](e.Client, opt)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	c := newCache[item](t, e, WithMaxValueSize(64))
	load := func(context.Context) (item, error) { return item{}, nil }
	for name, f := range map[string]func() error{
		"empty endpoint": func() error { _, err := c.Get(ctx, Key{Method: "GET"}, load); return err },
		"empty method":   func() error { _, err := c.Get(ctx, Key{Endpoint: "/x"}, load); return err },
		"negative TTL":   func() error { _, err := c.Get(ctx, NewKey("/x", "GET", nil), load, WithTTL(-time.Second)); return err },
		"TTL above max":  func() error { return c.Set(ctx, NewKey("/x", "GET", nil), item{}, WithTTL(25*time.Hour)) },
		"oversize value": func() error { return c.Set(ctx, NewKey("/x", "GET", nil), item{Name: string(make([]byte, 100))}) },
		"too many tags":  func() error { return c.Set(ctx, NewKey("/x", "GET", nil), item{}, WithTags(make([]string, 33)...)) },
		"empty tag":      func() error { return c.Set(ctx, NewKey("/x", "GET", nil), item{}, WithTags("")) },
		"nil loader":     func() error { _, err := c.Get(ctx, NewKey("/x", "GET", nil), nil); return err },
	} {
		assert.ErrorIs(t, f(), ErrInvalid, name)
	}
	assert.Empty(t, e.Keys(), "nothing written")
}

func TestGetMany(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithNegativeTTL(time.Minute))
	ks := make([]Key, 20)
	for i := range ks {
		ks[i] = NewKey("/api/v1/files/"+fmt.Sprint(i), "GET", nil)
	}
	require.NoError(t, c.Set(ctx, ks[0], item{Name: "cached"}))
	var calls [][]Key
	load := func(_ context.Context, missing []Key) (map[Key]item, error) {
		calls = append(calls, missing)
		out := map[Key]item{}
		for _, k := range missing {
			if k != ks[19] { // 19 does not exist
				out[k] = item{Name: k.Endpoint}
			}
		}
		return out, nil
	}
	got, err := c.GetMany(ctx, ks, load)
	require.NoError(t, err)
	require.Len(t, calls, 1)
	assert.Len(t, calls[0], 19, "one loader call for the 19 missing keys")
	assert.Len(t, got, 19)
	assert.Equal(t, "cached", got[ks[0]].Name)
	assert.Equal(t, ks[5].Endpoint, got[ks[5]].Name)
	_, ok := got[ks[19]]
	assert.False(t, ok)
	got, err = c.GetMany(ctx, ks, load)
	require.NoError(t, err)
	assert.Len(t, calls, 1, "all hits (and a cached not-found) the second time")
	assert.Len(t, got, 19)
}

// Each write whose reply is lost after the server ran it, and which
// go-redis sends again, reports its first outcome and counts nothing
// twice.
func TestLostReplyReportsFirstOutcome(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c := newCacheOn[item](t, pc, e, WithHitFlush(time.Hour))
	for _, op := range []interface {
		Load(context.Context, redis.UniversalClient) error
	}{readOp, leaseOp, writeOp, releaseOp, deleteOp, tagAddOp, tagGenOp, tagBumpOp, hitsOp} {
		require.NoError(t, op.Load(ctx, pc), "EVALSHA must not fall back to EVAL, so the SHA is on the wire")
	}
	lost := func(t *testing.T, sha string, f func()) {
		t.Helper()
		before := p.Lost()
		p.LoseReply(sha)
		f()
		require.Equal(t, before+1, p.Lost(), "one reply lost")
	}
	loads := 0
	load := func(context.Context) (item, error) { loads++; return item{N: loads}, nil }

	t.Run("lease and write-back", func(t *testing.T) {
		for _, sha := range []string{leaseOp.Script().Hash(), writeOp.Script().Hash(), tagGenOp.Script().Hash(), tagAddOp.Script().Hash()} {
			k := NewKey("/replay", "GET", map[string][]string{"sha": {sha}})
			loads = 0
			lost(t, sha, func() {
				v, res, err := c.get(ctx, "get", k, load, []FetchOption{WithTags("replay")})
				require.NoError(t, err)
				assert.Equal(t, 1, v.N)
				assert.True(t, res.Stored, "the replayed write reports the store")
			})
			assert.Equal(t, 1, loads, "one load")
			v, err := c.Get(ctx, k, load)
			require.NoError(t, err)
			assert.Equal(t, 1, v.N, "stored once, and hit")
		}
	})
	t.Run("set, delete, release", func(t *testing.T) {
		k := NewKey("/replay-set", "GET", nil)
		// An untagged Set is one MULTI/EXEC of plain commands: its
		// reply is lost by the value it carries.
		lost(t, "replayed-set", func() { require.NoError(t, c.Set(ctx, k, item{Name: "replayed-set"})) })
		v, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{}, errors.New("no load") })
		require.NoError(t, err)
		assert.Equal(t, "replayed-set", v.Name, "the Set stored its value")
		lost(t, writeOp.Script().Hash(), func() { require.NoError(t, c.Set(ctx, k, item{Name: "set"}, WithTags("replay-set"))) })
		lost(t, deleteOp.Script().Hash(), func() { require.NoError(t, c.Delete(ctx, k)) })
		ref, _ := c.ref("t", k)
		assert.Zero(t, e.Client.Exists(ctx, ref.value, ref.meta).Val())
		boom := errors.New("boom")
		lost(t, releaseOp.Script().Hash(), func() {
			_, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{}, boom })
			require.ErrorIs(t, err, boom)
		})
		assert.Zero(t, e.Client.Exists(ctx, ref.meta).Val(), "the lease is gone")
	})
	t.Run("hits", func(t *testing.T) {
		k := NewKey("/replay-hits", "GET", nil)
		_, err := c.Get(ctx, k, load)
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			_, err := c.Get(ctx, k, load)
			require.NoError(t, err)
		}
		lost(t, hitsOp.Script().Hash(), func() { require.NoError(t, c.Flush(ctx)) })
		ref, _ := c.ref("t", k)
		assert.Equal(t, "3", e.Client.HGet(ctx, ref.meta, "hits").Val(), "counted once")
	})
	t.Run("invalidate tag", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			require.NoError(t, c.Set(ctx, NewKey("/replay-tag", "GET", map[string][]string{"i": {fmt.Sprint(i)}}), item{}, WithTags("rt")))
		}
		lost(t, tagBumpOp.Script().Hash(), func() {
			n, err := c.InvalidateTag(ctx, "rt")
			require.NoError(t, err)
			assert.Equal(t, 5, n)
		})
	})
}

// The documented maxima, at the maximum, on every backend: maxTags tags
// on one entry (a pipeline of maxTags+1 scripts over as many slots), and
// a GetMany of 1,000 keys.
func TestMaxima(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e)
	tags := make([]string, maxTags)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag-%d", i)
	}
	k := NewKey("/many-tags", "GET", nil)
	_, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{N: 1}, nil }, WithTags(tags...))
	require.NoError(t, err)
	n, err := c.InvalidateTag(ctx, tags[maxTags-1])
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	ks := make([]Key, 1000)
	for i := range ks {
		ks[i] = NewKey("/bulk", "GET", map[string][]string{"i": {fmt.Sprint(i)}})
	}
	load := func(_ context.Context, missing []Key) (map[Key]item, error) {
		out := make(map[Key]item, len(missing))
		for _, k := range missing {
			out[k] = item{Name: k.Params}
		}
		return out, nil
	}
	got, err := c.GetMany(ctx, ks, load, WithTags("bulk"))
	require.NoError(t, err)
	assert.Len(t, got, 1000)
	got, err = c.GetMany(ctx, ks, func(context.Context, []Key) (map[Key]item, error) { return nil, errors.New("no load") })
	require.NoError(t, err)
	assert.Len(t, got, 1000)
	require.NoError(t, c.Delete(ctx, ks[0]))
	n, err = c.InvalidateTag(ctx, "bulk")
	require.NoError(t, err)
	assert.Equal(t, 999, n, "what it deleted: not the entry deleted before")
}

// Close waits for the work a Store runs in the background, here a
// refresh that a stale read started: once Close returns, the refresh has
// ended (and stored its value), so the program may close the client.
func TestCloseWaitsForBackgroundRefresh(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c, err := New[item](e.Client, WithNamespace(e.NS), WithGrace(time.Minute), WithBeta(0), WithPolicy(Policy{Default: time.Second}))
	require.NoError(t, err)
	k := NewKey("/close", "GET", nil)
	_, err = c.Get(ctx, k, func(context.Context) (item, error) { return item{N: 1}, nil })
	require.NoError(t, err)
	e.Advance(1100 * time.Millisecond)

	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	v, res, err := c.get(ctx, "get", k, func(context.Context) (item, error) {
		close(started)
		<-release
		finished.Store(true)
		return item{N: 2}, nil
	}, nil)
	require.NoError(t, err)
	require.Equal(t, Stale, res.Status)
	require.Equal(t, 1, v.N)
	<-started // the refresh runs

	closed := make(chan struct{})
	go func() {
		assert.NoError(t, c.Close())
		close(closed)
	}()
	harness.WaitFor(t, "Close to begin", func() bool {
		_, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{}, nil })
		return errors.Is(err, ErrClosed)
	})
	select {
	case <-closed:
		t.Fatal("Close returned while the refresh ran")
	default:
	}
	close(release)
	<-closed
	assert.True(t, finished.Load(), "the refresh ended before Close returned")
}

// A call's Grace bounds what it serves, whatever grace the stored entry
// has: a value 1 s stale, stored with a minute's grace, is served to a
// call without a Grace option (the Cache's minute) but loaded, as on a
// miss, by a call with WithStaleWhileRevalidate(100ms); so in Fetch, Get and FetchMany.
func TestCallGraceBoundsWhatIsServed(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithGrace(time.Minute), WithBeta(0), WithPolicy(Policy{Default: 500 * time.Millisecond}))
	s := c.Store()
	keysOf := func(name string) (Key, Ref) {
		k := NewKey("/g/"+name, "GET", nil)
		r, err := c.ref("test", k)
		require.NoError(t, err)
		return k, r
	}
	kGet, _ := keysOf("get")
	kWide, _ := keysOf("wide")
	_, rFetch := keysOf("fetch")
	_, rMany := keysOf("many")
	for _, k := range []Key{kGet, kWide} {
		require.NoError(t, c.Set(ctx, k, item{N: 1}))
	}
	for _, r := range []Ref{rFetch, rMany} {
		require.NoError(t, s.Set(ctx, r, []byte(`{"n":1}`), WithTTL(500*time.Millisecond), WithStaleWhileRevalidate(time.Minute)))
	}
	e.Advance(1500 * time.Millisecond) // every entry is 1 s stale

	var loads atomic.Int64
	load := func(context.Context) (item, error) { loads.Add(1); return item{N: 2}, nil }
	v, res, err := c.get(ctx, "get", kWide, load, nil)
	require.NoError(t, err)
	assert.Equal(t, Stale, res.Status, "within the Cache's minute of grace")
	assert.Equal(t, 1, v.N)

	v, res, err = c.get(ctx, "get", kGet, load, []FetchOption{WithStaleWhileRevalidate(100 * time.Millisecond)})
	require.NoError(t, err)
	assert.Equal(t, Loaded, res.Status, "1 s stale is beyond the call's 100ms grace")
	assert.Equal(t, 2, v.N)

	fres, err := s.Fetch(ctx, rFetch, func(context.Context) ([]byte, error) { loads.Add(1); return []byte(`{"n":2}`), nil },
		WithStaleWhileRevalidate(100*time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, Loaded, fres.Status)
	assert.Equal(t, `{"n":2}`, string(fres.Value))

	mres, err := s.FetchMany(ctx, []Ref{rMany}, func(_ context.Context, missing []Ref) (map[Ref][]byte, error) {
		loads.Add(1)
		out := map[Ref][]byte{}
		for _, r := range missing {
			out[r] = []byte(`{"n":2}`)
		}
		return out, nil
	}, WithStaleWhileRevalidate(100*time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, Loaded, mres[0].Status)
	assert.Equal(t, `{"n":2}`, string(mres[0].Value))
	assert.GreaterOrEqual(t, loads.Load(), int64(3), "the three bounded calls loaded (the wide one may refresh too)")
}
