package cache

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Every key pattern of the package, holding a wrong type, garbage or an
// out-of-range value: the operation that reads it heals it as documented
// (reports to the error hook with an error matching keys.ErrCorrupt that
// names the exact key, then reloads and overwrites), or fails with
// keys.ErrCorrupt naming that key.
func TestCorruptionTable(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var hooks hookLog
	c := newCache[item](t, e, WithErrorHook(hooks.hook), WithHitFlush(time.Hour))
	year3000 := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	set := func(v string, ttl time.Duration) func(k string) {
		return func(k string) { require.NoError(t, e.Client.Set(ctx, k, v, ttl).Err()) }
	}
	list := func(k string) {
		require.NoError(t, e.Client.RPush(ctx, k, "foreign").Err())
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
	}
	hash := func(fields ...string) func(k string) {
		return func(k string) {
			require.NoError(t, e.Client.HSet(ctx, k, fields).Err())
			require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
		}
	}
	zadd := func(score float64) func(k string) {
		return func(k string) {
			require.NoError(t, e.Client.ZAdd(ctx, k, redisZ(score, "foreign")).Err())
			require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
		}
	}
	good := item{Name: "good"}
	value := func(id string) (item, error) {
		return c.Get(ctx, NewKey("/c/"+id, "GET", nil), func(context.Context) (item, error) { return good, nil }, WithTags("t-"+id))
	}
	entry := func(id string) []string {
		k := NewKey("/c/"+id, "GET", nil)
		return []string{k.Endpoint, k.Method, k.ParamsHash()}
	}
	tag := func(id string) []string { return []string{"t-" + id} }
	invalidate := func(id string) (item, error) {
		_, err := c.InvalidateTag(ctx, "t-"+id)
		return good, err
	}
	for _, tc := range []struct {
		name    string
		key     *keys.Template
		args    func(id string) []string
		plant   func(k string)
		op      func(id string) (item, error)
		corrupt bool // else healed: the op succeeds and the hook names the key
		quiet   bool // healed without a report (nothing was lost)
	}{
		{"value: wrong type", entryKey, entry, list, value, false, false},
		{"value: garbage", entryKey, entry, set("{not json", time.Minute), value, false, false},
		{"value: no TTL", entryKey, entry, set(`{"name":"x"}`, 0), value, false, false},
		{"meta: wrong type", metaKey, entry, list, value, false, false},
		{"meta: garbage freshness", metaKey, entry, hash("fresh_until_ms", "abc"), value, false, true},
		{"meta: lease garbage", metaKey, entry, hash("lease", "xyz"), value, false, true},
		{"meta: freshness in year 3000", metaKey, entry, hash("fresh_until_ms", "32503680000000"), value, false, true},
		{"meta: hint garbage", metaKey, entry, hash("hint", "zz"), value, false, false},
		{"meta: hint beyond the longest TTL", metaKey, entry, hash("hint", "99999999999999:0"), value, false, false},
		{"meta: hint with a negative load time", metaKey, entry, hash("hint", "0:-5"), value, false, false},
		{"tag: wrong type", tagKey, tag, set("x", time.Minute), invalidate, true, false},
		{"tag: member expiring in year 3000", tagKey, tag, zadd(float64(year3000)), value, false, true},
		{"tag generation: wrong type", tagGenKey, tag, list, value, true, false},
		{"dying set: wrong type", tagDyingKey, tag, set("x", time.Minute), invalidate, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.NewReplacer(" ", "-", ":", "").Replace(tc.name)
			k, err := tc.key.Key(e.NS, tc.args(id)...)
			require.NoError(t, err)
			if tc.key == metaKey && tc.name != "meta: wrong type" && tc.name != "meta: lease garbage" {
				require.NoError(t, e.Client.Set(ctx, strings.Replace(k, "cache:meta:", "", 1), `{"name":"x"}`, time.Minute).Err())
			}
			tc.plant(k)
			before, _ := hooks.all()
			v, err := tc.op(id)
			if tc.corrupt {
				require.ErrorIs(t, err, keys.ErrCorrupt)
				var ce *keys.CorruptError
				require.True(t, errors.As(err, &ce))
				assert.Equal(t, k, ce.Key, "the error names the key")
				if tc.key == tagGenKey {
					meta, err := metaKey.Key(e.NS, entry(id)...)
					require.NoError(t, err)
					assert.False(t, e.Client.HExists(ctx, meta, "lease").Val(), "the lease granted beside the failed read is given back")
					_, err = c.GetMany(ctx, []Key{NewKey("/c/"+id, "GET", nil), NewKey("/c/"+id+"-2", "GET", nil)},
						func(_ context.Context, missing []Key) (map[Key]item, error) { return nil, nil }, WithTags("t-"+id))
					require.ErrorIs(t, err, keys.ErrCorrupt)
					assert.False(t, e.Client.HExists(ctx, meta, "lease").Val(), "GetMany gives its leases back too")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, good, v, "healed: reloaded")
			after, errs := hooks.all()
			if tc.quiet {
				return
			}
			require.Greater(t, len(after), len(before), "reported to the hook")
			assert.Equal(t, k, after[len(after)-1])
			assert.ErrorIs(t, errs[len(errs)-1], keys.ErrCorrupt)
			if tc.key == tagKey {
				return
			}
			again, err := tc.op(id)
			require.NoError(t, err)
			assert.Equal(t, good, again)
		})
	}
	tk, _ := tagKey.Key(e.NS, "t-tag-member-expiring-in-year-3000")
	assert.LessOrEqual(t, e.Client.PTTL(ctx, tk).Val(), 2*defaultMaxTTL, "a foreign score does not keep the tag past the longest life")
}
