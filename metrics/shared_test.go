package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// sharedNS is the home-automation namespace of a WithSharedKeys test: the
// seed's "ha:" under the test's prefix, without hash tags on a standalone
// server (byte-identical keys). On a cluster, where NoHashTags is refused,
// tags stay on: the seed's keys have none either way, so the keys shared
// with the other writer are the same bytes; only our companion keys differ.
func sharedNS(e *harness.Env) keys.Namespace {
	ns := e.NS.Sub("ha:")
	ns.NoHashTags = e.Backend != harness.Cluster
	return ns
}

// other is the other writer of the shared keys: what the home-automation
// backend's Node service sends (seed 000 §1-2 and its example code), as
// plain commands.
type other struct {
	t  testing.TB
	e  *harness.Env
	ns keys.Namespace
}

func (o other) incrBy(key string, n int64) {
	o.t.Helper()
	require.NoError(o.t, o.e.Client.IncrBy(context.Background(), o.ns.Prefix+key, n).Err())
}

// request is one request the other writer serves, as its middleware
// counts it.
func (o other) request(method, path string, status int) {
	o.incrBy("requests:total", 1)
	o.incrBy("requests:accepted", 1)
	o.incrBy("requests:endpoint:"+method+" "+path, 1)
	if status >= 400 {
		o.incrBy("errors:total", 1)
		o.incrBy("errors:endpoint:"+method+" "+path, 1)
	}
}

func sharedReader(t testing.TB, e *harness.Env, ns keys.Namespace, opts ...Option) *Reader {
	t.Helper()
	rd, err := NewReader(e.Client, nil, append([]Option{WithNamespace(ns), WithSharedKeys()}, opts...)...)
	require.NoError(t, err)
	return rd
}

// endpointSums adds up the endpoint rows.
func endpointSums(s *Snapshot) (reqs, errs int64) {
	for _, ep := range s.HTTP.Endpoints {
		reqs += ep.Requests
		errs += ep.Errors
	}
	return reqs, errs
}

// The issue's case: the other writer holds 2 connections; a flush of ours
// with none in flight used to rewrite the key to 0. Shared, it moves the
// key by our change only, and the Reader's endpoint sum agrees with the
// totals whoever wrote them.
func TestSharedKeysIssueCase(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	rec := newRecorder(t, e, nil, WithNamespace(ns), WithSharedKeys())
	h := rec.HTTP()

	node.incrBy("connections:http:current", 1) // INCR
	node.incrBy("connections:http:current", 1)
	for range 3 {
		node.request("PUT", "/api/forum/questions/123", 200) // seed 000's raw path
	}
	h.Start()
	h.Done(Request{Method: "PUT", Route: "/api/forum/questions/{id}", Status: 200})
	h.Record(Request{Method: "GET", Route: "/api/users", Status: 500})
	require.NoError(t, rec.Flush(ctx))

	cur := ns.Prefix + "connections:http:current"
	assert.Equal(t, int64(2), getInt(t, e, cur), "the other writer's 2 stay")
	h.Start()
	h.Start()
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, int64(4), getInt(t, e, cur))
	node.incrBy("connections:http:current", -1) // DECR
	h.Done(Request{Method: "GET", Route: "/api/users", Status: 200})
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, int64(2), getInt(t, e, cur))
	assert.Equal(t, int64(4), getInt(t, e, ns.Prefix+"connections:http:max_since_startup"))

	snap, err := sharedReader(t, e, ns).Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(6), snap.HTTP.Total)
	assert.Equal(t, int64(1), snap.HTTP.Errors)
	assert.Equal(t, int64(2), snap.HTTP.Connections, "the shared count, both sides")
	assert.Equal(t, []EndpointTotals{
		{Endpoint: "GET /api/users", Requests: 2, Errors: 1},
		{Endpoint: "PUT /api/forum/questions/123", Requests: 3},
		{Endpoint: "PUT /api/forum/questions/{id}", Requests: 1},
	}, snap.HTTP.Endpoints)
	reqs, errs := endpointSums(snap)
	assert.Equal(t, snap.HTTP.Total, reqs)
	assert.Equal(t, snap.HTTP.Errors, errs)

	// Without the option the Reader sees only what we wrote: the
	// disagreement the option removes.
	rd, err := NewReader(e.Client, nil, WithNamespace(ns))
	require.NoError(t, err)
	snap, err = rd.Read(ctx)
	require.NoError(t, err)
	reqs, _ = endpointSums(snap)
	assert.Equal(t, int64(3), reqs)
	assert.Equal(t, int64(6), snap.HTTP.Total)

	// Close takes back our in-flight count, not the other writer's.
	require.NoError(t, rec.Close(ctx))
	assert.Equal(t, int64(1), getInt(t, e, cur))
}

// The other writer and 4 recorders write the same keys at the same time,
// each recorder flushing in the background: once everyone is done the
// totals, the endpoint sums and the current connections add up exactly.
func TestSharedKeysConcurrentWriters(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	const recs, perRec, nodeReqs = 4, 2000, 500
	var rs []*Recorder
	for range recs {
		r, err := New(e.Client, testOptions(e, WithNamespace(ns), WithSharedKeys(), WithInterval(10*time.Millisecond))...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		rs = append(rs, r)
	}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := r.HTTP()
			for j := range perRec {
				h.Start()
				st := 200
				if j%10 == 0 {
					st = 500
				}
				h.Done(Request{Method: "GET", Route: "/api/r/" + strconv.Itoa(i%2), Status: st})
			}
			h.Start() // one request still in flight per recorder
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := range nodeReqs {
			node.incrBy("connections:http:current", 1)
			st := 200
			if j%5 == 0 {
				st = 404
			}
			node.request("GET", "/api/n/"+strconv.Itoa(j%7), st)
			if j%100 != 0 { // 5 requests never finish
				node.incrBy("connections:http:current", -1)
			}
		}
	}()
	wg.Wait()
	for range 2 { // the second round: on a cluster the maximum learns from the first
		for _, r := range rs {
			require.NoError(t, r.Flush(ctx))
		}
	}
	cur := ns.Prefix + "connections:http:current"
	assert.Equal(t, int64(5+recs), getInt(t, e, cur))
	snap, err := sharedReader(t, e, ns).Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(recs*perRec+nodeReqs), snap.HTTP.Total)
	assert.Equal(t, int64(recs*perRec/10+nodeReqs/5), snap.HTTP.Errors)
	assert.Equal(t, int64(5+recs), snap.HTTP.Connections)
	reqs, errs := endpointSums(snap)
	assert.Equal(t, snap.HTTP.Total, reqs)
	assert.Equal(t, snap.HTTP.Errors, errs)
	assert.Len(t, snap.HTTP.Endpoints, 2+7)
	assert.GreaterOrEqual(t, getInt(t, e, ns.Prefix+"connections:http:max_since_startup"), int64(5+recs))
	for _, r := range rs {
		require.NoError(t, r.Close(ctx))
	}
	assert.Equal(t, int64(5), getInt(t, e, cur), "the other writer's unfinished requests")
}

// An instance killed without Close leaves its in-flight count in the
// shared key (as a killed Node instance does) until a live recorder's
// flush finds its heartbeat expired and takes it back; the other writer's
// count is untouched. An instance whose flushes failed past its heartbeat
// comes back with its whole count.
func TestSharedKeysKilledInstance(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	const hb = time.Second
	e.RequireShortWaits(2 * hb)
	opts := []Option{WithNamespace(ns), WithSharedKeys(), WithInterval(100 * time.Millisecond), WithHeartbeatTTL(hb)}
	a := newRecorder(t, e, nil, opts...)
	b := newRecorder(t, e, nil, opts...)
	c := newRecorder(t, e, nil, opts...)
	for range 3 {
		a.HTTP().Start()
	}
	b.HTTP().Start()
	c.HTTP().Start()
	node.incrBy("connections:http:current", 2)
	require.NoError(t, a.Flush(ctx))
	require.NoError(t, b.Flush(ctx))
	require.NoError(t, c.Flush(ctx))
	cur := ns.Prefix + "connections:http:current"
	assert.Equal(t, int64(7), getInt(t, e, cur))

	a.abandon() // killed
	c.HTTP().Start()
	e.Advance(hb + 10*time.Millisecond) // c silent too: its flushes fail meanwhile
	node.incrBy("connections:http:current", 1)
	require.NoError(t, b.Flush(ctx))
	assert.Equal(t, int64(3+1), getInt(t, e, cur), "a's 3 and c's 1 taken back; the other writer's 3 and b's 1 stay")
	require.NoError(t, c.Flush(ctx))
	assert.Equal(t, int64(3+1+2), getInt(t, e, cur), "c is back with its 2")
	require.NoError(t, b.Flush(ctx))
	assert.Equal(t, int64(6), getInt(t, e, cur), "nothing taken twice")
}

// The maximum is an atomic maximum of the shared count: the other
// writers' part plus our peak since the last flush; it never goes down,
// whoever wrote a higher one.
func TestSharedKeysMaximum(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	rec := newRecorder(t, e, nil, WithNamespace(ns), WithSharedKeys())
	h := rec.HTTP()
	maxK := ns.Prefix + "connections:http:max_since_startup"
	node.incrBy("connections:http:current", 5)
	for range 3 {
		h.Start()
	}
	for range 2 {
		h.Done(Request{Method: "GET", Route: "/", Status: 200})
	}
	require.NoError(t, rec.Flush(ctx)) // our peak 3, now 1: the shared count is 6
	require.NoError(t, rec.Flush(ctx))
	want := int64(5 + 3)
	if e.Backend == harness.Cluster {
		// The maximum is in another slot than the count: the first
		// flush knew nothing of the other writer's 5 (it took 0 + our
		// 3), the second took the 5 the first left plus our peak 1.
		want = 5 + 1
	}
	assert.Equal(t, want, getInt(t, e, maxK))
	node.incrBy("connections:http:max_since_startup", 100) // the other writer saw more
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, want+100, getInt(t, e, maxK))
}

// A flush whose reply is lost is resent by go-redis; the ledger
// recognises it, so our deltas to the shared keys count once, and the
// other writer's meanwhile are untouched.
func TestSharedKeysLostReplyCountsOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	pc, p := e.ProxyClient(nil)
	require.NoError(t, applyOp.Load(ctx, pc))
	rec := newRecorder(t, e, pc, WithNamespace(ns), WithSharedKeys())
	h := rec.HTTP()
	for round := int64(1); round <= 3; round++ {
		h.Start()
		h.Record(Request{Method: "GET", Route: "/x", Status: 200})
		node.request("GET", "/x", 200)
		node.incrBy("connections:http:current", 1)
		p.LoseReply(applyOp.Script().Hash())
		require.NoError(t, rec.Flush(ctx), "the resent pipeline finds its batch applied")
		require.Equal(t, round, p.Lost())
		assert.Equal(t, 2*round, getInt(t, e, ns.Prefix+"requests:total"))
		assert.Equal(t, 2*round, getInt(t, e, ns.Prefix+"requests:endpoint:GET /x"))
		assert.Equal(t, 2*round, getInt(t, e, ns.Prefix+"connections:http:current"))
	}
}

// The Reader's endpoint rows stay within WithMaxSeries whatever the other
// writer's raw paths: the busiest endpoints, the rest summed into the
// Overflow row, so the sum still agrees with the totals.
func TestSharedKeysReaderCap(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	rec := newRecorder(t, e, nil, WithNamespace(ns), WithSharedKeys(), WithMaxSeries(2))
	for i := range 5 {
		for range i + 1 {
			node.request("GET", "/api/item/"+strconv.Itoa(i), 200)
		}
	}
	for _, r := range []string{"/a", "/b", "/c"} { // the third one past our own cap
		rec.HTTP().Record(Request{Method: "GET", Route: r, Status: 503})
	}
	require.NoError(t, rec.Flush(ctx))
	snap, err := sharedReader(t, e, ns, WithMaxSeries(2)).Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, []EndpointTotals{
		{Endpoint: Overflow, Requests: 1 + 2 + 3 + 3, Errors: 3},
		{Endpoint: "GET /api/item/3", Requests: 4},
		{Endpoint: "GET /api/item/4", Requests: 5},
	}, snap.HTTP.Endpoints)
	reqs, errs := endpointSums(snap)
	assert.Equal(t, snap.HTTP.Total, reqs)
	assert.Equal(t, snap.HTTP.Errors, errs)
}

// A service that passes the raw path as the route (WithRoute) writes the
// other writer's very keys: one row per path, both counts in it, and our
// cardinality cap still bounds our keys.
func TestSharedKeysRawPath(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	node := other{t, e, ns}
	rec := newRecorder(t, e, nil, WithNamespace(ns), WithSharedKeys())
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /api/forum/questions/{id}", func(w http.ResponseWriter, r *http.Request) {})
	hd := Middleware(rec, WithRoute(func(r *http.Request) string { return r.URL.Path }))(mux)
	hd.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("PUT", "/api/forum/questions/123", nil))
	node.request("PUT", "/api/forum/questions/123", 200)
	require.NoError(t, rec.Flush(ctx))
	assert.Equal(t, int64(2), getInt(t, e, ns.Prefix+"requests:endpoint:PUT /api/forum/questions/123"))
	snap, err := sharedReader(t, e, ns).Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, []EndpointTotals{{Endpoint: "PUT /api/forum/questions/123", Requests: 2}}, snap.HTTP.Endpoints)
}

// Data the other writer left that is not a count is reported naming the
// key, by the flush (which applies the rest) and by the Reader.
func TestSharedKeysCorrupt(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	var got []error
	rec := newRecorder(t, e, nil, WithNamespace(ns), WithSharedKeys(), WithErrorHandler(func(err error) { got = append(got, err) }))
	cur := ns.Prefix + "connections:http:current"
	require.NoError(t, e.Client.Set(ctx, cur, "two", 0).Err())
	rec.HTTP().Start()
	rec.HTTP().Record(Request{Method: "GET", Route: "/", Status: 200})
	require.NoError(t, rec.Flush(ctx))
	require.NotEmpty(t, got)
	assert.ErrorIs(t, got[0], keys.ErrCorrupt)
	assert.Contains(t, got[0].Error(), cur)
	assert.Equal(t, int64(1), getInt(t, e, ns.Prefix+"requests:total"), "the rest applied")
	_, err := sharedReader(t, e, ns).Read(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), cur)

	require.NoError(t, e.Client.Set(ctx, cur, "1", 0).Err())
	bad := ns.Prefix + "errors:endpoint:GET /x"
	require.NoError(t, e.Client.HSet(ctx, bad, "a", "1").Err())
	_, err = sharedReader(t, e, ns).Read(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), bad)
}

// The Reader reads at most 100,000 endpoint keys (the bound of its
// list): at the bound it reads them all, one more and Read fails naming
// the pattern, rather than hold an unbounded list.
func TestSharedKeysReaderBound(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	set := func(from, to int) {
		for i := from; i < to; i += 5000 {
			pipe := e.Client.Pipeline()
			for j := i; j < min(i+5000, to); j++ {
				pipe.Set(ctx, ns.Prefix+"requests:endpoint:GET /p/"+strconv.Itoa(j), 1, 0)
			}
			_, err := pipe.Exec(ctx)
			require.NoError(t, err)
		}
	}
	set(0, maxSharedKeys)
	require.NoError(t, e.Client.IncrBy(ctx, ns.Prefix+"requests:total", maxSharedKeys).Err())
	snap, err := sharedReader(t, e, ns).Read(ctx)
	require.NoError(t, err)
	assert.Len(t, snap.HTTP.Endpoints, defaultMaxSeries+1)
	reqs, _ := endpointSums(snap)
	assert.Equal(t, int64(maxSharedKeys), reqs)
	assert.Equal(t, snap.HTTP.Total, reqs)
	set(maxSharedKeys, maxSharedKeys+1)
	_, err = sharedReader(t, e, ns).Read(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 100000 endpoint keys")
}

// TestSharedReadLeavesCorruptEndpointOut: WithSharedKeys, an endpoint key
// of another type or value is left out of the endpoint rows, and Read
// returns the rest with keys.ErrCorrupt naming it (it returned no
// Snapshot).
func TestSharedReadLeavesCorruptEndpointOut(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := sharedNS(e)
	require.NoError(t, e.Client.Set(ctx, ns.Prefix+"requests:endpoint:GET /a", "3", 0).Err())
	require.NoError(t, e.Client.Set(ctx, ns.Prefix+"requests:total", "5", 0).Err())
	hashed, garbage := ns.Prefix+"errors:endpoint:GET /b", ns.Prefix+"requests:endpoint:GET /c"
	require.NoError(t, e.Client.HSet(ctx, hashed, "x", "y").Err())
	require.NoError(t, e.Client.Set(ctx, garbage, "lots", 0).Err())
	snap, err := sharedReader(t, e, ns).Read(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", hashed))
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", garbage))
	require.NotNil(t, snap)
	assert.Equal(t, int64(5), snap.HTTP.Total)
	assert.Equal(t, []EndpointTotals{{Endpoint: "GET /a", Requests: 3}}, snap.HTTP.Endpoints)
}
