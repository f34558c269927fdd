package sensor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// After the locations index is lost (evicted, lost in a failover,
// flushed), the next reading of a location puts it back at once, from
// Ingest and from IngestBatch, whichever client writes it (issue 33,
// defect 11: a client that had refreshed the location less than a
// minute before skipped the refresh, and Locations missed the location
// for up to a minute).
func TestLocationsIndexRestoredByTheNextReading(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			other := newClient(t, e, enc.opts...)
			k, err := locationsKey.Key(e.NS)
			require.NoError(t, err)
			at := e.Now().Add(-time.Minute).Truncate(time.Second).Add(123 * time.Millisecond)
			locations := func() []string {
				t.Helper()
				locs, err := c.Locations(ctx)
				require.NoError(t, err)
				return locs
			}

			_, err = c.Ingest(ctx, TemperatureReading("hall", 20, "°C", at))
			require.NoError(t, err)
			_, err = c.IngestBatch(ctx, []Reading{GenericReading("pressure", "attic", 1013, "hPa", at)})
			require.NoError(t, err)
			_, err = other.Ingest(ctx, TemperatureReading("cellar", 12, "°C", at))
			require.NoError(t, err)
			require.Equal(t, []string{"attic", "cellar", "hall"}, locations())

			require.NoError(t, e.Client.Del(ctx, k).Err())
			require.Empty(t, locations())
			_, err = c.Ingest(ctx, TemperatureReading("hall", 21, "°C", at.Add(time.Second)))
			require.NoError(t, err)
			assert.Equal(t, []string{"hall"}, locations(), "Ingest restored the location its client had refreshed a second before")
			_, err = c.IngestBatch(ctx, []Reading{GenericReading("pressure", "attic", 1014, "hPa", at.Add(time.Second))})
			require.NoError(t, err)
			assert.Equal(t, []string{"attic", "hall"}, locations(), "IngestBatch too")
			_, err = c.Ingest(ctx, TemperatureReading("cellar", 13, "°C", at.Add(time.Second)))
			require.NoError(t, err)
			assert.Equal(t, []string{"attic", "cellar", "hall"}, locations(), "and another client's location")
			e.RequireTTLs(nil)
		})
	}
}

// A write moves its location's entry in the index forward only once it
// lags the reading by locationRefresh, so the entry's time trails the
// location's newest reading by less than that; Locations allows for it:
// a location is listed while it has a reading within the retention, and
// at most locationRefresh longer. Every write still records a location
// the index does not hold (TestLocationsIndexRestoredByTheNextReading).
func TestLocationsListedWhileAReadingIsWithinTheRetention(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	k, err := locationsKey.Key(e.NS)
	require.NoError(t, err)
	entry := func() time.Time {
		t.Helper()
		s, err := e.Client.ZScore(ctx, k, "hall").Result()
		require.NoError(t, err)
		return time.UnixMilli(int64(s))
	}
	listed := func() bool {
		t.Helper()
		locs, err := c.Locations(ctx)
		require.NoError(t, err)
		return len(locs) == 1 && locs[0] == "hall"
	}
	ingest := func() time.Time {
		t.Helper()
		at := e.Now().Truncate(time.Millisecond)
		_, err := c.Ingest(ctx, TemperatureReading("hall", 20, "°C", at))
		require.NoError(t, err)
		return at
	}

	t0 := ingest()
	assert.True(t, entry().Equal(t0), "a new location is recorded")
	if e.Mini == nil {
		return // the rest moves the clock by the retention
	}
	e.Advance(locationRefresh - time.Millisecond)
	ingest()
	assert.True(t, entry().Equal(t0), "a reading less than locationRefresh newer writes nothing")
	e.Advance(time.Millisecond)
	t1 := ingest()
	assert.True(t, entry().Equal(t1), "one locationRefresh newer moves the entry")
	e.Advance(locationRefresh / 2)
	last := ingest()
	require.True(t, entry().Equal(t1))

	// (Around each edge by a millisecond: miniredis drops a key at
	// its expiry's millisecond, Redis a millisecond later.)
	e.Advance(defaultRetention - time.Millisecond)
	assert.True(t, listed(), "listed while its last reading is within the retention")
	types, err := c.Types(ctx, "hall")
	require.NoError(t, err)
	assert.Equal(t, []string{Temperature}, types, "the last reading is within the retention")
	e.Advance(2 * time.Millisecond)
	types, err = c.Types(ctx, "hall")
	require.NoError(t, err)
	assert.Empty(t, types, "the last reading left the retention")
	assert.True(t, listed(), "the location stays listed a little longer")
	e.Advance(t1.Add(defaultRetention + locationRefresh - time.Millisecond).Sub(e.Now()))
	assert.True(t, listed(), "until locationRefresh after the entry's reading left the retention")
	assert.Positive(t, e.Client.PTTL(ctx, k).Val(), "the key lives as long as its entries are listed")
	e.Advance(2 * time.Millisecond)
	assert.False(t, listed())
	assert.LessOrEqual(t, e.Now().Sub(last.Add(defaultRetention)), locationRefresh+time.Millisecond, "at most locationRefresh after the last reading left")
}
