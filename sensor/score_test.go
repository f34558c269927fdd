package sensor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// A reading at a round millisecond is a reading like any other: miniredis
// prints its score in exponent form ("1.7955e+12" for 1795500000000)
// where real Redis prints every digit, and the queries that return times
// read from scores (Latest, Range) give the time back, not corruption.
func TestRoundReadingTime(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e, WithRetention(48*time.Hour))
	// The last multiple of 1e8 ms (at most 28 h ago), within the
	// retention.
	at := time.UnixMilli(harness.RoundBefore(e.Now().UnixMilli())).UTC()
	_, err := c.IngestBatch(ctx, []Reading{TemperatureReading("hall", 21.5, "°C", at)})
	require.NoError(t, err)
	tg, err := c.target("test", Temperature, "hall")
	require.NoError(t, err)
	e.RequireExponentScore("return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]", []string{tg.raw})

	rs, err := c.Latest(ctx, Temperature, "hall", 1)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, at, rs[0].Time)
	rs, err = c.Range(ctx, Temperature, "hall", at.Add(-time.Minute), at.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, at, rs[0].Time)
	assert.Equal(t, 21.5, rs[0].Value)
}
