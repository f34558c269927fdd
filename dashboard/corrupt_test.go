package dashboard_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
)

// TestOverviewPagesLeaveCorruptKeysOut: on the locks, cache, sessions and
// metrics pages, a
// key of another type among those the page reads is left out and listed
// in the reply's corrupt list, naming the key; what else was read still
// shows (the page is not a 500).
func TestOverviewPagesLeaveCorruptKeysOut(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	ctx := f.env.Ctx()
	badLock := f.env.NS.Prefix + "lock:file:{broken}"
	badMeta := f.env.NS.Prefix + "cache:meta:cache:api:" + demo.CachedEndpoint + ":GET:{broken}"
	badIndex := f.env.NS.Prefix + "session:index:{broken}"
	require.NoError(t, f.env.Client.RPush(ctx, badIndex, "x").Err())
	badTotal := f.env.NS.Prefix + "requests:total"
	require.NoError(t, f.env.Client.Set(ctx, badTotal, "lots", 0).Err())
	require.NoError(t, f.env.Client.HSet(ctx, badLock, "f", "v").Err())
	require.NoError(t, f.env.Client.Set(ctx, badMeta, "x", time.Hour).Err())

	var locks struct {
		locksReply
		Corrupt []string
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/locks", &locks))
	requireLeftOut(t, locks.Corrupt, badLock)
	require.Len(t, locks.Locks, 1, "the lock held is read")
	require.Equal(t, demo.LockedFile, locks.Locks[0].ResourceID)
	require.Len(t, locks.Semaphores, 1)

	var cache struct {
		cacheReply
		Corrupt []string
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/cache", &cache))
	requireLeftOut(t, cache.Corrupt, badMeta)
	require.Len(t, cache.Endpoints, 1)
	require.EqualValues(t, demo.CacheEntries, cache.Endpoints[0].Entries, "the other entries count")

	var sessions struct {
		Users   []struct{ ID string }
		Corrupt []string
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/sessions", &sessions))
	requireLeftOut(t, sessions.Corrupt, badIndex)
	require.NotEmpty(t, sessions.Users, "the other users are listed")

	var metrics struct {
		Metrics []struct{ Name string }
		Corrupt []string
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/metrics", &metrics))
	requireLeftOut(t, metrics.Corrupt, badTotal)
	require.NotEmpty(t, metrics.Metrics, "the metrics are read")
}

// requireLeftOut requires a page's corrupt list to name key alone.
func requireLeftOut(t *testing.T, corrupt []string, key string) {
	t.Helper()
	require.Len(t, corrupt, 1)
	require.Contains(t, corrupt[0], fmt.Sprintf("%q", key))
}
