package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/keys"
)

// keyState is what a read must not change about a key: its serialized
// value and its remaining time to live.
type keyState struct {
	dump string
	ttl  time.Duration
}

// snapshot DUMPs every key under the test's namespace.
func snapshot(t *testing.T, f *fixture) map[string]keyState {
	t.Helper()
	out := map[string]keyState{}
	for _, k := range f.env.Keys() {
		d, err := f.env.Client.Dump(f.env.Ctx(), k).Result()
		require.NoError(t, err, k)
		ttl, err := f.env.Client.PTTL(f.env.Ctx(), k).Result()
		require.NoError(t, err, k)
		out[k] = keyState{d, ttl}
	}
	return out
}

// pageReads are the requests the page makes on every one of its pages
// over the demo data, plus an inspect of every key.
func pageReads(keys []string) []string {
	paths := []string{"/api/config", "/api/schema", "/api/queues", "/api/queue?name=" + demo.Queue,
		"/api/ratelimits", "/api/ratelimits?id=" + demo.LimitedID, "/api/ratelimits?key=" + demo.APIKey,
		"/api/presence", "/api/presence?user=" + demo.Admin, "/api/locks", "/api/sensors",
		"/api/sensors?location=" + demo.Location, "/api/cache", "/api/metrics",
		"/api/aimemory?user=" + demo.User, "/api/aimemory?user=" + demo.User + "&conv=" + demo.Conv,
		"/api/sessions", "/api/sessions?user=" + demo.User}
	for _, k := range keys {
		paths = append(paths, "/api/inspect?key="+url.QueryEscape(k))
	}
	return paths
}

// Reading every page, and inspecting every key, leaves the keyspace
// byte-identical: the same keys, the same DUMP of each, no TTL moved
// (beyond the time the reads took); and no reply carries a session ID.
func TestReadingEveryPageChangesNothing(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	if !f.env.Real() {
		t.Skip("DUMP needs a real Redis")
	}
	reg, err := keys.Compose(dashboard.Schemas()...)
	require.NoError(t, err)
	var sessionIDs []string
	for _, k := range f.env.Keys() {
		if tm, args, ok := reg.Match(f.env.NS, k); ok {
			for i, p := range tm.Params() {
				if p == "session_id" {
					sessionIDs = append(sessionIDs, args[i])
				}
			}
		}
	}
	require.NotEmpty(t, sessionIDs, "the demo data has sessions")

	before := snapshot(t, f)
	start := time.Now()
	for _, p := range pageReads(f.env.Keys()) {
		req, _ := http.NewRequest("GET", f.srv.URL+p, nil)
		req.Header.Set(dashboard.TokenHeader, testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, p)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 500, "%s: %s", p, b)
		for _, id := range sessionIDs {
			require.False(t, strings.Contains(string(b), id), "%s shows session ID %s: %s", p, id, b)
		}
	}
	took := time.Since(start)
	after := snapshot(t, f)

	require.Len(t, after, len(before), "the reads created or deleted keys")
	for k, b := range before {
		a, ok := after[k]
		require.True(t, ok, "%s was deleted", k)
		require.Equal(t, b.dump, a.dump, "%s changed", k)
		if b.ttl < 0 {
			require.Equal(t, b.ttl, a.ttl, "%s gained a TTL", k)
			continue
		}
		require.LessOrEqual(t, a.ttl, b.ttl, "%s's TTL was extended", k)
		require.GreaterOrEqual(t, a.ttl, b.ttl-took-time.Second, "%s's TTL was shortened", k)
	}
}
