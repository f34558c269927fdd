package metrics

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// memSink keeps what it is given, by bucket ID.
type memSink struct {
	mu   sync.Mutex
	got  map[string]Bucket
	dups int
	fail error
}

func (s *memSink) put(_ context.Context, b Bucket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.got == nil {
		s.got = map[string]Bucket{}
	}
	if _, ok := s.got[b.ID()]; ok {
		s.dups++
	}
	s.got[b.ID()] = b
	return nil
}

func (s *memSink) sum(t Tier, field string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n float64
	for _, b := range s.got {
		if b.Tier == t {
			n += b.Values[field]
		}
	}
	return n
}

// Flushed counts reach the sink once, whichever of several rollup
// instances drains them, and concurrent runs never hand a bucket twice.
func TestRollupOnceAcrossInstances(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec := newRecorder(t, e, nil, WithRollup())
	c, err := rec.Counter("ai_tokens_used", "model", "type")
	require.NoError(t, err)
	h, err := rec.Histogram("api_latency_ms", LatencyBuckets(), "endpoint")
	require.NoError(t, err)
	c.Add(100, "m1", "prompt")
	c.Add(7, "m1", "completion")
	h.Observe(12, "/a")
	h.Observe(700, "/a")
	require.NoError(t, rec.Flush(ctx))

	sink := &memSink{}
	var rollups []*Rollup
	for range 4 {
		r, err := rec.Rollup([]string{"ai_tokens_used", "api_latency_ms"}, sink.put)
		require.NoError(t, err)
		rollups = append(rollups, r)
	}
	var wg sync.WaitGroup
	var leaders, notLeaders int
	var mu sync.Mutex
	for _, r := range rollups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.RunOnce(ctx)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, ErrNotLeader) {
				notLeaders++
			} else {
				assert.NoError(t, err)
				leaders++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 4, leaders+notLeaders)
	assert.Zero(t, sink.dups)
	assert.Equal(t, 100.0, sink.sum(Minute, "m1|prompt"))
	assert.Equal(t, 7.0, sink.sum(Minute, "m1|completion"))
	assert.Equal(t, 1.0, sink.sum(Minute, "/a|25"))
	assert.Equal(t, 1.0, sink.sum(Minute, "/a|1000"))
	assert.Equal(t, 2.0, sink.sum(Minute, "/a|count"))
	assert.Equal(t, 712.0, sink.sum(Minute, "/a|sum"))
	n, err := rollups[0].RunOnce(ctx)
	if !errors.Is(err, ErrNotLeader) {
		require.NoError(t, err)
	}
	assert.Zero(t, n, "nothing new")
	e.RequireTTLs(nil)
}

// Minutes close into hours and days; each tier reaches the sink once, and
// a sink failure offers the bucket again.
func TestRollupTiers(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(25 * time.Hour)
	ctx := e.Ctx()
	rec := newRecorder(t, e, nil, WithRollup())
	c, err := rec.Counter("file_uploads_bytes")
	require.NoError(t, err)
	sink := &memSink{}
	r, err := rec.Rollup([]string{"file_uploads_bytes"}, sink.put)
	require.NoError(t, err)
	total := 0.0
	for i := range 26 * 60 / 7 { // a sample every 7 minutes for 26 hours
		c.Add(int64(i + 1))
		total += float64(i + 1)
		require.NoError(t, rec.Flush(ctx))
		if i == 50 {
			sink.fail = errors.New("sink down")
			_, err := r.RunOnce(ctx)
			require.ErrorIs(t, err, sink.fail)
			sink.fail = nil
		}
		_, err := r.RunOnce(ctx)
		require.NoError(t, err)
		e.Advance(7 * time.Minute)
	}
	e.Advance(2 * time.Minute)
	_, err = r.RunOnce(ctx)
	require.NoError(t, err)
	assert.Zero(t, sink.dups)
	assert.Equal(t, total, sink.sum(Minute, "-"), "every minute bucket, once")
	hours := sink.sum(Hour, "-")
	assert.Greater(t, hours, 0.0)
	assert.LessOrEqual(t, hours, total)
	assert.Greater(t, sink.sum(Day, "-"), 0.0)
	n := 0
	for _, b := range sink.got {
		if b.Tier == Hour {
			n++
			assert.Zero(t, b.Start.UnixMilli()%int64(time.Hour/time.Millisecond))
		}
	}
	assert.GreaterOrEqual(t, n, 24)
	e.RequireTTLs(nil)
}

// TestRollupLeaseRoundsUp holds the lease's rounding toward safety: a
// lease of 1.0005 s is 1001 ms on the server, never less than WithLease
// asked (it was truncated to 1000 ms before).
func TestRollupLeaseRoundsUp(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec := newRecorder(t, e, nil, WithLease(time.Second+500*time.Microsecond))
	r, err := rec.Rollup([]string{"ai_tokens_used"}, (&memSink{}).put)
	require.NoError(t, err)
	before := e.Now().UnixMilli()
	_, err = r.RunOnce(ctx)
	require.NoError(t, err)
	state, err := rollupStateKey.Key(e.NS, "ai_tokens_used")
	require.NoError(t, err)
	exp, err := e.Client.HGet(ctx, state, "lease_exp").Int64()
	require.NoError(t, err)
	if e.Real() {
		assert.GreaterOrEqual(t, exp-before, int64(1001), "the lease ends at least 1001 ms after the call began")
	} else {
		assert.Equal(t, before+1001, exp, "on the frozen clock, exactly 1001 ms")
	}
}

// TestRollupOptionsChecked: the rollup's options are checked by New, at
// their documented ranges, and Rollup refuses a nil sink or no names.
func TestRollupOptionsChecked(t *testing.T) {
	e := harness.New(t)
	for name, o := range map[string]Option{
		"lease below 1s":      WithLease(time.Second - time.Millisecond),
		"lease above 1h":      WithLease(time.Hour + time.Millisecond),
		"minute below 2m":     WithRetention(Minute, 2*time.Minute-time.Millisecond),
		"day below 48h":       WithRetention(Day, 47*time.Hour),
		"hour above 400 days": WithRetention(Hour, 400*24*time.Hour+time.Hour),
		"an unknown tier":     WithRetention(Tier(7), time.Hour),
		"a negative tier":     WithRetention(Tier(-1), time.Hour),
	} {
		_, err := New(e.Client, testOptions(e, WithoutFlusher(), o)...)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	for name, o := range map[string]Option{
		"lease 1s":     WithLease(time.Second),
		"lease 1h":     WithLease(time.Hour),
		"minute 2m":    WithRetention(Minute, 2*time.Minute),
		"day 400 days": WithRetention(Day, 400*24*time.Hour),
	} {
		_, err := New(e.Client, testOptions(e, WithoutFlusher(), o)...)
		assert.NoError(t, err, name)
	}
	rec := newRecorder(t, e, nil)
	_, err := rec.Rollup([]string{"x"}, nil)
	assert.ErrorIs(t, err, ErrInvalid, "nil sink")
	_, err = rec.Rollup(nil, (&memSink{}).put)
	assert.ErrorIs(t, err, ErrInvalid, "no names")
	_, err = rec.Rollup([]string{"bad name"}, (&memSink{}).put)
	assert.ErrorIs(t, err, ErrInvalid, "bad name")
}
