package metrics

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// nopWriter is a ResponseWriter that keeps nothing.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

// A flush whose reply is lost after the server applied it is resent by
// go-redis; the ledger recognises the batch and nothing counts twice.
func TestLostFlushReplyCountsOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	require.NoError(t, applyOp.Load(ctx, pc), "EVALSHA, so the script's SHA is on the wire")
	rec := newRecorder(t, e, pc)
	c, err := rec.Counter("api_requests_total", "endpoint", "method", "status")
	require.NoError(t, err)
	h := rec.HTTP()
	for round := 1; round <= 3; round++ {
		c.Add(10, "/x", "GET", "200")
		h.Record(Request{Method: "GET", Route: "/x", Status: 200})
		p.LoseReply(applyOp.Script().Hash())
		require.NoError(t, rec.Flush(ctx), "the resent pipeline finds its batch applied")
		require.Equal(t, int64(round), p.Lost())
		assert.Equal(t, int64(11*round), getInt(t, e, mustKey(t, e.NS, counterKey, "api_requests_total", "/x|GET|200")))
		assert.Equal(t, int64(round), getInt(t, e, mustKey(t, e.NS, totalKey)))
	}
}

// A flush that fails keeps its deltas: they arrive with the next flush
// that goes through, exactly once.
func TestFailedFlushKeepsDeltas(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redisNoRetry)
	rec := newRecorder(t, e, pc)
	h := rec.HTTP()
	h.Record(Request{Method: "GET", Route: "/a", Status: 200})
	require.NoError(t, rec.Flush(ctx))
	for range 5 {
		h.Record(Request{Method: "GET", Route: "/a", Status: 500})
	}
	p.LoseReply(applyOp.Script().Hash())
	require.NoError(t, applyOp.Load(ctx, pc))
	err := rec.Flush(ctx)
	require.Error(t, err, "no retries: the lost reply is an error")
	assert.True(t, rec.Stats().Pending)
	h.Record(Request{Method: "GET", Route: "/a", Status: 200}) // waits for the pending batch
	require.NoError(t, rec.Flush(ctx), "resends the pending batch: a duplicate for the slots that had it")
	require.NoError(t, rec.Flush(ctx), "then the new deltas")
	assert.False(t, rec.Stats().Pending)
	assert.Equal(t, int64(7), getInt(t, e, mustKey(t, e.NS, totalKey)))
	assert.Equal(t, int64(5), getInt(t, e, mustKey(t, e.NS, errorsKey)))
	assert.Equal(t, int64(7), getInt(t, e, mustKey(t, e.NS, endpointKey, "GET /a")))
}

// A write the server refuses inside the flush script (OOM past
// maxmemory) fails the batch before anything is written, and is never
// reported as a key holding foreign data: here the batch's first
// operation, an INCRBY, is refused, and its second, a gauge part's HDEL,
// would be allowed (a delete may run past maxmemory, and after it the
// script may write on), so taking the refusal for foreign data would
// record the batch as applied with its count dropped. Once the server
// has room the same batch applies in full.
func TestRefusedWriteFailsTheBatch(t *testing.T) {
	e := harness.New(t)
	pc := e.PrivateClient() // it sets maxmemory
	ctx := e.Ctx()
	rec, reported := reportingRecorder(t, &harness.Env{T: t, Client: pc, NS: e.NS, Backend: e.Backend})
	counter := mustKey(t, e.NS, counterKey, "jobs_total", "mail")
	parts := mustKey(t, e.NS, partsKey, slotTag(keys.Slot(counter)), "workers")
	part := "-|" + rec.Instance()
	require.NoError(t, pc.HSet(ctx, parts, part, "4:1:1").Err())
	fill := func(g *group) {
		g.args = append(g.args, "i", g.key(counter), 5, counterPX)
		g.args = append(g.args, "p", g.key(parts), part, "")
	}

	require.NoError(t, pc.ConfigSet(ctx, "maxmemory", "1").Err())
	ledger, err := sendOps(t, rec, 1, counter, fill)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OOM")
	require.NoError(t, pc.ConfigSet(ctx, "maxmemory", "0").Err())
	require.NoError(t, reported(), "no key is called foreign")
	assert.Zero(t, rec.Stats().Corrupt)
	assert.Zero(t, pc.Exists(ctx, counter, ledger).Val(), "nothing written: no count, no ledger entry")
	assert.Equal(t, "4:1:1", pc.HGet(ctx, parts, part).Val(), "nothing deleted")

	_, err = sendOps(t, rec, 1, counter, fill)
	require.NoError(t, err, "the resent batch")
	require.NoError(t, reported())
	assert.Equal(t, "5", pc.Get(ctx, counter).Val())
	assert.False(t, pc.HExists(ctx, parts, part).Val())
}

// The proof: 8 recorders (separate instances, each with its own
// connection through a fault proxy) serve 100,000 requests each while the
// proxies cut connections and lose flush replies; after Close the totals
// in Redis are exact.
func TestExactTotalsUnderFaults(t *testing.T) {
	const instances, perInstance = 8, 100000
	e := harness.New(t)
	ctx := e.Ctx()
	type inst struct {
		rec *Recorder
		p   *harness.Proxy
	}
	var all []inst
	var flushErrs atomic.Int64
	for range instances {
		pc, p := e.ProxyClient(nil)
		rec, err := New(pc, WithNamespace(e.NS), WithInterval(20*time.Millisecond), WithHeartbeatTTL(time.Minute),
			WithErrorHandler(func(error) { flushErrs.Add(1) }))
		require.NoError(t, err)
		all = append(all, inst{rec, p})
	}
	stop := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Add(1)
	go func() { // cut connections and lose flush replies while the load runs
		defer chaos.Done()
		rnd := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+rnd.IntN(20)) * time.Millisecond):
			}
			x := all[rnd.IntN(len(all))]
			if rnd.IntN(2) == 0 {
				x.p.CutNow()
			} else if x.p.Pending() == 0 {
				x.p.LoseReply(applyOp.Script().Hash())
			}
		}
	}()
	var wg sync.WaitGroup
	for i, x := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mux := http.NewServeMux()
			mux.HandleFunc("GET /api/users/{id}", func(w http.ResponseWriter, r *http.Request) {})
			mux.HandleFunc("POST /api/orders", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
			h := Middleware(x.rec)(mux)
			get := httptest.NewRequest("GET", "/api/users/"+strconv.Itoa(i), nil)
			post := httptest.NewRequest("POST", "/api/orders", nil)
			w := &nopWriter{h: http.Header{}}
			for j := range perInstance {
				if j%10 == 0 {
					h.ServeHTTP(w, post)
				} else {
					h.ServeHTTP(w, get)
				}
			}
		}()
	}
	wg.Wait()
	// The chaos goroutine starts after a random pause: do not assume the
	// load outlasted it, wait (the flushers keep flushing) until it struck.
	harness.WaitFor(t, "a cut connection or a lost flush reply", func() bool {
		for _, x := range all {
			if x.p.Cuts()+x.p.Lost() > 0 {
				return true
			}
		}
		return false
	})
	close(stop)
	chaos.Wait()
	var cuts, lost int64
	for _, x := range all {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		require.NoError(t, x.rec.Close(cctx))
		cancel()
		cuts += x.p.Cuts()
		lost += x.p.Lost()
	}
	t.Logf("%d connections cut, %d flush replies lost, %d flush errors reported", cuts, lost, flushErrs.Load())
	assert.Positive(t, cuts+lost, "the faults happened")

	const total = instances * perInstance
	assert.Equal(t, int64(total), getInt(t, e, mustKey(t, e.NS, totalKey)))
	assert.Equal(t, int64(total), getInt(t, e, mustKey(t, e.NS, acceptedKey)))
	assert.Equal(t, int64(total/10), getInt(t, e, mustKey(t, e.NS, errorsKey)))
	assert.Equal(t, int64(total*9/10), getInt(t, e, mustKey(t, e.NS, endpointKey, "GET /api/users/{id}")))
	assert.Equal(t, int64(total/10), getInt(t, e, mustKey(t, e.NS, endpointErrorsKey, "POST /api/orders")))
	assert.Equal(t, int64(total/10), getInt(t, e, mustKey(t, e.NS, counterKey, "api_requests_total", "/api/orders|POST|500")))
	assert.Equal(t, int64(total*9/10), getInt(t, e, mustKey(t, e.NS, histogramKey, "api_latency_ms", "/api/users/{id}", "count")))
	assert.Equal(t, int64(0), getInt(t, e, mustKey(t, e.NS, connCurrentKey)), "every instance withdrew its connections")

	rd, err := NewReader(e.Client, nil, WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(total), snap.HTTP.Total)
	assert.Equal(t, []EndpointTotals{{"GET /api/users/{id}", total * 9 / 10, 0}, {"POST /api/orders", total / 10, total / 10}}, snap.HTTP.Endpoints)
}

// An instance killed without Close stops counting in
// connections:http:current within its heartbeat TTL.
func TestKilledInstanceGaugeRecovers(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const hb = time.Second
	e.RequireShortWaits(2 * hb)
	a := newRecorder(t, e, nil, WithInterval(100*time.Millisecond), WithHeartbeatTTL(hb))
	b := newRecorder(t, e, nil, WithInterval(100*time.Millisecond), WithHeartbeatTTL(hb))
	sa, err := a.Gauge("active_sessions", Sum)
	require.NoError(t, err)
	sb, err := b.Gauge("active_sessions", Sum)
	require.NoError(t, err)
	for range 3 {
		a.HTTP().Start() // requests in flight when a dies
	}
	b.HTTP().Start()
	b.HTTP().Start()
	sa.Add(40)
	sb.Add(2)
	require.NoError(t, a.Flush(ctx))
	require.NoError(t, b.Flush(ctx))
	cur := mustKey(t, e.NS, connCurrentKey)
	gk := mustKey(t, e.NS, gaugeKey, "active_sessions", "-")
	assert.Equal(t, int64(5), getInt(t, e, cur))
	assert.Equal(t, int64(42), getInt(t, e, gk))
	assert.Equal(t, int64(5), getInt(t, e, mustKey(t, e.NS, connMaxKey)))

	a.abandon() // killed: no Close, no withdrawal
	e.Advance(hb + 10*time.Millisecond)
	require.NoError(t, b.Flush(ctx))
	assert.Equal(t, int64(2), getInt(t, e, cur), "a's 3 connections stopped counting")
	assert.Equal(t, int64(2), getInt(t, e, gk))
	assert.Equal(t, int64(5), getInt(t, e, mustKey(t, e.NS, connMaxKey)), "the maximum stays")
	rd, err := NewReader(e.Client, b.Definitions(), WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), snap.HTTP.Connections)

	// Close withdraws b's part at once.
	require.NoError(t, b.Close(ctx))
	snap, err = rd.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), snap.HTTP.Connections)
	assert.Equal(t, int64(0), getInt(t, e, cur))
}

// The cardinality cap holds under a million distinct paths: the
// recorder keeps the cap's series plus one overflow series, Redis gets as
// many keys, and the totals stay exact.
func TestCardinalityCap(t *testing.T) {
	const paths, cap = 1000000, 100
	e := harness.New(t)
	ctx := e.Ctx()
	rec := newRecorder(t, e, nil, WithMaxSeries(cap))
	h := rec.HTTP()
	c, err := rec.Counter("hits", "path")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < paths; i += 4 {
				p := "/p/" + strconv.Itoa(i)
				h.Record(Request{Method: "GET", Route: p, Status: 200})
				c.Inc(p)
			}
		}()
	}
	wg.Wait()
	st := rec.Stats()
	// HTTP endpoints, their latency series and api_requests_total series
	// each hold at most the cap; hits too.
	assert.LessOrEqual(t, st.Series, int64(4*cap))
	require.NoError(t, rec.Flush(ctx))
	rd, err := NewReader(e.Client, rec.Definitions(), WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.NoError(t, err)
	assert.Len(t, snap.HTTP.Endpoints, cap+1)
	var sum int64
	for _, ep := range snap.HTTP.Endpoints {
		sum += ep.Requests
	}
	assert.Equal(t, int64(paths), sum, "exact: the overflow endpoint holds the rest")
	assert.Equal(t, int64(paths), snap.HTTP.Total)
	for _, m := range snap.Metrics {
		assert.LessOrEqual(t, len(m.Series), cap+1, m.Name)
		if m.Name == "hits" {
			sum = 0
			over := false
			for _, s := range m.Series {
				sum += s.Value
				over = over || s.Labels[0] == Overflow
			}
			assert.Equal(t, int64(paths), sum)
			assert.True(t, over, "an overflow series")
		}
	}
	n := 0
	for _, k := range e.Keys() {
		if len(k) > len(e.NS.Prefix)+len("requests:endpoint:") && k[len(e.NS.Prefix):len(e.NS.Prefix)+len("requests:endpoint:")] == "requests:endpoint:" {
			n++
		}
	}
	assert.Equal(t, cap+1, n, "endpoint keys in Redis")
}
