package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func TestAdvanceMovesTimeAndTTLs(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	k := e.NS.Prefix + "ttl"
	require.NoError(t, e.Client.Set(ctx, k, "v", time.Second).Err())
	before := e.Now()
	e.Advance(1100 * time.Millisecond)
	after := e.Now()
	assert.GreaterOrEqual(t, after.Sub(before), 1100*time.Millisecond)
	if !e.Real() {
		assert.Equal(t, 1100*time.Millisecond, after.Sub(before), "miniredis time moves exactly")
		// TIME seen by scripts moves too.
		v, err := e.Client.Eval(ctx, "return redis.call('TIME')[1]", nil).Result()
		require.NoError(t, err)
		assert.Equal(t, after.Unix(), mustInt(t, v))
	}
	assert.ErrorIs(t, e.Client.Get(ctx, k).Err(), redis.Nil, "the key expired")
}

func mustInt(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case string:
		var n int64
		for _, c := range x {
			n = n*10 + int64(c-'0')
		}
		return n
	case int64:
		return x
	}
	t.Fatalf("not an int: %T", v)
	return 0
}

func TestAdvanceSkipsLongWaitsOnRealBackends(t *testing.T) {
	e := harness.New(t)
	if !e.Real() {
		e.Advance(time.Hour) // instant on miniredis
		return
	}
	ran := false
	t.Run("long", func(t *testing.T) {
		harness.New(t).Advance(harness.MaxRealWait + time.Second)
		ran = true
	})
	assert.False(t, ran, "the subtest was skipped before returning")
}

func TestKeysAndCleanup(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var ns string
	t.Run("inner", func(t *testing.T) {
		in := harness.New(t)
		if in.Mini != nil {
			t.Skip("each miniredis test has its own server")
		}
		ns = in.NS.Prefix
		for _, k := range []string{"a", "b:{x}", "c"} {
			require.NoError(t, in.Client.Set(ctx, in.NS.Prefix+k, "1", time.Minute).Err())
		}
		assert.Len(t, in.Keys(), 3)
		assert.NotEqual(t, e.NS.Prefix, in.NS.Prefix, "namespaces are fresh")
	})
	if ns != "" {
		for _, k := range []string{"a", "b:{x}", "c"} {
			n, err := e.Client.Exists(ctx, ns+k).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "the inner test's keys were removed")
		}
	}
}

func TestRequireTTLs(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"with", "1", time.Minute).Err())
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"without", "1", 0).Err())
	e.RequireTTLs(func(k string) bool { return strings.HasSuffix(k, "without") })

	ft := &fakeT{TB: t}
	inner := &harness.Env{T: ft, Client: e.Client, NS: e.NS, Backend: e.Backend}
	inner.RequireTTLs(nil)
	assert.Contains(t, ft.errs, `key "`+e.NS.Prefix+`without" has no TTL`)
}

type fakeT struct {
	testing.TB
	errs string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errs += strings.TrimSpace(sprintf(format, args...)) + "\n"
}

func (f *fakeT) Helper() {}

func TestProxy(t *testing.T) {
	e := harness.New(t)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	ctx := e.Ctx()
	require.NoError(t, c.Ping(ctx).Err())

	t.Run("cut mid-operation", func(t *testing.T) {
		p.Stall()
		errc := make(chan error, 1)
		go func() { errc <- c.Ping(ctx).Err() }()
		time.Sleep(50 * time.Millisecond)
		p.CutNow()
		p.Resume()
		require.Error(t, <-errc, "the in-flight command fails")
		require.NoError(t, c.Ping(ctx).Err(), "a new connection works")
		assert.Positive(t, p.Cuts())
	})
	t.Run("stall", func(t *testing.T) {
		p.Stall()
		err := c.Ping(ctx).Err()
		p.Resume()
		require.Error(t, err, "a stalled server times out")
		require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 50*time.Millisecond)
	})
	t.Run("cut after bytes", func(t *testing.T) {
		k := e.NS.Prefix + "proxied"
		require.NoError(t, c.Ping(ctx).Err())
		p.CutAfter(10) // a SET command is longer than 10 bytes
		err := c.Set(ctx, k, "value", time.Minute).Err()
		require.Error(t, err)
		n, err := e.Client.Exists(ctx, k).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "the truncated command never reached the server")
		require.NoError(t, c.Set(ctx, k, "value", time.Minute).Err(), "later connections pass")
		p.CutAfter(-1)
	})
}

func TestSelected(t *testing.T) {
	e := harness.New(t)
	assert.Equal(t, harness.Selected(), e.Backend)
	assert.Equal(t, e.Backend != harness.Mini, e.Real())
	ctx, cancel := context.WithCancel(e.Ctx())
	cancel()
	assert.Error(t, e.Client.Ping(ctx).Err())
}

// FreshClient reaches the test's backend; CountTrips counts commands and
// pipelines apart, never the connection handshake.
func TestFreshClientCountsTrips(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := e.FreshClient()
	trips := harness.CountTrips(c)
	k := e.NS.Prefix + "{t}"
	if err := c.Set(ctx, k, "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	pipe.Incr(ctx, k)
	pipe.Incr(ctx, k)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Client.Get(ctx, k).Result(); err != nil || got != "3" {
		t.Fatalf("the shared client reads %q, %v; want 3", got, err)
	}
	if trips.Single() != 1 || trips.Pipelines() != 1 || trips.Total() != 2 {
		t.Fatalf("counted %d single, %d pipelines; want 1 and 1", trips.Single(), trips.Pipelines())
	}
	trips.Reset()
	if trips.Total() != 0 {
		t.Fatal("Reset")
	}
}
