package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Every key pattern of the package holding a wrong type, garbage or an
// out-of-range value: the operation that meets it fails (or reports) with
// keys.ErrCorrupt naming that exact key, or repairs it as documented, and
// the flush applies everything else.
func TestCorruptionTable(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	hash := func(k string) error { return e.Client.HSet(ctx, k, "x", "y").Err() }
	str := func(v string) func(string) error {
		return func(k string) error { return e.Client.Set(ctx, k, v, 0).Err() }
	}
	field := func(f, v string) func(string) error {
		return func(k string) error { return e.Client.HSet(ctx, k, f, v).Err() }
	}
	type tc struct {
		name  string
		key   func(ns keys.Namespace) string
		plant func(string) error
		op    string // flush (reported through the handler), read, rollup, or flush-error
		want  string // "corrupt" or "repaired"
	}
	k := func(tpl *keys.Template, args ...string) func(keys.Namespace) string {
		return func(ns keys.Namespace) string { return mustKey(t, ns, tpl, args...) }
	}
	comp := func(tpl *keys.Template, target *keys.Template) func(keys.Namespace) string {
		return func(ns keys.Namespace) string {
			tk := mustKey(t, ns, target)
			return mustKey(t, ns, tpl, slotTag(keys.Slot(tk)), tk[len(ns.Prefix):])
		}
	}
	ledgerOf := func(target func(keys.Namespace) string) func(keys.Namespace) string {
		return func(ns keys.Namespace) string {
			slot := 0
			if e.Backend == harness.Cluster {
				slot = keys.Slot(target(ns))
			}
			return mustKey(t, ns, ledgerKey, slotTag(slot))
		}
	}
	gparts := func(ns keys.Namespace) string {
		return mustKey(t, ns, partsKey, slotTag(keys.Slot(mustKey(t, ns, gaugeKey, "active_sessions", "-"))), "active_sessions")
	}
	cases := []tc{
		{"total wrong type", k(totalKey), hash, "flush", "corrupt"},
		{"total garbage", k(totalKey), str("lots"), "flush", "corrupt"},
		{"accepted garbage", k(acceptedKey), str("1.5"), "flush", "corrupt"},
		{"errors wrong type", k(errorsKey), hash, "flush", "corrupt"},
		{"endpoint garbage", k(endpointKey, "GET /a"), str("x"), "flush", "corrupt"},
		{"endpoint errors wrong type", k(endpointErrorsKey, "GET /a"), hash, "flush", "corrupt"},
		{"current wrong type", k(connCurrentKey), hash, "flush", "corrupt"},
		{"max out of range", k(connMaxKey), str("-5"), "flush", "corrupt"},
		{"speed garbage", k(speedKey), str("fast"), "flush", "corrupt"},
		{"max speed wrong type", k(maxSpeedKey), hash, "flush", "corrupt"},
		{"counter garbage", k(counterKey, "ai_tokens_used", "m|prompt"), str("many"), "flush", "corrupt"},
		{"gauge wrong type", k(gaugeKey, "active_sessions", "-"), hash, "flush", "corrupt"},
		{"histogram garbage", k(histogramKey, "api_latency_ms", "/a", "25"), str("?"), "flush", "corrupt"},
		{"totals wrong type", k(totalsKey, "ai_tokens_used"), str("1"), "flush", "corrupt"},
		{"totals garbage field", k(totalsKey, "ai_tokens_used"), field("m|prompt", "many"), "read", "corrupt"},
		{"endpoint totals garbage", k(endpointTotalsKey, endpointRequestsTotals), field("GET /b", "x"), "read", "corrupt"},
		{"latest gauge wrong type", k(gaugeKey, "queue_depth", "emails"), hash, "flush", "corrupt"},
		{"latest totals garbage field", k(totalsKey, "queue_depth"), field("emails", "lots"), "flush", "corrupt"},
		{"latest totals garbage field read", k(totalsKey, "queue_depth"), field("sms", "9"), "read", "corrupt"},
		{"parts wrong type", gparts, str("1"), "read", "corrupt"},
		{"parts garbage field", gparts, field("-|ghost", "lots"), "read", "repaired"},
		{"conn parts wrong type", comp(partsKey, connCurrentKey), str("1"), "flush", "corrupt"},
		{"persec wrong type", comp(perSecondKey, speedKey), str("1"), "flush", "corrupt"},
		{"ledger garbage field", ledgerOf(k(totalKey)), func(k string) error { return e.Client.HSet(ctx, k, "someone", "x").Err() }, "flush", "repaired"},
		{"ledger wrong type", ledgerOf(k(totalKey)), str("1"), "flush-error", "corrupt"},
		{"pending wrong type", k(pendingKey, "ai_tokens_used"), str("1"), "flush", "corrupt"},
		{"rollup pending wrong type", k(pendingKey, "ai_tokens_used"), str("1"), "rollup", "corrupt"},
		{"rollup state wrong type", k(rollupStateKey, "ai_tokens_used"), str("1"), "rollup", "corrupt"},
		{"rollup state garbage", k(rollupStateKey, "ai_tokens_used"), field("closed:minute", "soon"), "rollup", "corrupt"},
		{"rollup open wrong type", k(rollupOpenKey, "ai_tokens_used"), str("1"), "rollup", "corrupt"},
		{"rollup minute wrong type", k(rollupTierKeys[Minute], "ai_tokens_used"), hash, "rollup", "corrupt"},
		{"rollup day wrong type", k(rollupTierKeys[Day], "ai_tokens_used"), hash, "rollup", "corrupt"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := e.NS.Sub("c" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ":")
			var mu sync.Mutex
			var reported []error
			rec, err := New(e.Client, WithNamespace(ns), WithoutFlusher(), WithRollup(), WithErrorHandler(func(err error) {
				mu.Lock()
				reported = append(reported, err)
				mu.Unlock()
			}))
			require.NoError(t, err)
			defer func() {
				cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				_ = rec.Close(cctx) // gives up on a batch a foreign ledger blocks
			}()
			require.NoError(t, rec.Declare(CommonMetrics()...))
			record := func() {
				h := rec.HTTP()
				h.Start()
				h.Record(Request{Method: "GET", Route: "/a", Status: 500})
				tok, _ := rec.Counter("ai_tokens_used", "model", "type")
				tok.Add(3, "m", "prompt")
				s, _ := rec.Gauge("active_sessions", Sum)
				s.Add(2)
				l, _ := rec.Histogram("api_latency_ms", LatencyBuckets(), "endpoint")
				l.Observe(20, "/a")
				q, _ := rec.Gauge("queue_depth", Latest, "queue_name")
				q.Set(4, "emails")
			}
			key := c.key(ns)
			require.NoError(t, c.plant(key))
			record()
			var got error
			switch c.op {
			case "flush", "flush-error":
				got = rec.Flush(ctx)
				if c.op == "flush" {
					require.NoError(t, got, "the rest of the batch applies")
					mu.Lock()
					got = errors.Join(reported...)
					mu.Unlock()
				}
			case "read":
				require.NoError(t, rec.Flush(ctx))
				rd, err := NewReader(e.Client, rec.Definitions(), WithNamespace(ns))
				require.NoError(t, err)
				_, got = rd.Read(ctx)
			case "rollup":
				_ = rec.Flush(ctx)
				r, err := rec.Rollup([]string{"ai_tokens_used"}, func(context.Context, Bucket) error { return nil })
				require.NoError(t, err)
				_, got = r.RunOnce(ctx)
			}
			if c.want == "repaired" {
				assert.NoError(t, got)
				return
			}
			require.ErrorIs(t, got, keys.ErrCorrupt)
			assert.Contains(t, got.Error(), key, "the error names the key")
			if c.op == "flush" {
				// everything else went through
				other := mustKey(t, ns, counterKey, "api_requests_total", "/a|GET|500")
				assert.Equal(t, int64(1), getInt(t, e, other))
			}
		})
	}
}

// TestReadLeavesCorruptPartsOut: Read leaves out what holds data this
// package did not write (a total, a metric's totals hash) and returns
// the rest of the Snapshot, with an error matching keys.ErrCorrupt naming
// each such key; the Snapshot keeps one MetricValues per definition.
func TestReadLeavesCorruptPartsOut(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, err := New(e.Client, testOptions(e, WithoutFlusher())...)
	require.NoError(t, err)
	defer func() { _ = rec.Close(ctx) }()
	require.NoError(t, rec.Declare(CommonMetrics()...))
	h := rec.HTTP()
	h.Start()
	h.Record(Request{Method: "GET", Route: "/a", Status: 200})
	tok, _ := rec.Counter("ai_tokens_used", "model", "type")
	tok.Add(3, "m", "prompt")
	s, _ := rec.Gauge("active_sessions", Sum)
	s.Add(2)
	require.NoError(t, rec.Flush(ctx))

	k := func(tm *keys.Template, args ...string) string { return mustKey(t, e.NS, tm, args...) }
	total, tokens := k(totalKey), k(totalsKey, "ai_tokens_used")
	require.NoError(t, e.Client.Set(ctx, total, "lots", 0).Err())
	require.NoError(t, e.Client.HSet(ctx, tokens, "n|prompt", "many").Err())
	rd, err := NewReader(e.Client, rec.Definitions(), WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", total))
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", tokens))
	require.NotNil(t, snap)
	assert.Zero(t, snap.HTTP.Total, "left out")
	assert.Equal(t, int64(1), snap.HTTP.Accepted)
	require.Len(t, snap.Metrics, len(rec.Definitions()))
	for _, m := range snap.Metrics {
		switch m.Name {
		case "ai_tokens_used":
			assert.Empty(t, m.Series, "left out")
		case "active_sessions":
			require.Len(t, m.Series, 1)
			assert.Equal(t, int64(2), m.Series[0].Value)
		}
	}
}
