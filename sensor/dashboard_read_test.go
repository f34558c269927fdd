package sensor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// ReadView reads what Locations, Types, Latest and Aggregate read, in one
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
	series, err := c.Aggregate(ctx, Temperature, "lab", from, to, time.Hour, WithTier(AutoTier))
	require.NoError(t, err)
	require.Len(t, latest, 5)
	require.NotEmpty(t, series.Buckets)

	fresh := e.FreshClient()
	trips := harness.CountTrips(fresh)
	rc, err := New(fresh, WithNamespace(e.NS))
	require.NoError(t, err)
	followServerClock(e, rc)
	v, err := rc.ReadView(ctx, Temperature, "lab", 5, from, to, time.Hour, WithTier(AutoTier))
	require.NoError(t, err)
	require.Equal(t, View{Locations: locs, Types: types, Latest: latest, Series: series}, v)
	if e.Backend != harness.Cluster { // a cluster splits the pipeline per node
		require.Equal(t, int64(1), trips.Total(), "one pipeline")
	}

	_, err = c.ReadView(ctx, Temperature, "", 5, from, to, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.ReadView(ctx, Temperature, "lab", 0, from, to, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.ReadView(ctx, Temperature, "lab", 5, to, from, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
}
