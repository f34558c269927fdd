package harness

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Proxy is a TCP proxy between clients and one or more Redis servers (the
// nodes of a cluster) that a test can break on purpose: stall traffic, cut
// every connection now, cut after a number of bytes have gone from clients
// to servers, or lose the reply of a command after the server ran it. It
// closes with the test.
//
// Each upstream server gets its own listening port (a front), made on
// first use: Dial maps a server address to its front, so a cluster client
// with Dial as its Dialer reaches every node, redirections included,
// through the proxy.
type Proxy struct {
	t testing.TB

	mu      sync.Mutex
	fronts  map[string]*front  // upstream address -> its listener
	first   *front             // the front of NewProxy's target
	conns   map[net.Conn]*pair // client side -> pair, while open
	closed  bool
	stalled chan struct{} // non-nil and open while stalled
	lose    []string      // pending LoseReply matches
	budget  atomic.Int64  // bytes left before a cut; < 0 means no limit
	cuts    atomic.Int64
	lost    atomic.Int64
}

type front struct {
	ln     net.Listener
	target string
}

// pair is one proxied connection.
type pair struct {
	client, server net.Conn
	dropReply      atomic.Bool // the next reply bytes are lost and the pair cut
}

// NewProxy returns a proxy with a front for target already listening (its
// Addr); Dial adds fronts for other servers.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{t: t, fronts: map[string]*front{}, conns: map[net.Conn]*pair{}}
	p.budget.Store(-1)
	t.Cleanup(p.close)
	f, err := p.frontFor(target)
	if err != nil {
		t.Fatalf("harness: proxy listen: %v", err)
	}
	p.first = f
	return p
}

// frontFor returns the front of target, listening on a new loopback port
// the first time.
func (p *Proxy) frontFor(target string) (*front, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.fronts[target]; ok {
		return f, nil
	}
	if p.closed {
		return nil, net.ErrClosed
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{ln: ln, target: target}
	p.fronts[target] = f
	go p.accept(f)
	return f, nil
}

// Dial connects to the front of addr: a redis.Options or ClusterOptions
// Dialer that routes every node through the proxy.
func (p *Proxy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f, err := p.frontFor(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, f.ln.Addr().String())
}

// ProxyClient returns a client of the test's backend that reaches every
// server through a new Proxy: a standalone client on miniredis and the
// real server, a cluster client (every node and redirection proxied) on
// the cluster. opt's timeouts, retries and pool size are kept (the other
// fields are ignored on a cluster; MaxRetries -1 also turns off the cluster
// client's redirections, which retry a broken connection too), and
// ContextTimeoutEnabled is set, so
// that context deadlines bound calls on a stalled connection.
func (e *Env) ProxyClient(opt *redis.Options) (redis.UniversalClient, *Proxy) {
	e.T.Helper()
	o := redis.Options{}
	if opt != nil {
		o = *opt
	}
	o.ContextTimeoutEnabled = true
	var c redis.UniversalClient
	var p *Proxy
	if e.Backend == Cluster {
		addrs := strings.Split(os.Getenv("REDIS_CLUSTER_ADDRS"), ",")
		p = NewProxy(e.T, addrs[0])
		redirects := 0 // go-redis's default
		if o.MaxRetries < 0 {
			redirects = -1 // a cluster client also retries a broken connection as a redirect
		}
		c = redis.NewClusterClient(&redis.ClusterOptions{
			MaxRedirects: redirects,
			Addrs:        addrs, Dialer: p.Dial, ContextTimeoutEnabled: true,
			MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, PoolTimeout: o.PoolTimeout,
		})
	} else {
		p = NewProxy(e.T, e.Addr)
		o.Addr = p.Addr()
		c = redis.NewClient(&o)
	}
	e.T.Cleanup(func() { _ = c.Close() })
	return c, p
}

// Addr is the address of the front of NewProxy's target.
func (p *Proxy) Addr() string { return p.first.ln.Addr().String() }

// Cuts counts the client connections the proxy has cut (by CutNow,
// CutAfter or LoseReply); connections that closed on their own are not
// counted.
func (p *Proxy) Cuts() int64 { return p.cuts.Load() }

// Lost counts the replies lost by LoseReply.
func (p *Proxy) Lost() int64 { return p.lost.Load() }

// Stall holds all traffic, in both directions, until Resume.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// Resume releases a Stall.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// CutNow closes every open connection.
func (p *Proxy) CutNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, pr := range p.conns {
		p.cuts.Add(1) // counted before the client can see the cut
		_ = c.Close()
		_ = pr.server.Close()
		delete(p.conns, c)
	}
}

// LoseReply arms one reply loss: the next request whose bytes contain
// match (a script's SHA1, an ID among its arguments) reaches the server
// and runs there, and then its connection is cut before any byte of the
// reply reaches the client. go-redis sees a broken connection and, unless
// its MaxRetries is negative, sends the command again: a test of a write
// whose reply was lost and retried. Each call arms one loss; they are
// used in order.
func (p *Proxy) LoseReply(match string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose = append(p.lose, match)
}

// Pending returns the number of armed LoseReply matches not yet used.
func (p *Proxy) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lose)
}

// claimLoss reports whether chunk matches the first armed LoseReply, and
// disarms it if so.
func (p *Proxy) claimLoss(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lose) == 0 || !bytes.Contains(chunk, []byte(p.lose[0])) {
		return false
	}
	p.lose = p.lose[1:]
	return true
}

// cutSpent closes every connection once the CutAfter budget is spent and
// then lifts the limit, so later connections pass.
func (p *Proxy) cutSpent() {
	p.CutNow()
	p.budget.CompareAndSwap(0, -1)
}

// cut closes one pair, counting it.
func (p *Proxy) cut(pr *pair) {
	p.mu.Lock()
	_, open := p.conns[pr.client]
	delete(p.conns, pr.client)
	p.mu.Unlock()
	if open {
		p.cuts.Add(1) // counted before the client can see the cut
	}
	_ = pr.client.Close()
	_ = pr.server.Close()
}

// forget drops a connection pair that closed on its own.
func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// take reserves up to n bytes of the cut budget and reports how many may
// pass and whether the connection must be cut after them. The budget is
// shared by all connections, so the reservation is atomic.
func (p *Proxy) take(n int64) (int64, bool) {
	for {
		b := p.budget.Load()
		if b < 0 {
			return n, false
		}
		pass := min(n, b)
		if p.budget.CompareAndSwap(b, b-pass) {
			return pass, n > b
		}
	}
}

// CutAfter closes every open connection once n more bytes have gone from
// clients to the servers (the n-th byte is delivered, the next is not),
// counted over all connections together. A negative n cancels a pending cut.
func (p *Proxy) CutAfter(n int64) { p.budget.Store(n) }

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	fronts := p.fronts
	p.mu.Unlock()
	for _, f := range fronts {
		_ = f.ln.Close()
	}
	p.Resume()
	p.CutNow()
}

func (p *Proxy) accept(f *front) {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", f.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed { // accepted while the proxy was closing
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		pr := &pair{client: c, server: s}
		p.conns[c] = pr
		p.mu.Unlock()
		go p.pipe(pr, true)
		go p.pipe(pr, false)
	}
}

func (p *Proxy) wait() {
	p.mu.Lock()
	ch := p.stalled
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// pipe copies one direction of pr: client to server (upstream, which the
// byte budget counts and LoseReply watches) or back.
func (p *Proxy) pipe(pr *pair, upstream bool) {
	src, dst := pr.server, pr.client
	if upstream {
		src, dst = pr.client, pr.server
	}
	defer func() { p.forget(pr.client); _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			chunk := buf[:n]
			cut := false
			if upstream {
				var pass int64
				pass, cut = p.take(int64(n))
				chunk = chunk[:pass]
				if p.claimLoss(chunk) {
					// Armed before the request goes out, so the reply
					// cannot slip through first.
					pr.dropReply.Store(true)
				}
			} else if pr.dropReply.Load() {
				p.lost.Add(1) // counted before the client can see the loss
				p.cut(pr)
				return
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
			if cut {
				p.cutSpent()
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed connection: both ends close
		}
	}
}
