package lock

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

// TestOverviewNamesTheWrongTypedKey: among many leases, one lock key of
// another type fails Overview with keys.ErrCorrupt naming that key,
// whichever key the SCAN returned first.
func TestOverviewNamesTheWrongTypedKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for i := range 30 {
		k, err := lockKey.Key(e.NS, "report", fmt.Sprint(i))
		require.NoError(t, err)
		require.NoError(t, e.Client.Set(ctx, k, "x", time.Minute).Err())
	}
	bad, err := lockKey.Key(e.NS, "report", "bad")
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, bad, "f", "v").Err())
	in, err := NewInspector(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = in.Overview(ctx, 100)
	require.Error(t, err)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", bad)), "%v does not name %s", err, bad)
}
