package metrics

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
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

// A Sum gauge's contribution beyond ±(2^53 - 1) (a Set, or an Add's
// result) is ignored when recorded, as a Latest gauge's is: the flush
// never writes a part the script would then drop as dead (the value was
// lost after being stored), nothing is reported, nothing is left pending.
func TestSumGaugeOutOfRangeIgnoredAtRecord(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, reported := reportingRecorder(t, e)
	g, err := rec.Gauge("active_sessions", Sum, "pool")
	require.NoError(t, err)
	g.Set(5, "a")
	g.Set(1<<60, "a") // ignored: a keeps 5
	g.Set(-(1 << 60), "b")
	g.Add(-(1 << 62), "b") // ignored: b never set
	g.Set(maxGauge, "c")   // the bound itself is a value
	g.Add(1, "c")          // past it: ignored
	g.Set(-maxGauge, "d")
	g.Add(-1, "d")
	s := g.With("e")
	s.Set(maxGauge - 1)
	s.Add(1)
	s.Add(1) // ignored
	assert.Equal(t, int64(maxGauge), s.Value())
	for range 2 {
		require.NoError(t, rec.Flush(ctx))
	}
	require.NoError(t, reported())
	assert.False(t, rec.Stats().Pending)
	key := func(dim string) string { return mustKey(t, e.NS, gaugeKey, "active_sessions", dim) }
	assert.Equal(t, int64(5), getInt(t, e, key("a")))
	assert.Zero(t, e.Client.Exists(ctx, key("b")).Val(), "b was never set")
	assert.Equal(t, int64(maxGauge), getInt(t, e, key("c")))
	assert.Equal(t, int64(-maxGauge), getInt(t, e, key("d")))
	assert.Equal(t, int64(maxGauge), getInt(t, e, key("e")))

	// Every part written is one the script reads back as live.
	parts := mustKey(t, e.NS, partsKey, slotTag(keys.Slot(key("a"))), "active_sessions")
	fields, err := e.Client.HGetAll(ctx, parts).Result()
	require.NoError(t, err)
	assert.Len(t, fields, 4, "a, c, d, e: %v", fields)
	for f, v := range fields {
		n, err := strconv.ParseInt(strings.SplitN(v, ":", 2)[0], 10, 64)
		require.NoError(t, err, f)
		assert.LessOrEqual(t, n, int64(maxGauge), f)
		assert.GreaterOrEqual(t, n, int64(-maxGauge), f)
	}

	rd, err := NewReader(e.Client, rec.Definitions(), WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.NoError(t, err)
	require.Len(t, snap.Metrics, 1)
	assert.ElementsMatch(t, []SeriesValues{
		{Labels: []string{"a"}, Value: 5},
		{Labels: []string{"c"}, Value: maxGauge},
		{Labels: []string{"d"}, Value: -maxGauge},
		{Labels: []string{"e"}, Value: maxGauge},
	}, snap.Metrics[0].Series)
}

// Script side: a gauge contribution (p) beyond ±(2^53 - 1) refuses the
// batch before anything is written, as a Latest gauge's value (l) does,
// instead of storing a part that the next read of the parts drops.
func TestSumGaugeApplyRefusesOutOfRangePart(t *testing.T) {
	e := harness.New(t)
	rec, _ := reportingRecorder(t, e)
	target := mustKey(t, e.NS, gaugeKey, "active_sessions", "-")
	parts := mustKey(t, e.NS, partsKey, slotTag(keys.Slot(target)), "active_sessions")
	totals := mustKey(t, e.NS, totalsKey, "active_sessions")
	before := e.Snapshot()
	for i, v := range []string{"9007199254740992", "-9007199254740992", "1152921504606846976", "1.5", "x"} {
		_, err := sendOps(t, rec, int64(10+i), target, func(g *group) {
			g.args = append(g.args, "h", g.key(totals), "other", 1, counterPX) // valid, first
			g.args = append(g.args, "p", g.key(parts), "-|"+rec.Instance(), v)
			g.args = append(g.args, "s", g.key(target), g.key(parts), "-", "sum", 0, gaugePX)
		})
		require.ErrorIs(t, err, ErrInvalid, v)
		assert.Equal(t, before, e.Snapshot(), v)
	}
	// The bound itself applies.
	_, err := sendOps(t, rec, 20, target, func(g *group) {
		g.args = append(g.args, "p", g.key(parts), "-|"+rec.Instance(), "-9007199254740991")
		g.args = append(g.args, "s", g.key(target), g.key(parts), "-", "sum", 0, gaugePX)
	})
	require.NoError(t, err)
	assert.Equal(t, int64(-maxGauge), getInt(t, e, target))
}

// Two instances' contributions that add up past ±(2^53 - 1) give a value
// held at the bound: an integer that the next flush and the Reader read
// back, never reported as data this package did not write.
func TestSumGaugeTotalHeldAtTheBound(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var flushes []func()
	var gauges []*Gauge
	var reports []func() error
	var recDefs []Definition
	for range 2 {
		rec, reported := reportingRecorder(t, e)
		g, err := rec.Gauge("active_sessions", Sum, "pool")
		require.NoError(t, err)
		g.Set(maxGauge, "a")
		g.Set(-maxGauge, "b")
		recDefs = rec.Definitions()
		gauges = append(gauges, g)
		reports = append(reports, reported)
		flushes = append(flushes, func() { require.NoError(t, rec.Flush(ctx)) })
	}
	flushes[0]()
	flushes[1]()
	gauges[0].Set(maxGauge-1, "a") // the next flush reads the total back
	gauges[0].Set(1-maxGauge, "b")
	flushes[0]()
	for _, r := range reports {
		require.NoError(t, r())
	}
	key := func(dim string) string { return mustKey(t, e.NS, gaugeKey, "active_sessions", dim) }
	assert.Equal(t, int64(maxGauge), getInt(t, e, key("a")))
	assert.Equal(t, int64(-maxGauge), getInt(t, e, key("b")))

	rd, err := NewReader(e.Client, recDefs, WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.NoError(t, err)
	require.Len(t, snap.Metrics, 1)
	assert.ElementsMatch(t, []SeriesValues{{Labels: []string{"a"}, Value: maxGauge}, {Labels: []string{"b"}, Value: -maxGauge}}, snap.Metrics[0].Series)
}
