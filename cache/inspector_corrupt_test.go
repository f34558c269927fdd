package cache

import (
	"fmt"
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
