package metrics

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// A call that fails writes nothing: every test below plants one bad key
// or gives one bad value, snapshots the namespace, makes the call, and
// requires the error and the snapshot unchanged.

// reportingRecorder returns a recorder without flusher whose reported
// errors (the keys a flush skipped) are returned by the func.
// Its Close is bounded: a batch the server refuses is retried until the
// context ends.
func reportingRecorder(t *testing.T, e *harness.Env, opts ...Option) (*Recorder, func() error) {
	t.Helper()
	var mu sync.Mutex
	var reported []error
	rec, err := New(e.Client, append(testOptions(e, WithoutFlusher(), WithErrorHandler(func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	})), opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = rec.Close(ctx)
	})
	return rec, func() error {
		mu.Lock()
		defer mu.Unlock()
		return errors.Join(reported...)
	}
}

// sendOps applies one hand-built batch of operations, all in target's
// slot, the way a flush does (fill adds them to the group), and returns
// the group's ledger key and the batch's error.
func sendOps(t *testing.T, rec *Recorder, seq int64, target string, fill func(g *group)) (string, error) {
	t.Helper()
	b := &builder{r: rec, groups: map[int]*group{}}
	g := b.group(target)
	fill(g)
	g.args[1] = seq
	return g.keys[0], rec.send(context.Background(), &batch{seq: seq, groups: b.order})
}

// without returns snap without key k (a skipped operation's batch still
// records its ledger entry).
func without(snap map[string]string, k string) map[string]string {
	out := map[string]string{}
	for kk, v := range snap {
		if kk != k {
			out[kk] = v
		}
	}
	return out
}

// Finding 4, Go side: a Latest gauge's value beyond ±(2^53 - 1) is
// ignored when recorded, so the batch that would carry it is never
// refused and resent: the counter flushed with it counts once.
func TestCorruptWriteLatestOutOfRangeRefusedAtRecord(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, _ := reportingRecorder(t, e)
	c, err := rec.Counter("ai_tokens_used", "model", "type")
	require.NoError(t, err)
	q, err := rec.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	c.Add(1, "m", "prompt")
	q.Set(1<<60, "emails")
	q.Set(-(1 << 60), "sms")
	for range 3 {
		require.NoError(t, rec.Flush(ctx))
	}
	assert.False(t, rec.Stats().Pending)
	assert.Equal(t, int64(1), getInt(t, e, mustKey(t, e.NS, counterKey, "ai_tokens_used", "m|prompt")), "counted once")
	assert.Equal(t, int64(0), e.Client.Exists(ctx, mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")).Val(), "the value was refused")

	// The bound itself is a value; an Add past it is ignored.
	q.Set(maxGauge, "emails")
	q.Add(1, "emails")
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, int64(maxGauge), getInt(t, e, mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")))
}

// Finding 4, script side: an invalid operation after valid ones refuses
// the whole batch before anything is written, however often it is sent.
func TestCorruptWriteApplyInvalidOpWritesNothing(t *testing.T) {
	e := harness.New(t)
	rec, _ := reportingRecorder(t, e)
	target := mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")
	totals := mustKey(t, e.NS, totalsKey, "queue_depth")
	before := e.Snapshot()
	for seq := int64(101); seq <= 103; seq++ {
		_, err := sendOps(t, rec, seq, target, func(g *group) {
			g.args = append(g.args, "h", g.key(totals), "other", 1, counterPX) // valid, first
			g.args = append(g.args, "l", g.key(target), g.key(totals), "emails", "1152921504606846976", 1, gaugePX)
		})
		require.ErrorIs(t, err, ErrInvalid)
		assert.Equal(t, before, e.Snapshot(), "send %d", seq)
	}
	// Other malformed operations after a valid one: the same.
	for i, bad := range [][]any{
		{"l", 2, 3, "emails", 5, -1, gaugePX}, // negative stamp
		{"x", 2, 3, "lots", gaugePX},          // shared count not an integer
		{"i", 2, 1, "soon"},                   // TTL not an integer
		{"i", 99, 1, counterPX},               // no such KEYS index
		{"i", 1, 1, counterPX},                // the ledger
		{"c", 3, 2, "1", "1", "2"},            // cut short
		{"s", 2, 3, "-", "sum", "x", gaugePX}, // extra not a number
		{"z", 2},                              // unknown
		{"h", 3, "f", 1},                      // cut short
	} {
		_, err := sendOps(t, rec, int64(200+i), target, func(g *group) {
			g.args = append(g.args, "h", g.key(totals), "other", 1, counterPX)
			g.key(target)
			g.args = append(g.args, bad...)
		})
		require.ErrorIs(t, err, ErrInvalid, "%v", bad)
		assert.Equal(t, before, e.Snapshot(), "%v", bad)
	}
}

// Finding 5: a per-second count op whose later field is foreign adds
// none of its seconds (the recorder reports the key's delta dropped).
func TestCorruptWritePerSecondFieldAddsNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, reported := reportingRecorder(t, e)
	target := mustKey(t, e.NS, speedKey)
	ps := rec.companion(perSecondKey, target)
	sec := e.Now().Unix()
	require.NoError(t, e.Client.HSet(ctx, ps, strconv.FormatInt(sec-2, 10), "3", strconv.FormatInt(sec-1, 10), "many").Err())
	before := e.Snapshot()
	ledger, err := sendOps(t, rec, 1, target, func(g *group) {
		g.args = append(g.args, "c", g.key(ps), 2, strconv.FormatInt(sec-2, 10), "5", strconv.FormatInt(sec-1, 10), "5")
	})
	require.NoError(t, err, "the rest of the batch applies")
	require.ErrorIs(t, reported(), keys.ErrCorrupt)
	assert.Contains(t, reported().Error(), ps)
	assert.Equal(t, without(before, ledger), without(e.Snapshot(), ledger))
}

// The s operation (a Sum gauge's value) reads its target before it
// drops the dead contributions: a foreign target leaves the parts as
// they were.
func TestCorruptWriteGaugeTargetKeepsParts(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, reported := reportingRecorder(t, e)
	target := mustKey(t, e.NS, gaugeKey, "active_sessions", "-")
	parts := mustKey(t, e.NS, partsKey, slotTag(keys.Slot(target)), "active_sessions")
	require.NoError(t, e.Client.HSet(ctx, target, "x", "y").Err())
	require.NoError(t, e.Client.HSet(ctx, parts, "-|ghost", "4:1:1").Err()) // expired long ago
	before := e.Snapshot()
	ledger, err := sendOps(t, rec, 1, target, func(g *group) {
		g.args = append(g.args, "s", g.key(target), g.key(parts), "-", "sum", 0, gaugePX)
	})
	require.NoError(t, err)
	require.ErrorIs(t, reported(), keys.ErrCorrupt)
	assert.Contains(t, reported().Error(), target)
	assert.Equal(t, without(before, ledger), without(e.Snapshot(), ledger))
}

// rollupWithPending returns a rollup of ai_tokens_used whose pending hash
// holds a flushed delta.
func rollupWithPending(t *testing.T, e *harness.Env) *Rollup {
	t.Helper()
	rec, _ := reportingRecorder(t, e, WithRollup())
	c, err := rec.Counter("ai_tokens_used", "model", "type")
	require.NoError(t, err)
	c.Add(100, "a", "b")
	require.NoError(t, rec.Flush(e.Ctx()))
	r, err := rec.Rollup([]string{"ai_tokens_used"}, func(context.Context, Bucket) error { return nil })
	require.NoError(t, err)
	return r
}

// Finding 6: a tier stream of the wrong type fails the drain before it
// takes the lease.
func TestCorruptWriteRollupStreamTypeTakesNoLease(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := rollupWithPending(t, e)
	hour := mustKey(t, e.NS, rollupTierKeys[Hour], "ai_tokens_used")
	require.NoError(t, e.Client.Set(ctx, hour, "x", 0).Err())
	before := e.Snapshot()
	_, err := r.RunOnce(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), hour)
	assert.Equal(t, before, e.Snapshot())
}

// Finding 7: a minute stream holding an entry after the minute to close
// fails the drain with ErrCorrupt before the pending sums reach the open
// hour and day, however often it runs.
func TestCorruptWriteRollupFutureEntryAddsNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := rollupWithPending(t, e)
	minute := mustKey(t, e.NS, rollupTierKeys[Minute], "ai_tokens_used")
	require.NoError(t, e.Client.Do(ctx, "XADD", minute, "99999999999999-0", "a|b", "1").Err())
	before := e.Snapshot()
	for range 3 {
		_, err := r.RunOnce(ctx)
		require.ErrorIs(t, err, keys.ErrCorrupt)
		assert.Contains(t, err.Error(), minute)
		assert.Equal(t, before, e.Snapshot())
	}
}

// A totals hash field that is not a number skips that field's operation
// alone (HINCRBY or HINCRBYFLOAT fails on it, the hash unchanged): the
// recorder reports that field, not the whole key's delta, and the key's
// other fields and the series keys are applied.
func TestCorruptWriteTotalsFieldReportsThatField(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, reported, c, h := tokensAndLatency(t, e)
	ct := mustKey(t, e.NS, totalsKey, "ai_tokens_used")
	ht := mustKey(t, e.NS, totalsKey, "api_latency_ms")
	require.NoError(t, e.Client.HSet(ctx, ct, "m|prompt", "many").Err())
	require.NoError(t, e.Client.HSet(ctx, ht, "/a|sum", "lots").Err())
	c.Add(3, "m", "prompt")
	c.Add(4, "n", "prompt")
	h.Observe(5, "/a")
	require.NoError(t, rec.Flush(ctx), "the rest of the batch applies")

	assert.Equal(t, int64(3), getInt(t, e, mustKey(t, e.NS, counterKey, "ai_tokens_used", "m|prompt")))
	assert.Equal(t, int64(4), getInt(t, e, mustKey(t, e.NS, counterKey, "ai_tokens_used", "n|prompt")))
	assert.Equal(t, map[string]string{"m|prompt": "many", "n|prompt": "4"}, e.Client.HGetAll(ctx, ct).Val())
	assert.Equal(t, map[string]string{"/a|sum": "lots", "/a|10": "1", "/a|count": "1"}, e.Client.HGetAll(ctx, ht).Val())

	got := reported()
	require.ErrorIs(t, got, keys.ErrCorrupt)
	msg := got.Error()
	assert.Contains(t, msg, ct)
	assert.Contains(t, msg, strconv.Quote("m|prompt"), "the report names the skipped field")
	assert.Contains(t, msg, strconv.Quote("/a|sum"), "the report names the skipped field")
	for _, applied := range []string{"n|prompt", "/a|10", "/a|count"} {
		assert.NotContains(t, msg, strconv.Quote(applied), "%s was applied", applied)
	}
	assert.NotContains(t, msg, "did not write; its delta was dropped", "not the whole key's delta")
	assert.Equal(t, int64(2), rec.Stats().Corrupt, "one per skipped field")
}

// A Latest gauge's totals field that is not value:stamp skips that
// dimension's Set alone: a later dimension of the same totals hash in
// the same batch applies, and only the bad field is reported.
func TestCorruptWriteLatestFieldSkipsThatDimension(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, reported := reportingRecorder(t, e)
	emails := mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")
	sms := mustKey(t, e.NS, gaugeKey, "queue_depth", "sms")
	totals := mustKey(t, e.NS, totalsKey, "queue_depth")
	require.NoError(t, e.Client.HSet(ctx, totals, "emails", "lots").Err())
	_, err := sendOps(t, rec, 1, emails, func(g *group) {
		g.args = append(g.args, "l", g.key(emails), g.key(totals), "emails", "4", "1000", gaugePX)
		g.args = append(g.args, "l", g.key(sms), g.key(totals), "sms", "5", "1000", gaugePX)
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"emails": "lots", "sms": "5:1000"}, e.Client.HGetAll(ctx, totals).Val())
	assert.Equal(t, int64(5), getInt(t, e, sms), "the other dimension applies")
	assert.Zero(t, e.Client.Exists(ctx, emails).Val(), "the bad field's Set was skipped")
	got := reported()
	require.ErrorIs(t, got, keys.ErrCorrupt)
	assert.Contains(t, got.Error(), totals)
	assert.Contains(t, got.Error(), strconv.Quote("emails"))
	assert.NotContains(t, got.Error(), strconv.Quote("sms"))
	assert.Equal(t, int64(1), rec.Stats().Corrupt)
}

// tokensAndLatency returns a recorder whose flush errors reported()
// joins, with a counter ai_tokens_used{model,type} and a histogram
// api_latency_ms{endpoint} of one bound, 10.
func tokensAndLatency(t *testing.T, e *harness.Env) (*Recorder, func() error, *Counter, *Histogram) {
	rec, reported := reportingRecorder(t, e)
	c, err := rec.Counter("ai_tokens_used", "model", "type")
	require.NoError(t, err)
	h, err := rec.Histogram("api_latency_ms", []float64{10}, "endpoint")
	require.NoError(t, err)
	return rec, reported, c, h
}

// A totals field whose sum would overflow skips that field alone, and the
// report gives Redis's reason rather than calling the data foreign; an
// observation of ±Inf is ignored at record time (Redis cannot add it to
// a sum), so it reports nothing.
func TestCorruptWriteOverflowFieldReportsWhy(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, reported, c, h := tokensAndLatency(t, e)
	ct := mustKey(t, e.NS, totalsKey, "ai_tokens_used")
	// miniredis's HINCRBY wraps around instead of refusing an overflow:
	// the overflow half runs on real servers only
	overflow := e.Real()
	if overflow {
		require.NoError(t, e.Client.HSet(ctx, ct, "m|prompt", "9223372036854775807").Err())
	}
	c.Add(1, "m", "prompt")
	c.Add(4, "n", "prompt")
	h.Observe(math.Inf(1), "/a")
	h.Observe(math.Inf(-1), "/a")
	h.Observe(5, "/a")
	require.NoError(t, rec.Flush(ctx))

	ht := mustKey(t, e.NS, totalsKey, "api_latency_ms")
	assert.Equal(t, map[string]string{"/a|sum": "5", "/a|10": "1", "/a|count": "1"}, e.Client.HGetAll(ctx, ht).Val())
	got := reported()
	if !overflow {
		require.NoError(t, got, "the infinite observations were ignored")
		assert.Equal(t, map[string]string{"m|prompt": "1", "n|prompt": "4"}, e.Client.HGetAll(ctx, ct).Val())
		return
	}
	assert.Equal(t, map[string]string{"m|prompt": "9223372036854775807", "n|prompt": "4"}, e.Client.HGetAll(ctx, ct).Val())
	require.ErrorIs(t, got, keys.ErrCorrupt)
	assert.Contains(t, got.Error(), strconv.Quote("m|prompt"))
	assert.Contains(t, got.Error(), "overflow")
	assert.NotContains(t, got.Error(), "did not write")
	assert.NotContains(t, got.Error(), ht, "the infinite observations were ignored")
	assert.Equal(t, int64(1), rec.Stats().Corrupt)
}
