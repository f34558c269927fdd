package harness

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResendGate holds go-redis's resends of a client that reaches Redis
// through a Proxy, so that a test decides what runs on the server between
// a request's first run and its resend, instead of racing go-redis's
// retry backoff (8-512 ms by default). Once the proxy has lost a reply
// (LoseReply), every connection the client dials waits until the test
// releases that loss. With a pool of one connection (redis.Options
// PoolSize 1) the resend needs a new connection, the proxy having cut the
// old one, so it waits there: the first run is done on the server, the
// resend has not reached it.
//
// The usual test: arm a loss, start the request in a goroutine, then
// Between(t, func() { traffic.Run(n) }) makes n other writes on the same
// entity before the resend, and the request's result is checked against
// what its first run did.
type ResendGate struct {
	p        *Proxy
	released atomic.Int64
}

var _ redis.Hook = (*ResendGate)(nil)

// HoldResends installs a ResendGate on rdb, a client from ProxyClient
// whose proxy is p (a standalone client, or a cluster client, whose
// nodes get the gate as go-redis creates them: install it before the
// client's first command).
func HoldResends(t testing.TB, rdb redis.UniversalClient, p *Proxy) *ResendGate {
	t.Helper()
	g := &ResendGate{p: p}
	switch c := rdb.(type) {
	case *redis.Client:
		c.AddHook(g)
	case *redis.ClusterClient:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(g) })
	default:
		t.Fatalf("harness: no dial hook for %T", rdb)
	}
	return g
}

// Released returns the number of losses released so far.
func (g *ResendGate) Released() int64 { return g.released.Load() }

// Release lets the connections held for the latest loss be dialled: the
// held resend goes out.
func (g *ResendGate) Release() { g.released.Add(1) }

// WaitLoss waits until the proxy has lost one more reply than the gate
// has released: the request in flight ran on the server, and its resend
// is held.
func (g *ResendGate) WaitLoss(t testing.TB) {
	t.Helper()
	WaitFor(t, "the reply to be lost", func() bool { return g.p.Lost() == g.released.Load()+1 })
}

// Between waits for the loss of the request in flight (WaitLoss), runs
// between, and releases the resend: whatever between does on the server
// happens after the request's first run and before its resend.
func (g *ResendGate) Between(t testing.TB, between func()) {
	t.Helper()
	g.WaitLoss(t)
	between()
	g.Release()
}

// DialHook holds a dial while a lost reply is not released, for at most a
// minute (the test's own bound: the test then fails on what the resend
// found, not by hanging).
func (g *ResendGate) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		deadline := time.Now().Add(time.Minute)
		for g.p.Lost() > g.released.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		// go-redis bounds each dial attempt by DialTimeout through ctx; the
		// hold is not the dial, so the dial gets a context of its own.
		return next(context.WithoutCancel(ctx), network, addr)
	}
}

// ProcessHook passes commands through.
func (g *ResendGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (g *ResendGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Traffic is the other writers of an entity in a resend test: goroutines
// that each run one write per credit the test gives, so the test knows
// how many writes ran, and when. Writers stop when the test ends (or at
// Drain).
type Traffic struct {
	t       testing.TB
	credits chan struct{}
	given   atomic.Int64
	done    atomic.Int64
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// NewTraffic returns a Traffic with no writer yet.
func NewTraffic(t testing.TB) *Traffic {
	tr := &Traffic{t: t, credits: make(chan struct{}, 1<<16), stop: make(chan struct{})}
	t.Cleanup(tr.halt)
	return tr
}

// Writer starts a writer that calls write once per credit, n counting
// its own calls from 0; an error fails the test (t.Errorf) and still
// spends the credit.
func (tr *Traffic) Writer(write func(n int) error) {
	tr.wg.Add(1)
	go func() {
		defer tr.wg.Done()
		for n := 0; ; n++ {
			select {
			case <-tr.stop:
				return
			case <-tr.credits:
			}
			if err := write(n); err != nil {
				tr.t.Errorf("traffic writer: %v", err)
			}
			tr.done.Add(1)
		}
	}()
}

// Give hands out n credits (at most 65,536 unspent) and returns at once:
// the writers write while the test goes on.
func (tr *Traffic) Give(n int) {
	tr.given.Add(int64(n))
	for range n {
		tr.credits <- struct{}{}
	}
}

// Run hands out n credits and waits until every credit given so far is
// spent: n writes (and any still running from an earlier Give) are done.
func (tr *Traffic) Run(n int) {
	tr.t.Helper()
	tr.Give(n)
	tr.Wait()
}

// Wait waits until every credit given so far is spent.
func (tr *Traffic) Wait() {
	tr.t.Helper()
	WaitFor(tr.t, "the other writers' writes", func() bool { return tr.done.Load() >= tr.given.Load() })
}

// Done returns the number of writes done (credits spent) so far.
func (tr *Traffic) Done() int64 { return tr.done.Load() }

// Drain waits until every credit given is spent, then stops the writers
// and waits for them to return.
func (tr *Traffic) Drain() {
	tr.t.Helper()
	tr.Wait()
	tr.halt()
}

func (tr *Traffic) halt() {
	tr.once.Do(func() { close(tr.stop) })
	tr.wg.Wait()
}
