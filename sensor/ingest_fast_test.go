package sensor

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// zsetPaths splits a motion or environmental write in its two paths:
// the fast path alone (answering "general" where it falls through) and
// the general script alone (the fast path cut out).
type zsetPaths struct {
	fastOnly, general *call.Op
}

func newZsetPaths(op *call.Op, tms []*keys.Template) zsetPaths {
	return zsetPaths{
		fastOnly: pkg.Declare("ingest", ingestZsetFastSrc+"\nreturn {'ok', 'general'}\n", tms),
		general:  pkg.Declare("ingest", ingestZsetSrc, tms, call.Uses(lib, call.ScoreMS, call.ToNum)),
	}
}

// keyState is what a write leaves of key: its type and its members (with
// scores) or fields; and its TTL.
func keyState(t *testing.T, e *harness.Env, key string) (string, time.Duration) {
	t.Helper()
	ctx := e.Ctx()
	typ := e.Client.Type(ctx, key).Val()
	var parts []string
	switch typ {
	case "zset":
		zs, err := e.Client.ZRangeWithScores(ctx, key, 0, -1).Result()
		require.NoError(t, err)
		for _, z := range zs {
			parts = append(parts, itoa(int64(z.Score))+" "+z.Member.(string))
		}
	case "hash":
		h, err := e.Client.HGetAll(ctx, key).Result()
		require.NoError(t, err)
		for f, v := range h {
			parts = append(parts, f+"="+v)
		}
		sort.Strings(parts)
	}
	return typ + " " + strings.Join(parts, " | "), e.Client.PTTL(ctx, key).Val()
}

// The fast path of a motion or environmental write does what the general
// script does: the same outcome and the same keys (members, rollups,
// index, meta hash, TTLs), reading after reading, through new and
// existing buckets, out-of-order and future readings, min/max/first/last
// changes and "on" events; and it leaves to the general script, before
// writing anything, what it does not handle (a reading at a stored
// millisecond, a late reading, a value with an exponent).
func TestIngestFastPathMatchesGeneral(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	fastNS, generalNS := e.NS.Sub("fast:"), e.NS.Sub("general:")
	fast, err := New(e.Client, WithNamespace(fastNS))
	require.NoError(t, err)
	followServerClock(e, fast)
	general, err := New(e.Client, WithNamespace(generalNS))
	require.NoError(t, err)
	followServerClock(e, general)
	paths := map[*call.Op]zsetPaths{
		ingestEnvOp:    newZsetPaths(ingestEnvOp, []*keys.Template{envKey, typesKey, minuteKey, hourKey}),
		ingestMotionOp: newZsetPaths(ingestMotionOp, []*keys.Template{motionKey, typesKey, minuteKey, hourKey, motionMetaKey}),
	}

	now := e.Now()
	// Times a few seconds into the minute before the last, off whole
	// seconds (miniredis prints a round score with an exponent).
	base := now.Add(-2 * time.Minute).Truncate(time.Minute).Add(5*time.Second + 123*time.Millisecond)
	collected := now.Add(-time.Second)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	temp := func(id string, v float64, d time.Duration) Reading {
		r := TemperatureReading("hall", v, "°C", at(d))
		r.ID, r.CollectedAt = id, collected
		return r
	}
	motion := func(id string, on bool, d time.Duration) Reading {
		r := MotionReading("hall", "binary_sensor.hall", on, 1, at(d))
		r.ID, r.CollectedAt = id, collected
		return r
	}
	for _, tc := range []struct {
		name    string
		r       Reading
		fast    bool // the fast path takes it (on miniredis and real Redis alike)
		outcome Outcome
	}{
		{"first reading: new keys, new buckets", temp("t1", 21.5, 0), true, Stored},
		{"same bucket, integral value", temp("t2", 22, time.Second), true, Stored},
		{"out of order, new min", temp("t3", -3.25, 500*time.Millisecond), true, Stored},
		{"before the bucket's first, new max", temp("t4", 30.125, -200*time.Millisecond), true, Stored},
		{"the sum back to whole", temp("t5", 0.75, 2*time.Second), true, Stored},
		{"the other environmental type", func() Reading {
			r := IlluminanceReading("hall", 300, "lx", at(3*time.Second))
			r.ID, r.CollectedAt = "i1", collected
			return r
		}(), true, Stored},
		{"next minute: a new bucket in an existing tier", temp("t6", 19, time.Minute), true, Stored},
		{"a stored millisecond: duplicate kept by the general script", temp("t7", 23, time.Second), false, Stored},
		{"a resend: recognised by the general script", temp("t2", 22, time.Second), false, Stored},
		{"a value with an exponent", temp("t8", 1e-7, 4*time.Second), false, Stored},
		{"ahead of the clock, within the max future", temp("t9", 20, now.Sub(base)+90*time.Second), true, Stored},
		{"late", temp("t10", 20, -25*time.Hour), false, Late},
		{"motion on", motion("m1", true, 0), true, Stored},
		{"motion off", motion("m2", false, time.Second), true, Stored},
		{"motion on, later", motion("m3", true, 3*time.Second), true, Stored},
		{"motion on, earlier: lastMotionTime stays", motion("m4", true, 2*time.Second), true, Stored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf, err := fast.write("test", tc.r, fast.now())
			require.NoError(t, err)
			wg, err := general.write("test", tc.r, general.now())
			require.NoError(t, err)
			p := paths[wf.call.Op]
			require.NotNil(t, p.general, "a zset write")

			rep, err := fast.run.Run(ctx, p.fastOnly, wf.call.Keys, wf.call.Args...)
			require.NoError(t, err)
			took := rep.Str(0) != "general"
			if !took {
				rep, err = fast.run.Run(ctx, wf.call.Op, wf.call.Keys, wf.call.Args...)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.fast, took, "the fast path takes it")
			got, err := outcome(&rep, wf.t.raw)
			require.NoError(t, err)
			assert.Equal(t, tc.outcome, got)

			rep, err = general.run.Run(ctx, p.general, wg.call.Keys, wg.call.Args...)
			require.NoError(t, err)
			want, err := outcome(&rep, wg.t.raw)
			require.NoError(t, err)
			assert.Equal(t, want, got, "the general script's outcome")

			for i, k := range wf.call.Keys {
				state, ttl := keyState(t, e, k)
				wantState, wantTTL := keyState(t, e, wg.call.Keys[i])
				assert.Equal(t, wantState, state, "KEYS[%d] %s", i+1, k)
				assert.InDelta(t, wantTTL.Milliseconds(), ttl.Milliseconds(), 1000, "KEYS[%d] %s: TTL", i+1, k)
			}
		})
	}
}
