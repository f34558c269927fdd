package metrics

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// readLatest returns the queue_depth series Reader.Read finds.
func readLatest(t testing.TB, e *harness.Env, ns keys.Namespace) []SeriesValues {
	t.Helper()
	rd, err := NewReader(e.Client, []Definition{{Name: "queue_depth", Kind: KindGauge, Labels: []string{"queue_name"}, Mode: Latest}}, WithNamespace(ns))
	require.NoError(t, err)
	snap, err := rd.Read(e.Ctx())
	require.NoError(t, err)
	require.Len(t, snap.Metrics, 1)
	return snap.Metrics[0].Series
}

// A Latest gauge is the latest Set by server time: B sets 5 after A set
// 10, and neither flush order nor A's later flushes put 10 back.
func TestLatestGaugeLatestSetWins(t *testing.T) {
	for _, aFirst := range []bool{false, true} {
		name := "b flushes first"
		if aFirst {
			name = "a flushes first"
		}
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			a := newRecorder(t, e, nil)
			b := newRecorder(t, e, nil)
			ga, err := a.Gauge("queue_depth", Latest, "queue_name")
			require.NoError(t, err)
			gb, err := b.Gauge("queue_depth", Latest, "queue_name")
			require.NoError(t, err)
			ga.Set(10, "emails")
			e.Advance(50 * time.Millisecond)
			gb.Set(5, "emails")
			first, second := b, a
			if aFirst {
				first, second = a, b
			}
			require.NoError(t, first.Flush(ctx))
			e.Advance(50 * time.Millisecond)
			require.NoError(t, second.Flush(ctx))
			gk := mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")
			assert.Equal(t, int64(5), getInt(t, e, gk))
			assert.Equal(t, []SeriesValues{{Labels: []string{"emails"}, Value: 5}}, readLatest(t, e, e.NS))
			for round := range 3 { // later flushes, in both orders, resend A's older Set
				e.Advance(50 * time.Millisecond)
				require.NoError(t, a.Flush(ctx))
				require.NoError(t, b.Flush(ctx))
				require.NoError(t, a.Flush(ctx))
				assert.Equal(t, int64(5), getInt(t, e, gk), "round %d", round)
				assert.Equal(t, []SeriesValues{{Labels: []string{"emails"}, Value: 5}}, readLatest(t, e, e.NS), "round %d", round)
			}
			// A's own later Set wins again.
			ga.Set(7, "emails")
			e.Advance(time.Millisecond)
			require.NoError(t, a.Flush(ctx))
			require.NoError(t, b.Flush(ctx))
			assert.Equal(t, int64(7), getInt(t, e, gk))
		})
	}
}

// With background flushers, the value never flips back to an older Set.
func TestLatestGaugeBackgroundFlushes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	newBg := func() *Recorder {
		r, err := New(e.Client, testOptions(e, WithInterval(10*time.Millisecond), WithHeartbeatTTL(time.Second))...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		return r
	}
	a, b := newBg(), newBg()
	ga, err := a.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	gb, err := b.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	gk := mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")
	ga.Set(10, "emails")
	harness.WaitFor(t, "a's Set flushed", func() bool { return getInt(t, e, gk) == 10 })
	e.Advance(50 * time.Millisecond)
	gb.Set(5, "emails")
	harness.WaitFor(t, "b's Set flushed", func() bool { return getInt(t, e, gk) == 5 })
	fa, fb := a.Stats().Flushes, b.Stats().Flushes
	var flips atomic.Int64
	harness.WaitFor(t, "ten more flushes of each", func() bool {
		if getInt(t, e, gk) != 5 {
			flips.Add(1)
		}
		return a.Stats().Flushes >= fa+10 && b.Stats().Flushes >= fb+10
	})
	assert.Zero(t, flips.Load(), "the value went back to an older Set")
	assert.Equal(t, int64(5), getInt(t, e, gk))
	assert.Equal(t, []SeriesValues{{Labels: []string{"emails"}, Value: 5}}, readLatest(t, e, e.NS))
	require.NoError(t, a.Close(ctx))
	require.NoError(t, b.Close(ctx))
	assert.Equal(t, int64(5), getInt(t, e, gk), "Close leaves the latest Set")
}

// Reader.Read returns a Latest gauge's series while its key holds a
// value: after the instance that set it closed or died, until gaugeTTL
// after the last flush.
func TestLatestGaugeRead(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const hb = 100 * time.Millisecond
	a := newRecorder(t, e, nil, WithInterval(50*time.Millisecond), WithHeartbeatTTL(hb))
	b := newRecorder(t, e, nil, WithInterval(50*time.Millisecond), WithHeartbeatTTL(hb))
	ga, err := a.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	gb, err := b.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	ga.Set(17, "emails")
	gb.Set(3, "sms")
	require.NoError(t, a.Flush(ctx))
	require.NoError(t, b.Flush(ctx))
	want := []SeriesValues{{Labels: []string{"emails"}, Value: 17}, {Labels: []string{"sms"}, Value: 3}}
	assert.Equal(t, want, readLatest(t, e, e.NS))

	a.abandon() // killed: no Close
	require.NoError(t, b.Close(ctx))
	e.Advance(hb + 10*time.Millisecond)
	assert.Equal(t, want, readLatest(t, e, e.NS), "the values outlive their instances")
	assert.Equal(t, int64(17), getInt(t, e, mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")))
	assert.Equal(t, int64(3), getInt(t, e, mustKey(t, e.NS, gaugeKey, "queue_depth", "sms")))
	e.RequireTTLs(nil)

	if e.Mini != nil { // a minute of waiting: miniredis only
		e.Advance(gaugeTTL)
		assert.Empty(t, readLatest(t, e, e.NS), "gone gaugeTTL after the last flush")
		n, err := e.Client.Exists(ctx, mustKey(t, e.NS, gaugeKey, "queue_depth", "emails"), mustKey(t, e.NS, totalsKey, "queue_depth")).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "the value and totals keys expired")
	}
}

// A Latest gauge's contributions as versions before the stamped Sets
// wrote them (parts "value:expires_ms:written_ms") are still read, and
// the later of an old and a new write wins.
func TestLatestGaugeReadsOldFormat(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	gk := mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")
	parts := mustKey(t, e.NS, partsKey, slotTag(keys.Slot(gk)), "queue_depth")
	now := e.Now().UnixMilli()
	old := func(v, written int64) string {
		return strconv.FormatInt(v, 10) + ":" + strconv.FormatInt(now+10_000, 10) + ":" + strconv.FormatInt(written, 10)
	}
	require.NoError(t, e.Client.HSet(ctx, parts, "emails|old.1", old(8, now-2), "emails|old.2", old(6, now-1), "sms|old.1", old(2, now-1)).Err())
	require.NoError(t, e.Client.PExpire(ctx, parts, 10*time.Second).Err())
	assert.Equal(t, []SeriesValues{{Labels: []string{"emails"}, Value: 6}, {Labels: []string{"sms"}, Value: 2}}, readLatest(t, e, e.NS))

	rec := newRecorder(t, e, nil)
	g, err := rec.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	e.Advance(10 * time.Millisecond)
	g.Set(4, "emails")
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, []SeriesValues{{Labels: []string{"emails"}, Value: 4}, {Labels: []string{"sms"}, Value: 2}}, readLatest(t, e, e.NS))
}
