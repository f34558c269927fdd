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
	const round = int64(100_000_000)
	at := time.UnixMilli(e.Now().UnixMilli() / round * round).UTC()
	_, err := c.IngestBatch(ctx, []Reading{TemperatureReading("hall", 21.5, "°C", at)})
	require.NoError(t, err)
	if e.Mini != nil {
		tg, err := c.target("test", Temperature, "hall")
		require.NoError(t, err)
		raw, err := e.Client.Eval(ctx, "return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]", []string{tg.raw}).Text()
		require.NoError(t, err)
		require.Contains(t, raw, "e+", "a script reads a round score in exponent form on miniredis: the case under test")
	}

	rs, err := c.Latest(ctx, Temperature, "hall", 1)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, at, rs[0].Time)
	rs, err = c.Range(ctx, Temperature, "hall", at.Add(-time.Minute), at.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, at, rs[0].Time)
	assert.Equal(t, 21.5, rs[0].Value)
}
