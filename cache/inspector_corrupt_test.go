package cache

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// TestOverviewNamesTheWrongTypedKey: among many entries' metadata, one
// meta key of another type is left out of Overview and reported with
// keys.ErrCorrupt naming that key, whichever key the SCAN returned
// first; the other entries are all counted.
func TestOverviewNamesTheWrongTypedKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for i := range 30 {
		k, err := metaKey.Key(e.NS, "users", "GET", fmt.Sprint(i))
		require.NoError(t, err)
		require.NoError(t, e.Client.HSet(ctx, k, "created_at", "1", "hits", "2", "size_bytes", "3").Err())
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
	}
	bad, err := metaKey.Key(e.NS, "users", "GET", "bad")
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, bad, "x", time.Minute).Err())
	in, err := NewInspector(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	ov, err := in.Overview(ctx)
	assert.Equal(t, []EndpointStat{{Endpoint: "users", Method: "GET", Entries: 30, Hits: 60, Bytes: 90}}, ov.Endpoints)
	require.Error(t, err)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", bad)), "%v does not name %s", err, bad)
}

// A "not found" or "uncacheable" marker is no entry, and metadata whose
// hits or size is not a count is left out and named, never counted as 0.
func TestEndpointStatsMarkersAndBadCounts(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithNegativeTTL(time.Minute))
	_, err := c.Get(ctx, NewKey("/users", "GET", nil), func(context.Context) (item, error) { return item{}, ErrNotFound })
	require.ErrorIs(t, err, ErrNotFound)
	_, err = c.Get(ctx, NewKey("/users", "GET", url.Values{"p": {"1"}}), func(ctx context.Context) (item, error) {
		return item{Name: "x"}, NoStore(ctx)
	})
	require.NoError(t, err)
	_, err = c.Get(ctx, NewKey("/users", "GET", url.Values{"p": {"2"}}), func(context.Context) (item, error) { return item{Name: "y"}, nil })
	require.NoError(t, err)
	in, err := NewInspector(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	stats, err := in.EndpointStats(ctx)
	require.NoError(t, err)
	require.Len(t, stats, 1)
	assert.EqualValues(t, 1, stats[0].Entries, "the markers are no entries")

	k := NewKey("/users", "GET", url.Values{"p": {"2"}})
	meta, err := metaKey.Key(e.NS, k.Endpoint, k.Method, k.ParamsHash())
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, meta, "hits", "abc").Err())
	stats, err = in.EndpointStats(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", meta))
	assert.Empty(t, stats)
}
