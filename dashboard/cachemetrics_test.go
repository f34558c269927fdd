package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/metrics"
)

type cacheReply struct {
	Endpoints []struct {
		Endpoint, Method string
		Entries, Hits    int64
		HitRate          float64 `json:"hit_rate"`
	}
	Tags []struct {
		Tag     string
		Members int64
	}
}

func TestCache(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
	var r cacheReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/cache", &r))
	require.Len(t, r.Endpoints, 1)
	e := r.Endpoints[0]
	require.Equal(t, demo.CachedEndpoint, e.Endpoint)
	require.EqualValues(t, demo.CacheEntries, e.Entries)
	require.EqualValues(t, demo.CacheHits, e.Hits)
	require.InDelta(t, float64(demo.CacheHits)/float64(demo.CacheHits+demo.CacheEntries), e.HitRate, 1e-9)
	require.Len(t, r.Tags, 2)
	require.Equal(t, demo.CacheTag, r.Tags[0].Tag)
	require.EqualValues(t, demo.CacheEntries, r.Tags[0].Members)

	code, body := f.post(t, "/api/cache/invalidate", url.Values{"tag": {demo.CacheTag}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"invalidated":2`)
	f.get(t, "/api/cache", &r)
	require.Empty(t, r.Endpoints)
	require.Contains(t, f.log.String(), "action=cache.invalidate")
}

func TestMetrics(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var r struct {
		HTTP struct {
			Total, Errors int64
			Endpoints     []struct {
				Endpoint         string
				Requests, Errors int64
			}
		}
		Metrics []struct {
			Name, Kind string
			Bounds     []float64
			Series     []struct {
				Labels  []string
				Value   int64
				Buckets []int64
				Count   int64
			}
		}
		History struct{ Total []int64 }
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/metrics", &r))
	require.EqualValues(t, demo.Requests, r.HTTP.Total)
	require.EqualValues(t, demo.Errors, r.HTTP.Errors)
	require.Len(t, r.HTTP.Endpoints, 1)
	require.EqualValues(t, demo.Requests, r.HTTP.Endpoints[0].Requests)
	require.Equal(t, []int64{demo.Requests}, r.History.Total)
	byName := map[string]int{}
	for i, m := range r.Metrics {
		byName[m.Name] = i
	}
	reqs := r.Metrics[byName["api_requests_total"]]
	require.Equal(t, "counter", reqs.Kind)
	var sum int64
	for _, s := range reqs.Series {
		sum += s.Value
	}
	require.EqualValues(t, demo.Requests, sum)
	lat := r.Metrics[byName["api_latency_ms"]]
	require.Equal(t, "histogram", lat.Kind)
	require.Len(t, lat.Series, 1)
	require.EqualValues(t, demo.Requests, lat.Series[0].Count)
	require.Len(t, lat.Series[0].Buckets, len(lat.Bounds)+1)
	require.EqualValues(t, demo.Requests, lat.Series[0].Buckets[len(lat.Bounds)])
}

// WithMetricsReader's options reach the page's Reader: with
// metrics.WithSharedKeys an endpoint counter another writer (the
// home-automation backend's Node service) INCRBYs shows on the page and
// the endpoints add up to the total; without it, it does not.
func TestMetricsReaderOptions(t *testing.T) {
	for _, shared := range []bool{false, true} {
		opts := []dashboard.Option{dashboard.WithToken(testToken)}
		if shared {
			opts = append(opts, dashboard.WithMetricsReader(metrics.WithSharedKeys()))
		}
		f := setup(t, opts...)
		ctx := f.env.Ctx()
		// The Node service's own writes: raw path, INCRBY.
		require.NoError(t, f.env.Client.IncrBy(ctx, f.env.NS.Prefix+"requests:endpoint:GET /api/forum/questions/123", 3).Err())
		require.NoError(t, f.env.Client.IncrBy(ctx, f.env.NS.Prefix+"requests:total", 3).Err())
		var r struct {
			HTTP struct {
				Total     int64
				Endpoints []struct {
					Endpoint string
					Requests int64
				}
			}
		}
		require.Equal(t, http.StatusOK, f.get(t, "/api/metrics", &r))
		require.EqualValues(t, demo.Requests+3, r.HTTP.Total)
		sum, node := int64(0), false
		for _, e := range r.HTTP.Endpoints {
			sum += e.Requests
			node = node || e.Endpoint == "GET /api/forum/questions/123"
		}
		require.Equal(t, shared, node, "the other writer's endpoint is on the page only WithSharedKeys")
		if shared {
			require.Equal(t, r.HTTP.Total, sum, "the endpoints add up to the total")
		}
	}
}
