package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/ratelimit"
)

type rateReply struct {
	Limiters []string
	Blocks   []struct {
		ID          string
		RemainingMs int64 `json:"remaining_ms"`
	}
	Configured []string
	Lookup     []struct {
		Limiter          string
		Allowed          bool
		Limit, Remaining int
	}
	Config *ratelimit.Config
}

func TestRateLimits(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
	var r rateReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/ratelimits?id="+demo.LimitedID+"&key="+demo.APIKey, &r))
	require.Len(t, r.Blocks, 1)
	require.Equal(t, demo.BlockedID, r.Blocks[0].ID)
	require.Positive(t, r.Blocks[0].RemainingMs)
	require.Equal(t, []string{demo.APIKey}, r.Configured)
	require.Equal(t, demo.KeyPerMinute, r.Config.PerMinute)
	require.Empty(t, r.Lookup, "no limiter registered")

	code, body := f.post(t, "/api/ratelimit/config", url.Values{"key": {demo.APIKey}, "per_minute": {"250"}, "burst": {""}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	code, body = f.post(t, "/api/ratelimit/config", url.Values{"key": {demo.APIKey}, "per_minute": {"-1"}}, tokenHdr())
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = f.post(t, "/api/ratelimit/lift", url.Values{"id": {demo.BlockedID}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)

	f.get(t, "/api/ratelimits?key="+demo.APIKey, &r)
	require.Empty(t, r.Blocks)
	require.Equal(t, 250, r.Config.PerMinute)
	require.Contains(t, f.log.String(), "action=ratelimit.config")
}

func TestRateLimitLookup(t *testing.T) {
	env0 := setup(t) // only to fill a namespace; the limiter must share it
	lim, err := demo.Limiter(env0.env.Client, env0.env.NS)
	require.NoError(t, err)
	h, err := dashboard.New(dashboard.WithClient(env0.env.Client), dashboard.WithNamespace(env0.env.NS), dashboard.WithLimiter("api", lim),
		dashboard.WithToken(testToken), dashboard.WithWrites())
	require.NoError(t, err)
	f := &fixture{env: env0.env, srv: newServer(t, h), log: env0.log}
	var r rateReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/ratelimits?id="+demo.LimitedID, &r))
	require.Equal(t, []string{"api"}, r.Limiters)
	require.Len(t, r.Lookup, 1)
	require.True(t, r.Lookup[0].Allowed)
	require.Equal(t, demo.LimitPerMinute, r.Lookup[0].Limit)
	require.Equal(t, demo.LimitPerMinute-demo.Used, r.Lookup[0].Remaining)

	f.get(t, "/api/ratelimits?id="+demo.BlockedID, &r)
	require.False(t, r.Lookup[0].Allowed)

	// Lifting a block keeps the counters: the identifier that had used
	// some of its quota, blocked and lifted, still has used it.
	require.NoError(t, lim.Block(f.env.Ctx(), demo.LimitedID, time.Hour))
	f.get(t, "/api/ratelimits?id="+demo.LimitedID, &r)
	require.False(t, r.Lookup[0].Allowed)
	code, body := f.post(t, "/api/ratelimit/lift", url.Values{"id": {demo.LimitedID}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"was_blocked":true`)
	f.get(t, "/api/ratelimits?id="+demo.LimitedID, &r)
	require.True(t, r.Lookup[0].Allowed)
	require.Equal(t, demo.LimitPerMinute-demo.Used, r.Lookup[0].Remaining, "counters kept")
}
