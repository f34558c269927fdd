package harness

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Proxy is a TCP proxy between a client and one Redis server that a test can
// break on purpose: stall traffic, cut every connection now, or cut after a
// number of bytes have gone from client to server. It closes with the test.
type Proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]net.Conn // client side -> server side, while open
	closed  bool
	stalled chan struct{} // non-nil and open while stalled
	budget  atomic.Int64  // bytes left before a cut; < 0 means no limit
	cuts    atomic.Int64
}

// NewProxy listens on a loopback port and forwards to target.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: proxy listen: %v", err)
	}
	p := &Proxy{t: t, ln: ln, target: target, conns: map[net.Conn]net.Conn{}}
	p.budget.Store(-1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// ProxyClient returns a standalone client that reaches the test's server
// through a new Proxy, with ContextTimeoutEnabled set so that context
// deadlines bound calls on a stalled connection. On a cluster (whose redirects bypass any proxy) it
// skips the test.
func (e *Env) ProxyClient(opt *redis.Options) (*redis.Client, *Proxy) {
	e.T.Helper()
	if e.Addr == "" {
		e.T.Skip("harness: the fault proxy needs a single server; covered on miniredis and the standalone server")
	}
	p := NewProxy(e.T, e.Addr)
	o := redis.Options{}
	if opt != nil {
		o = *opt
	}
	o.Addr = p.Addr()
	// Without this go-redis ignores context deadlines on network I/O, and a
	// stalled connection holds a call for the full read timeout.
	o.ContextTimeoutEnabled = true
	c := redis.NewClient(&o)
	e.T.Cleanup(func() { _ = c.Close() })
	return c, p
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cuts counts the client connections the proxy has cut (by CutNow or
// CutAfter); connections that closed on their own are not counted.
func (p *Proxy) Cuts() int64 { return p.cuts.Load() }

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
	for c, s := range p.conns {
		_ = c.Close()
		_ = s.Close()
		delete(p.conns, c)
		p.cuts.Add(1)
	}
}

// cutSpent closes every connection once the CutAfter budget is spent and
// then lifts the limit, so later connections pass.
func (p *Proxy) cutSpent() {
	p.CutNow()
	p.budget.CompareAndSwap(0, -1)
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
// clients to the server (the n-th byte is delivered, the next is not),
// counted over all connections together. A negative n cancels a pending cut.
func (p *Proxy) CutAfter(n int64) { p.budget.Store(n) }

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Resume()
	p.CutNow()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
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
		p.conns[c] = s
		p.mu.Unlock()
		go p.pipe(s, c, c, true)
		go p.pipe(c, s, c, false)
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

// pipe copies src to dst; client is the pair's client side, and upstream
// marks the client-to-server direction, which the byte budget counts.
func (p *Proxy) pipe(dst, src, client net.Conn, upstream bool) {
	defer func() { p.forget(client); _ = dst.Close(); _ = src.Close() }()
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
