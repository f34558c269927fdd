package cache

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// TestLeaseCorruptWaitersWritesNothing: a lease another owner holds, with
// a waiters field that is not a count, fails a waiting caller with
// keys.ErrCorrupt naming the meta key and writes nothing, not even the
// deletion of a value of another type it met before (lease.lua deleted
// that value, then failed on HINCRBY with a raw ERR). A caller that does
// not wait never reads the field, and a count is counted.
func TestLeaseCorruptWaitersWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithLease(10*time.Second))
	s := c.Store()
	cfg := &fetchConfig{ttl: time.Minute}
	n := 0
	plant := func(value bool, waiters string) Ref {
		n++
		r, err := c.ref("t", NewKey("/waiters/"+strconv.Itoa(n), "GET", nil))
		require.NoError(t, err)
		if value { // a value of another type
			require.NoError(t, e.Client.RPush(ctx, r.value, "foreign").Err())
			require.NoError(t, e.Client.Expire(ctx, r.value, time.Minute).Err())
		}
		held := "other:" + strconv.FormatInt(e.Now().Add(time.Minute).UnixMilli(), 10)
		require.NoError(t, e.Client.HSet(ctx, r.meta, "lease", held, "waiters", waiters).Err())
		require.NoError(t, e.Client.Expire(ctx, r.meta, time.Minute).Err())
		return r
	}
	requireCorrupt := func(t *testing.T, err error, r Ref) {
		t.Helper()
		require.ErrorIs(t, err, keys.ErrCorrupt)
		var ce *keys.CorruptError
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, r.meta, ce.Key, "the error names the meta key")
	}
	for _, w := range []string{"x", "1.5", "-1", "01", "+1", " 1", "", "9223372036854775807"} {
		for _, value := range []bool{true, false} {
			t.Run("waiters "+strconv.Quote(w)+" value "+strconv.FormatBool(value), func(t *testing.T) {
				r := plant(value, w)
				before := e.Snapshot()
				_, _, err := s.lease(ctx, r, s.newID(), false, true, cfg)
				requireCorrupt(t, err, r)
				assert.Equal(t, before, e.Snapshot(), "a failing call writes nothing")
			})
		}
	}

	t.Run("Get", func(t *testing.T) {
		r := plant(false, "x")
		before := e.Snapshot()
		_, err := c.Get(ctx, NewKey("/waiters/"+strconv.Itoa(n), "GET", nil), func(context.Context) (item, error) {
			t.Error("the loader runs while another owner holds the lease")
			return item{}, nil
		})
		requireCorrupt(t, err, r)
		assert.Equal(t, before, e.Snapshot(), "a failing call writes nothing")
	})

	t.Run("not waiting", func(t *testing.T) {
		r := plant(true, "x")
		out, _, err := s.lease(ctx, r, s.newID(), false, false, cfg)
		require.NoError(t, err)
		assert.Equal(t, "held", out.state)
		assert.Zero(t, e.Client.Exists(ctx, r.value).Val(), "the value of another type is deleted")
		assert.Equal(t, "x", e.Client.HGet(ctx, r.meta, "waiters").Val(), "not counted")
	})

	t.Run("counted", func(t *testing.T) {
		r := plant(true, "3")
		out, _, err := s.lease(ctx, r, s.newID(), false, true, cfg)
		require.NoError(t, err)
		assert.Equal(t, "held", out.state)
		assert.Zero(t, e.Client.Exists(ctx, r.value).Val(), "the value of another type is deleted")
		assert.Equal(t, "4", e.Client.HGet(ctx, r.meta, "waiters").Val())
	})
}
