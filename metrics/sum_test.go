package metrics

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// A Sum gauge may go below zero (more closes than opens counted by this
// instance); its key then holds a negative integer, which the next flush
// must read as the gauge's value, not as foreign data.
func TestSumGaugeBelowZero(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec := newRecorder(t, e, nil)
	g, err := rec.Gauge("active_sessions", Sum)
	require.NoError(t, err)
	g.Add(-2)
	require.NoError(t, rec.Flush(ctx))
	gk := mustKey(t, e.NS, gaugeKey, "active_sessions", "-")
	assert.Equal(t, int64(-2), getInt(t, e, gk))
	g.Add(-1)
	require.NoError(t, rec.Flush(ctx), "a negative value in the key is the gauge's own")
	assert.Equal(t, int64(-3), getInt(t, e, gk))
	g.Add(5)
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, int64(2), getInt(t, e, gk))
}
