package cache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// An untagged Set is a MULTI/EXEC of plain commands, a tagged one the
// write script: both leave the same entry, and both make a load in
// flight lose its lease.
func TestSetWritesWhatTheScriptWrites(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithGrace(time.Minute))
	s := c.Store()
	ref := func(name string) Ref {
		r, err := c.ref("t", NewKey("/"+name, "GET", nil))
		require.NoError(t, err)
		return r
	}
	plain, tagged := ref("plain"), ref("tagged")
	// Metadata left by a load and a hit flush, which a Set replaces.
	for _, r := range []Ref{plain, tagged} {
		require.NoError(t, e.Client.HSet(ctx, r.meta, "lease", "x:1", "waiters", "2", "hflush", "f").Err())
		require.NoError(t, e.Client.Expire(ctx, r.meta, time.Hour).Err())
	}
	v := []byte(`{"name":"v"}`)
	require.NoError(t, s.Set(ctx, plain, v, WithTTL(time.Hour)))
	require.NoError(t, s.Set(ctx, tagged, v, WithTTL(time.Hour), WithTags("set-test")))
	for _, r := range []Ref{plain, tagged} {
		assert.Equal(t, string(v), e.Client.Get(ctx, r.value).Val())
		assert.InDelta(t, float64(time.Hour+time.Minute), float64(e.Client.PTTL(ctx, r.value).Val()), float64(2*time.Second))
		assert.InDelta(t, float64(time.Hour+time.Minute), float64(e.Client.PTTL(ctx, r.meta).Val()), float64(2*time.Second))
	}
	pm, tm := e.Client.HGetAll(ctx, plain.meta).Val(), e.Client.HGetAll(ctx, tagged.meta).Val()
	assert.NotEqual(t, pm["wid"], tm["wid"], "each Set has its own write ID")
	assert.NotEmpty(t, pm["wid"])
	delete(pm, "wid")
	delete(tm, "wid")
	if pm["created_at"] != tm["created_at"] { // a second ticked between them
		delete(pm, "created_at")
		delete(tm, "created_at")
	}
	assert.Equal(t, tm, pm, "the same metadata from both paths")
	assert.Equal(t, "60000:0", pm["hint"])
	assert.NotContains(t, pm, "lease")

	// A load in flight loses its lease to an untagged Set.
	inflight := ref("inflight")
	owner := s.newID()
	out, _, err := s.lease(ctx, inflight, owner, false, true, &fetchConfig{})
	require.NoError(t, err)
	require.Equal(t, "lease", out.state)
	require.NoError(t, s.Set(ctx, inflight, []byte(`{"name":"set"}`)))
	stored, err := s.writeBack(ctx, inflight, owner, []byte(`{"name":"load"}`), &fetchConfig{ttl: time.Minute}, 0, nil, "load")
	require.NoError(t, err)
	assert.False(t, stored, "the load lost its lease")
	assert.Equal(t, `{"name":"set"}`, e.Client.Get(ctx, inflight.value).Val())
}

// A Set whose transaction fails (here every MULTI/EXEC, as a redirect or
// a broken connection would fail one) is written by the write script.
func TestSetFallsBackToTheScript(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	var txs atomic.Int64
	rdb.AddHook(failTx{&txs})
	c := newCacheOn[item](t, rdb, e)
	k := NewKey("/fallback", "GET", nil)
	require.NoError(t, c.Set(ctx, k, item{Name: "set"}))
	assert.Positive(t, txs.Load(), "the transaction was tried")
	v, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{}, errors.New("no load") })
	require.NoError(t, err)
	assert.Equal(t, "set", v.Name)
}

// failTx fails every pipeline that holds a MULTI, without sending it.
type failTx struct{ n *atomic.Int64 }

func (failTx) DialHook(next redis.DialHook) redis.DialHook { return next }

func (failTx) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h failTx) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "multi" {
				h.n.Add(1)
				return &net.OpError{Op: "write", Err: errors.New("test: transaction refused")}
			}
		}
		return next(ctx, cmds)
	}
}

// Concurrent Sets share round trips (on a cluster, each in its own
// MULTI/EXEC in its master's pipeline) and each stores its entry whole.
func TestConcurrentSetsShareRoundTrips(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e)
	s := c.Store()
	const goroutines, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := NewKey("/concurrent", "GET", map[string][]string{"k": {fmt.Sprint(g*each + i)}})
				errs <- c.Set(ctx, k, item{N: g*each + i})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for n := range goroutines * each {
		r, err := c.ref("t", NewKey("/concurrent", "GET", map[string][]string{"k": {fmt.Sprint(n)}}))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf(`{"name":"","n":%d}`, n), e.Client.Get(ctx, r.value).Val())
		m := e.Client.HGetAll(ctx, r.meta).Val()
		assert.Equal(t, "0", m["hits"])
		assert.Equal(t, "0:0", m["hint"])
		assert.True(t, strings.HasPrefix(m["wid"], s.origin+"."), "wid %q", m["wid"])
		assert.Positive(t, e.Client.PTTL(ctx, r.meta).Val())
	}
}
