package autopipe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/script"
)

// echoIncr increments KEYS[1] (with a TTL) and returns {KEYS[1], ARGV[1],
// the new count}: each caller can check it got its own reply.
const echoIncr = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], 60000)
return {KEYS[1], ARGV[1], n}`

// fixture is one test's group: a fresh client of the test's backend with a
// round-trip counter, a group of lanes on it, and a script unique to the
// test (so that the server surely does not hold it yet).
type fixture struct {
	e     *harness.Env
	c     redis.UniversalClient
	trips *harness.Trips
	g     *Group
	s     *script.Script
}

func newFixture(t *testing.T, lanes int) *fixture {
	e := harness.New(t)
	c := e.FreshClient()
	return &fixture{e: e, c: c, trips: harness.CountTrips(c), g: New(c, lanes), s: newScript(e)}
}

// key is a key of the test's namespace, tagged with id.
func (f *fixture) key(id string) string { return f.e.NS.Prefix + "{" + id + "}" }

// queueThenFree holds every lane of the nodes serving keys, starts n
// goroutines that each call call(i), waits until all n calls are queued,
// then frees one lane of each node (which drains its queue) and waits for
// the goroutines. It returns those nodes.
func (f *fixture) queueThenFree(t *testing.T, keys []string, n int, call func(i int)) []*node[scriptCall] {
	t.Helper()
	nodes := hold(f.g, keys...)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			call(i)
		}(i)
	}
	harness.WaitFor(t, "every call queued", func() bool { return queueLen(f.g) == n })
	for _, nd := range nodes {
		nd.release()
	}
	wg.Wait()
	return nodes
}

// newScript returns echoIncr made unique to the test, so that the server
// surely does not hold it yet.
func newScript(e *harness.Env) *script.Script {
	return script.New(echoIncr, "-- "+e.NS.Prefix)
}

// nodesOf returns the nodes of g serving keys (one unless on a cluster),
// creating them.
func nodesOf(g *Group, keys ...string) []*node[scriptCall] {
	var out []*node[scriptCall]
	seen := map[*node[scriptCall]]bool{}
	for _, k := range keys {
		if n := g.q.nodeFor(context.Background(), k); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// all returns every node g has.
func all(g *Group) []*node[scriptCall] {
	out := []*node[scriptCall]{&g.q.one}
	g.q.nodes.Range(func(_, v any) bool { out = append(out, v.(*node[scriptCall])); return true })
	return out
}

// hold marks every lane of the nodes serving keys as in flight, as if
// round trips were pending, so that calls to them queue; a node's release
// then hands one lane back, as a returning direct call does, which drains
// its queue.
func hold(g *Group, keys ...string) []*node[scriptCall] {
	nodes := nodesOf(g, keys...)
	for _, n := range nodes {
		n.mu.Lock()
		for n.busy < g.q.lanes {
			n.open()
		}
		n.mu.Unlock()
	}
	return nodes
}

// sum adds f over every node of g, each read under its lock.
func sum(g *Group, f func(n *node[scriptCall]) int) int {
	total := 0
	for _, n := range all(g) {
		n.mu.Lock()
		total += f(n)
		n.mu.Unlock()
	}
	return total
}

// queueLen counts the calls queued on every node.
func queueLen(g *Group) int { return sum(g, func(n *node[scriptCall]) int { return len(n.queue) }) }

// busy counts the lanes in flight on every node.
func busy(g *Group) int { return sum(g, func(n *node[scriptCall]) int { return n.busy }) }

type reply struct {
	key, arg string
	n        int64
}

// parse reads an echoIncr reply: parse(t)(g.Run(...)). It only asserts, so
// goroutines may call it.
func parse(t *testing.T) func(v any, err error) reply {
	return func(v any, err error) reply { return parseReply(t, v, err) }
}

func parseReply(t *testing.T, v any, err error) reply {
	t.Helper()
	a, ok := v.([]any)
	if !assert.NoError(t, err) || !assert.True(t, ok, "reply %#v", v) || !assert.Len(t, a, 3) {
		return reply{}
	}
	k, _ := a[0].(string)
	arg, _ := a[1].(string)
	n, _ := a[2].(int64)
	return reply{k, arg, n}
}

// A call made while nothing is in flight is sent at once, alone.
func TestRunAlone(t *testing.T) {
	f := newFixture(t, 4)
	k := f.key("a")
	for i := 1; i <= 3; i++ {
		r := parse(t)(f.g.Run(f.e.Ctx(), f.s, []string{k}, "x"))
		assert.Equal(t, reply{k, "x", int64(i)}, r)
	}
	assert.Zero(t, f.trips.Pipelines(), "no pipeline for lone calls")
	assert.EqualValues(t, 4, f.trips.Single(), "EVALSHA, EVAL (NOSCRIPT), then EVALSHA twice")
	assert.Zero(t, busy(f.g))
}

// Calls that queue behind busy lanes go out together, each with its own
// reply, as one pipeline (split per node on a cluster), after NOSCRIPT
// once: EVALSHA for the batch, then EVAL for the batch.
func TestQueuedCallsShareOnePipeline(t *testing.T) {
	f := newFixture(t, 2)
	ctx := f.e.Ctx()
	const n = 40
	got := make([]reply, n)
	var keys []string
	for i := 0; i < 7; i++ {
		keys = append(keys, f.key("k"+strconv.Itoa(i))) // over many slots
	}
	key := func(i int) string { return keys[i%len(keys)] }
	nodes := f.queueThenFree(t, keys, n, func(i int) {
		got[i] = parse(t)(f.g.Run(ctx, f.s, []string{key(i)}, strconv.Itoa(i)))
	})
	counts := map[string][]int64{}
	for i, r := range got {
		assert.Equal(t, key(i), r.key)
		assert.Equal(t, strconv.Itoa(i), r.arg, "each caller gets its own reply")
		counts[r.key] = append(counts[r.key], r.n)
	}
	for k, ns := range counts {
		assert.ElementsMatch(t, seq(len(ns)), ns, "every INCR of %s ran exactly once", k)
	}
	if f.e.Backend == harness.Cluster {
		assert.Len(t, nodes, 3, "seven tags over three masters")
	}
	// Per node, one EVALSHA pipeline, and one more after NOSCRIPT and a
	// SCRIPT LOAD, which loads every master: on a cluster, a node whose
	// batch went out after another node's load needs no second pipeline.
	first := f.trips.Pipelines()
	assert.LessOrEqual(t, first, int64(2*len(nodes)))
	assert.Greater(t, first, int64(len(nodes)))
	if f.e.Backend != harness.Cluster { // a cluster loads through its node clients, which the hook does not see
		assert.EqualValues(t, 1, f.trips.Single(), "the script was loaded once")
	}
	held := len(nodes) * (f.g.q.lanes - 1)
	harness.WaitFor(t, "the drainers' lanes freed", func() bool { return busy(f.g) == held })

	// Now the server holds the script: one pipeline per node.
	f.queueThenFree(t, keys, n, func(i int) {
		_, err := f.g.Run(ctx, f.s, []string{key(i)}, "again")
		assert.NoError(t, err)
	})
	assert.EqualValues(t, first+int64(len(nodes)), f.trips.Pipelines())
	harness.WaitFor(t, "the drainers' lanes freed", func() bool { return busy(f.g) == held })
}

// The lanes are the Queue's: with all of them in flight, calls queued on a
// node that has one in flight open no other (on a cluster, lanes per
// master would split the calls into batches a third the size on 3
// masters); they go out together when its lane comes back. A node with
// nothing in flight still sends at once, so a busy master never holds up
// another's calls.
func TestLanesAreShared(t *testing.T) {
	f := newFixture(t, 2)
	ctx := f.e.Ctx()
	a := f.key("a")
	b, idle := a, ""
	// On a cluster: b and idle on two other masters than a's.
	if f.e.Backend == harness.Cluster {
		seen := map[*node[scriptCall]]bool{nodesOf(f.g, a)[0]: true}
		for i := 0; idle == ""; i++ {
			k := f.key("k" + strconv.Itoa(i))
			if n := nodesOf(f.g, k)[0]; !seen[n] {
				seen[n] = true
				if b == a {
					b = k
				} else {
					idle = k
				}
			}
		}
	}
	require.NoError(t, f.s.Load(ctx, f.c))
	hold(f.g, a)
	nb := nodesOf(f.g, b)[0]
	nb.mu.Lock()
	if nb.busy == 0 {
		nb.open() // b's one lane in flight
	}
	lanes := nb.busy
	nb.mu.Unlock()
	if idle != "" {
		r := parse(t)(f.g.Run(ctx, f.s, []string{idle}, "now"))
		assert.Equal(t, reply{idle, "now", 1}, r, "an idle master's call goes out at once")
	}
	f.trips.Reset()
	const n = 3
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.g.Run(ctx, f.s, []string{b}, "q")
			assert.NoError(t, err)
		}()
	}
	harness.WaitFor(t, "every call queued", func() bool {
		nb.mu.Lock()
		defer nb.mu.Unlock()
		return len(nb.queue) == n
	})
	nb.mu.Lock()
	assert.Equal(t, lanes, nb.busy, "no lane opened beyond the Queue's")
	nb.mu.Unlock()
	nb.release()
	wg.Wait()
	assert.EqualValues(t, 1, f.trips.Pipelines(), "the queued calls went out together")
	assert.Zero(t, f.trips.Single())
	v, err := f.c.Get(ctx, b).Int()
	require.NoError(t, err)
	assert.Equal(t, n, v)
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// A queue longer than MaxBatch goes out in MaxBatch-sized pipelines.
func TestBatchesAreBounded(t *testing.T) {
	f := newFixture(t, 1)
	ctx := f.e.Ctx()
	k := f.key("one")
	require.NoError(t, f.s.Load(ctx, f.c))
	f.trips.Reset()
	n := 2*MaxBatch + 10
	var seen sync.Map
	f.queueThenFree(t, []string{k}, n, func(int) {
		r := parse(t)(f.g.Run(ctx, f.s, []string{k}, "b"))
		_, dup := seen.LoadOrStore(r.n, true)
		assert.False(t, dup, "count %d returned twice", r.n)
	})
	assert.EqualValues(t, 3, f.trips.Pipelines(), "%d calls in batches of %d", n, MaxBatch)
	v, err := f.c.Get(ctx, k).Int()
	require.NoError(t, err)
	assert.Equal(t, n, v)
	harness.WaitFor(t, "the lane freed", func() bool { return busy(f.g) == 0 })
}

// A caller whose context ends while its call waits gets the context's error
// and its call is never sent.
func TestAbandonedCallIsNotSent(t *testing.T) {
	f := newFixture(t, 1)
	g := f.g
	gone, stays := f.key("gone"), f.key("stays")
	nodes := hold(g, gone, stays)
	ctx, cancel := context.WithCancel(f.e.Ctx())
	errc := make(chan error, 1)
	go func() {
		_, err := g.Run(ctx, f.s, []string{gone}, "x")
		errc <- err
	}()
	harness.WaitFor(t, "the call queued", func() bool { return queueLen(g) == 1 })
	done := make(chan reply, 1)
	go func() { done <- parse(t)(g.Run(f.e.Ctx(), f.s, []string{stays}, "y")) }()
	harness.WaitFor(t, "both queued", func() bool { return queueLen(g) == 2 })
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	for _, n := range nodes {
		n.release()
	}
	assert.Equal(t, reply{stays, "y", 1}, <-done)
	n, err := f.c.Exists(f.e.Ctx(), gone).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the abandoned call never ran")
	harness.WaitFor(t, "the lane freed", func() bool { return busy(g) == 0 })
}

// Many goroutines through few lanes: every call runs exactly once and gets
// its own reply, and the group is idle afterwards.
func TestManyGoroutines(t *testing.T) {
	f := newFixture(t, 2)
	e, c, h, g, s := f.e, f.c, f.trips, f.g, f.s
	const workers, each, keys = 64, 50, 8
	var mu sync.Mutex
	seen := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k := e.NS.Prefix + "{m" + strconv.Itoa((w+i)%keys) + "}"
				arg := fmt.Sprintf("%d/%d", w, i)
				v, err := g.Run(e.Ctx(), s, []string{k}, arg)
				r := parseReply(t, v, err)
				assert.Equal(t, k, r.key)
				assert.Equal(t, arg, r.arg)
				mu.Lock()
				if seen[k] == nil {
					seen[k] = map[int64]bool{}
				}
				assert.False(t, seen[k][r.n], "count %d of %s twice", r.n, k)
				seen[k][r.n] = true
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	total := 0
	for k, ns := range seen {
		v, err := c.Get(e.Ctx(), k).Int()
		require.NoError(t, err)
		assert.Equal(t, len(ns), v, "%s ran exactly the calls made", k)
		total += v
	}
	assert.Equal(t, workers*each, total)
	trips := h.Total()
	t.Logf("%d calls in %d round trips (%d pipelines)", total, trips, h.Pipelines())
	if e.Real() {
		assert.Less(t, trips, int64(total), "calls shared round trips")
	}
	harness.WaitFor(t, "the group idle", func() bool { return busy(g) == 0 && queueLen(g) == 0 })
}

// A stalled connection: every caller returns at its own deadline with an
// error, nothing panics, and the group works again once the connection
// does.
func TestStalledConnection(t *testing.T) {
	e := harness.New(t)
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	g := New(pc, 1)
	s := newScript(e)
	k := e.NS.Prefix + "{stall}"
	require.NoError(t, s.Load(e.Ctx(), pc))
	p.Stall()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(e.Ctx(), 300*time.Millisecond)
			defer cancel()
			_, errs[i] = g.Run(ctx, s, []string{k}, "s")
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		require.Error(t, err)
		var ne net.Error
		assert.True(t, errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()), "%v", err)
	}
	p.Resume()
	harness.WaitFor(t, "the group idle", func() bool { return busy(g) == 0 })
	r := parse(t)(g.Run(e.Ctx(), s, []string{k}, "after"))
	assert.Equal(t, "after", r.arg)
}

// A connection cut in the middle of a shared pipeline: every caller gets
// an error or its reply, none hangs, nothing panics, and the group works
// again on a new connection.
func TestCutConnection(t *testing.T) {
	e := harness.New(t)
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	f := &fixture{e: e, c: pc, g: New(pc, 1), s: newScript(e)}
	ctx := e.Ctx()
	k := f.key("cut")
	require.NoError(t, f.s.Load(ctx, pc))
	// Warm the client first: a cluster client's first commands (its slot
	// map) would spend the byte budget elsewhere.
	_ = parse(t)(f.g.Run(ctx, f.s, []string{k}, "warm"))
	const n = 20
	var failed, answered atomic.Int64
	p.CutAfter(300) // a few commands into the pipeline
	f.queueThenFree(t, []string{k}, n, func(int) {
		v, err := f.g.Run(ctx, f.s, []string{k}, "c")
		if err != nil {
			failed.Add(1)
			return
		}
		if r := parseReply(t, v, nil); r.arg == "c" {
			answered.Add(1)
		}
	})
	assert.EqualValues(t, n, failed.Load()+answered.Load(), "every call answered or failed")
	if e.Backend != harness.Cluster {
		// A standalone client fails a broken pipeline as a whole; a cluster
		// client keeps the replies it read before the cut.
		assert.EqualValues(t, n, failed.Load(), "the cut pipeline fails as a whole")
	} else {
		assert.Positive(t, failed.Load())
	}
	assert.GreaterOrEqual(t, p.Cuts(), int64(1), "every open connection is cut (one per node on a cluster)")
	harness.WaitFor(t, "the group idle", func() bool { return busy(f.g) == 0 })
	r := parse(t)(f.g.Run(ctx, f.s, []string{k}, "after"))
	assert.Equal(t, "after", r.arg)
}

// On a cluster a stalled master holds up only the calls bound for it:
// calls to the other masters, made at the same time, go through.
func TestStalledMasterHoldsUpOnlyItsCalls(t *testing.T) {
	e := harness.New(t)
	if e.Backend != harness.Cluster {
		t.Skip("needs a cluster")
	}
	ctx := e.Ctx()
	cc := e.Client.(*redis.ClusterClient)
	master := func(k string) string {
		m, err := cc.MasterForKey(ctx, k)
		require.NoError(t, err)
		return m.Options().Addr
	}
	stalled := e.NS.Prefix + "{s}"
	victim := master(stalled)
	var healthy string
	for i := 0; healthy == ""; i++ {
		if k := e.NS.Prefix + "{h" + strconv.Itoa(i) + "}"; master(k) != victim {
			healthy = k
		}
	}
	p := harness.NewProxy(t, victim)
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{master(healthy)}, MaxRetries: -1, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == victim {
				addr = p.Addr()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	t.Cleanup(func() { _ = c.Close() })
	g := New(c, 1)
	s := newScript(e)
	require.NoError(t, s.Load(ctx, c))
	// Warm the client up first: its first command fetches COMMAND from a
	// random node, which must not be the one about to stall.
	for _, k := range []string{healthy, stalled} {
		_, err := g.Run(ctx, s, []string{k}, "warm")
		require.NoError(t, err)
	}
	p.Stall()
	var wg sync.WaitGroup
	var ok, timedOut atomic.Int64
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			k := healthy
			if i%2 == 0 {
				k = stalled
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			r := parse(t)
			if k == stalled {
				if _, err := g.Run(cctx, s, []string{k}, "x"); err != nil {
					timedOut.Add(1)
				}
				return
			}
			if got := r(g.Run(cctx, s, []string{k}, "x")); got.key == k {
				ok.Add(1)
			}
		}(i)
	}
	wg.Wait()
	assert.EqualValues(t, 10, ok.Load(), "every call to the healthy master went through")
	assert.EqualValues(t, 10, timedOut.Load(), "every call to the stalled master timed out")
	p.Resume()
	harness.WaitFor(t, "the group idle", func() bool { return busy(g) == 0 })
}

// panicky is a hook that panics on any command carrying the argument
// "boom", as a faulty user hook might.
type panicky struct{}

func boom(cmd redis.Cmder) bool {
	for _, a := range cmd.Args() {
		if a == "boom" {
			return true
		}
	}
	return false
}

func (panicky) DialHook(next redis.DialHook) redis.DialHook { return next }
func (panicky) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if boom(cmd) {
			panic("boom")
		}
		return next(ctx, cmd)
	}
}
func (panicky) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if boom(cmd) {
				panic("boom")
			}
		}
		return next(ctx, cmds)
	}
}

// A panic in a lone call reaches its caller and frees the lane; a panic in
// a shared pipeline becomes every waiting caller's error, never a crash.
func TestPanicsFreeTheLane(t *testing.T) {
	f := newFixture(t, 1)
	f.c.AddHook(panicky{})
	ctx := f.e.Ctx()
	k := f.key("p")
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		_, _ = f.g.Run(ctx, f.s, []string{k}, "boom")
	}()
	assert.Zero(t, busy(f.g), "the lane is free after the panic")

	var failed atomic.Int64
	f.queueThenFree(t, []string{k}, 4, func(i int) {
		arg := "fine"
		if i == 0 {
			arg = "boom"
		}
		if _, err := f.g.Run(ctx, f.s, []string{k}, arg); err != nil {
			assert.Contains(t, err.Error(), "panic")
			failed.Add(1)
		}
	})
	assert.EqualValues(t, 4, failed.Load(), "the whole batch failed with the panic")
	harness.WaitFor(t, "the group idle", func() bool { return busy(f.g) == 0 })
	r := parse(t)(f.g.Run(ctx, f.s, []string{k}, "after"))
	assert.Equal(t, "after", r.arg)
}

func TestBatchContext(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	soon, c1 := context.WithTimeout(base, time.Minute)
	defer c1()
	later, c2 := context.WithTimeout(context.Background(), time.Hour)
	defer c2()
	cancelled, c3 := context.WithCancel(soon)
	c3()

	ctx, cancel := batchContext([]*call[scriptCall]{{ctx: cancelled}, {ctx: later}})
	defer cancel()
	require.NoError(t, ctx.Err(), "a caller's cancellation does not cancel the batch")
	assert.Equal(t, "v", ctx.Value(key{}), "the first caller's values")
	d, ok := ctx.Deadline()
	require.True(t, ok)
	ld, _ := later.Deadline()
	assert.Equal(t, ld, d, "the latest deadline")

	ctx, cancel = batchContext([]*call[scriptCall]{{ctx: soon}, {ctx: context.Background()}})
	defer cancel()
	_, ok = ctx.Deadline()
	assert.False(t, ok, "no deadline when a caller has none")
}

// Plain commands (Send) queued beside script calls go out in the same
// pipeline, ahead of the scripts, each with its own reply, and are sent
// once: the second pipeline after NOSCRIPT carries the scripts only.
func TestSendSharesThePipelineWithScripts(t *testing.T) {
	f := newFixture(t, 2)
	ctx := f.e.Ctx()
	const n = 40
	var keys []string
	for i := 0; i < 7; i++ {
		keys = append(keys, f.key("k"+strconv.Itoa(i)))
	}
	key := func(i int) string { return keys[i%len(keys)] }
	plainKey := func(i int) string { return key(i) + ":plain" } // same slot as key(i)
	incrs := make([]*redis.IntCmd, n)
	scripted := make([]reply, n)
	nodes := f.queueThenFree(t, keys, n, func(i int) {
		if i%2 == 0 {
			scripted[i] = parse(t)(f.g.Run(ctx, f.s, []string{key(i)}, strconv.Itoa(i)))
			return
		}
		incrs[i] = redis.NewIntCmd(ctx, "incr", plainKey(i))
		ttl := redis.NewDurationCmd(ctx, time.Millisecond, "pttl", plainKey(i))
		assert.NoError(t, f.g.Send(ctx, key(i), incrs[i], ttl))
		assert.NoError(t, ttl.Err())
	})
	counts := map[string][]int64{}
	for i, c := range incrs {
		if c == nil {
			continue
		}
		require.NoError(t, c.Err())
		counts[plainKey(i)] = append(counts[plainKey(i)], c.Val())
	}
	require.Len(t, counts, len(keys))
	for k, ns := range counts {
		assert.ElementsMatch(t, seq(len(ns)), ns, "every plain INCR of %s ran exactly once", k)
	}
	// Per node: the shared pipeline, and one more for the scripts after
	// NOSCRIPT; no pipeline of its own for the plain commands.
	assert.LessOrEqual(t, f.trips.Pipelines(), int64(2*len(nodes)))
	runs := map[string][]int64{}
	for i, r := range scripted {
		if i%2 == 0 {
			assert.Equal(t, strconv.Itoa(i), r.arg, "each caller gets its own reply")
			runs[r.key] = append(runs[r.key], r.n)
		}
	}
	for k, ns := range runs {
		assert.ElementsMatch(t, seq(len(ns)), ns, "every script call on %s ran exactly once", k)
	}
}

// Send with nothing in flight goes out at once, alone, as one pipeline.
func TestSendAlone(t *testing.T) {
	f := newFixture(t, 4)
	ctx := f.e.Ctx()
	k := f.key("a")
	set := redis.NewStatusCmd(ctx, "set", k, "v")
	get := redis.NewStringCmd(ctx, "get", k)
	require.NoError(t, f.g.Send(ctx, k, set, get))
	assert.NoError(t, set.Err())
	assert.Equal(t, "v", get.Val())
	assert.EqualValues(t, 1, f.trips.Pipelines())
	assert.Zero(t, f.trips.Single())
	assert.Zero(t, busy(f.g))
}
