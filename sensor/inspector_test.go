package sensor

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// newInspector returns an Inspector on the test's backend whose local
// clock is the server's, as newClient does.
func newInspector(t testing.TB, e *harness.Env, opts ...Option) *Inspector {
	t.Helper()
	in, err := NewInspector(e.Client, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	followServerClock(e, in.c)
	return in
}

// Inspector.ReadView reads what Locations, Types, Latest and Aggregate read, in one
// pipeline, and validates as they do.
func TestReadView(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	now := e.Now().Truncate(time.Millisecond)
	var batch []Reading
	for i := range 30 {
		at := now.Add(-time.Duration(i) * 7 * time.Minute)
		batch = append(batch, TemperatureReading("lab", 20+float64(i%5), "°C", at),
			GenericReading("humidity", "lab", 40, "%", at), TemperatureReading("hall", 18, "°C", at))
	}
	_, err := c.IngestBatch(ctx, batch)
	require.NoError(t, err)

	from, to := now.Add(-4*time.Hour), now
	locs, err := c.Locations(ctx)
	require.NoError(t, err)
	types, err := c.Types(ctx, "lab")
	require.NoError(t, err)
	latest, err := c.Latest(ctx, Temperature, "lab", 5)
	require.NoError(t, err)
	series, err := c.Aggregate(ctx, Temperature, "lab", from, to, time.Hour, AutoTier)
	require.NoError(t, err)
	require.Len(t, latest, 5)
	require.NotEmpty(t, series.Buckets)

	fresh := e.FreshClient()
	trips := harness.CountTrips(fresh)
	rc, err := NewInspector(fresh, WithNamespace(e.NS))
	require.NoError(t, err)
	followServerClock(e, rc.c)
	v, err := rc.ReadView(ctx, Temperature, "lab", 5, from, to, time.Hour)
	require.NoError(t, err)
	require.Equal(t, View{Locations: locs, Types: types, Latest: latest, Series: series}, v)
	if e.Backend != harness.Cluster { // a cluster splits the pipeline per node
		require.Equal(t, int64(1), trips.Total(), "one pipeline")
	}

	in := newInspector(t, e)
	_, err = in.ReadView(ctx, Temperature, "", 5, from, to, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = in.ReadView(ctx, Temperature, "lab", 0, from, to, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = in.ReadView(ctx, Temperature, "lab", 5, to, from, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
}

// NewInspector refuses what New refuses, and reads as a Client built
// from the same options: under its namespace, in its encoding, within
// its allowed locations.
func TestNewInspector(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	_, err := NewInspector(nil)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithNamespace(keys.Namespace{Prefix: "a{b"}))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithListCap(maxListCap+1))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithLocations("not a location!")) // refused by New too
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "new inspector")

	now := e.Now().Truncate(time.Millisecond)
	from, to := now.Add(-time.Hour), now
	c := newClient(t, e, WithCompactEncoding())
	_, err = c.Ingest(ctx, TemperatureReading("lab", 21, "°C", now.Add(-time.Minute)))
	require.NoError(t, err)

	in := newInspector(t, e, WithCompactEncoding(), WithDuplicates(LastWins)) // a write option, ignored
	v, err := in.ReadView(ctx, Temperature, "lab", 5, from, to, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{"lab"}, v.Locations)
	require.Equal(t, []string{Temperature}, v.Types)
	require.Len(t, v.Latest, 1)
	require.InDelta(t, 21.0, v.Latest[0].Value, 1e-9)

	// Another namespace sees nothing; another encoding reads its own keys.
	v, err = newInspector(t, e, WithNamespace(e.NS.Sub("other:"))).ReadView(ctx, Temperature, "lab", 5, from, to, time.Hour)
	require.NoError(t, err)
	require.Empty(t, v.Locations)
	require.Empty(t, v.Latest)
	v, err = newInspector(t, e).ReadView(ctx, Temperature, "lab", 5, from, to, time.Hour)
	require.NoError(t, err)
	require.Empty(t, v.Latest)

	// Allowed locations validate as a Client's do.
	_, err = newInspector(t, e, WithLocations("hall")).ReadView(ctx, Temperature, "lab", 5, from, to, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
}
