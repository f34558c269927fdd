package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
)

func TestSensors(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var r struct {
		Locations []string
		Location  string
		Types     []string
		Type      string
		Latest    []struct{ Value float64 }
		Buckets   []struct {
			Count    int64
			Min, Max float64
		}
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/sensors", &r))
	require.Equal(t, []string{demo.Location}, r.Locations)
	require.Equal(t, demo.Location, r.Location)
	require.Equal(t, []string{"temperature"}, r.Types)
	require.Len(t, r.Latest, demo.Readings)
	require.Equal(t, 20+float64(demo.Readings-1)/2, r.Latest[0].Value, "newest first")
	var n int64
	lo, hi := 1e9, -1e9
	for _, b := range r.Buckets {
		n += b.Count
		lo, hi = min(lo, b.Min), max(hi, b.Max)
	}
	require.EqualValues(t, demo.Readings, n)
	require.Equal(t, 20.0, lo)
	require.Equal(t, 20+float64(demo.Readings-1)/2, hi)

	// Naming the location and type (as the page does on refresh) reads
	// the same, in one pipeline.
	want := r
	require.Equal(t, http.StatusOK, f.get(t, "/api/sensors?location="+demo.Location+"&type=temperature", &r))
	require.Equal(t, want, r)
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/sensors?location="+demo.Location+"&type=temperature&hours=0", nil))
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/sensors?hours=0", nil))
}

func TestAIMemory(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var r struct {
		TokensToday  int64  `json:"tokens_today"`
		LastConv     string `json:"last_conversation"`
		Conversation string
		Length       int
		Tokens       int `json:"window_tokens"`
		System       string
		Messages     []struct{ Role, Content string }
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/aimemory?user="+demo.User, &r))
	require.EqualValues(t, demo.ConvTokens, r.TokensToday)
	require.Equal(t, demo.Conv, r.LastConv)
	require.Equal(t, demo.Conv, r.Conversation)
	require.Equal(t, demo.ConvMessages, r.Length)
	require.Equal(t, demo.ConvTokens, r.Tokens)
	require.NotEmpty(t, r.System)
	require.Len(t, r.Messages, demo.ConvMessages-1)
	require.Equal(t, "user", r.Messages[0].Role)

	// Naming the conversation, or guessing the last one (as the page does
	// on refresh), reads the same, in one pipeline; a wrong guess is
	// corrected.
	want := r
	for _, q := range []string{"&conv=" + demo.Conv, "&last=" + demo.Conv, "&last=another"} {
		r = want
		r.Messages = nil
		require.Equal(t, http.StatusOK, f.get(t, "/api/aimemory?user="+demo.User+q, &r), q)
		require.Equal(t, want, r, q)
	}
	var nobody map[string]any
	require.Equal(t, http.StatusOK, f.get(t, "/api/aimemory?user=nobody&last="+demo.Conv, &nobody))
	require.NotContains(t, nobody, "last_conversation")
	require.NotContains(t, nobody, "conversation")
	require.Empty(t, nobody["messages"])
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/aimemory", nil))
}
