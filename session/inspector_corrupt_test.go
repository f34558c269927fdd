package session

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// TestIndexedUsersNamesTheWrongTypedKey: among many users' indexes, one
// index of another type is left out of IndexedUsers and reported with
// keys.ErrCorrupt naming that key, whichever key the SCAN returned first;
// the other users are all listed.
func TestIndexedUsersNamesTheWrongTypedKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for i := range 30 {
		k, err := indexKey.Key(e.NS, fmt.Sprint("u", i))
		require.NoError(t, err)
		require.NoError(t, e.Client.ZAdd(ctx, k, redis.Z{Score: 1, Member: "s"}).Err())
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
	}
	bad, err := indexKey.Key(e.NS, "bad")
	require.NoError(t, err)
	require.NoError(t, e.Client.RPush(ctx, bad, "x").Err())
	in, err := NewInspector(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	users, err := in.IndexedUsers(ctx, 100)
	assert.Len(t, users, 30)
	require.Error(t, err)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", bad)), "%v does not name %s", err, bad)
}
