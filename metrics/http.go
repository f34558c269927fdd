package metrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Unmatched is the route of a request no route template matched (a 404
// from http.ServeMux), so that probing random paths adds no series.
const Unmatched = "(unmatched)"

// HTTP records the home-automation backend's request metrics (requests,
// accepted, errors, current and peak connections, speed, per endpoint)
// and the AI platform's api_requests_total and api_latency_ms for one
// recorder. Middleware uses
// it; call Start and Done yourself for other servers. Safe for concurrent
// use; no method touches the network.
type HTTP struct {
	rec      *Recorder
	total    atomic.Int64 // deltas since the last flush
	accepted atomic.Int64
	errs     atomic.Int64
	inflight atomic.Int64 // this instance's current connections
	peak     atomic.Int64 // highest inflight since the last flush
	perSec   perSecond
	reqs     *family // api_requests_total
	lat      *family // api_latency_ms

	mu        sync.RWMutex
	endpoints map[epKey]*endpoint
	over      atomic.Pointer[endpoint]
}

type epKey struct{ method, route string }

// endpoint is one "METHOD route" and its per-status series.
type endpoint struct {
	name     string // "METHOD route"
	method   string
	route    string
	requests atomic.Int64
	errors   atomic.Int64
	lat      *series
	mu       sync.Mutex
	statuses atomic.Pointer[[]statusSeries]
}

type statusSeries struct {
	code int
	s    *series
}

// Request is one finished request, as Done records it.
type Request struct {
	Method   string        // "GET"
	Route    string        // route template, "/api/forum/questions/{id}"; "" is Unmatched
	Status   int           // response status
	Duration time.Duration // time to serve it
	Start    time.Time     // when it started (for the per-second speed); zero means now - Duration
	// Local marks a request from localhost: requests:total leaves it out
	// (as the home-automation backend's does).
	Local bool
	// Refused marks a request the service turned away (rate limited,
	// shedding load): requests:accepted leaves it out.
	Refused bool
}

// HTTP returns the recorder's HTTP metrics, declaring api_requests_total
// and api_latency_ms on first use.
func (r *Recorder) HTTP() *HTTP {
	r.httpOnce.Do(func() {
		h := &HTTP{rec: r, endpoints: map[epKey]*endpoint{}}
		var err error
		if h.reqs, err = r.family(Definition{Name: "api_requests_total", Kind: KindCounter, Labels: []string{"endpoint", "method", "status"}}); err != nil {
			panic(err) // the definitions are constant and valid
		}
		if h.lat, err = r.family(Definition{Name: "api_latency_ms", Kind: KindHistogram, Labels: []string{"endpoint"}, Buckets: LatencyBuckets()}); err != nil {
			panic(err)
		}
		r.http.Store(h)
	})
	return r.http.Load()
}

// Start records a request that begins: one more current connection.
func (h *HTTP) Start() { storeMax(&h.peak, h.inflight.Add(1)) }

// Done records a request that Start began and that has finished.
func (h *HTTP) Done(q Request) {
	h.inflight.Add(-1)
	h.Record(q)
}

// Record counts a finished request without touching the current
// connections (for requests Start did not see).
func (h *HTTP) Record(q Request) {
	if !q.Local {
		h.total.Add(1)
	}
	if !q.Refused {
		h.accepted.Add(1)
	}
	start := q.Start
	if start.IsZero() {
		start = time.Now().Add(-q.Duration)
	}
	h.perSec.add(start.Unix())
	e := h.endpoint(q.Method, q.Route)
	e.requests.Add(1)
	if q.Status >= 400 {
		h.errs.Add(1)
		e.errors.Add(1)
	}
	e.status(h, q.Status).n.Add(1)
	observe(e.lat, h.lat.def.Buckets, float64(q.Duration)/float64(time.Millisecond))
}

func (h *HTTP) endpoint(method, route string) *endpoint {
	if route == "" {
		route = Unmatched
	}
	k := epKey{method, route}
	h.mu.RLock()
	e := h.endpoints[k]
	h.mu.RUnlock()
	if e != nil {
		return e
	}
	name := method + " " + route
	if len(method) > 32 || len(name) > maxLabelValue || !utf8.ValidString(name) || strings.ContainsAny(name, "|") {
		return h.overflow()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e = h.endpoints[k]; e != nil {
		return e
	}
	if len(h.endpoints) >= h.rec.opt.maxSeries {
		return h.overflow()
	}
	e = &endpoint{name: name, method: method, route: route, lat: h.lat.get([]string{route})}
	h.endpoints[k] = e
	return e
}

func (h *HTTP) overflow() *endpoint {
	h.reqs.dropped.Add(1)
	if e := h.over.Load(); e != nil {
		return e
	}
	h.over.CompareAndSwap(nil, &endpoint{name: Overflow, method: Overflow, route: Overflow, lat: h.lat.over()})
	return h.over.Load()
}

// status returns the api_requests_total series of the endpoint and code.
func (e *endpoint) status(h *HTTP, code int) *series {
	if l := e.statuses.Load(); l != nil {
		for _, x := range *l {
			if x.code == code {
				return x.s
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var cur []statusSeries
	if l := e.statuses.Load(); l != nil {
		cur = *l
		for _, x := range cur {
			if x.code == code {
				return x.s
			}
		}
	}
	var s *series
	if e.name == Overflow || len(cur) >= 64 {
		s = h.reqs.over()
	} else {
		s = h.reqs.get([]string{e.route, e.method, statusText(code)})
	}
	next := append(append(make([]statusSeries, 0, len(cur)+1), cur...), statusSeries{code, s})
	e.statuses.Store(&next)
	return s
}

func statusText(code int) string {
	if code < 100 || code > 999 {
		return "000"
	}
	return string([]byte{byte('0' + code/100), byte('0' + code/10%10), byte('0' + code%10)})
}

// perSecond counts requests per Unix second over the last 64 seconds.
type perSecond struct {
	mu     sync.Mutex
	secs   [64]atomic.Int64
	counts [64]atomic.Int64
}

func (p *perSecond) add(sec int64) {
	i := sec & 63
	if p.secs[i].Load() != sec {
		p.mu.Lock()
		if p.secs[i].Load() != sec {
			// The slot held a second 64 s old that no flush took (the
			// flusher was failing): its count only fed the speed.
			p.counts[i].Store(0)
			p.secs[i].Store(sec)
		}
		p.mu.Unlock()
	}
	p.counts[i].Add(1)
}

// drain returns and resets the counts, as (second, count) pairs.
func (p *perSecond) drain() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int64
	for i := range p.counts {
		if c := p.counts[i].Swap(0); c != 0 {
			out = append(out, p.secs[i].Load(), c)
		}
	}
	return out
}
