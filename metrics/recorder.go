package metrics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
)

// Recorder records metrics in memory and flushes them to Redis: every
// recording is an atomic add in this process, and a background flusher
// sends every delta in one pipeline per interval (and on Close). Create
// one per process and namespace; it is safe for concurrent use.
type Recorder struct {
	run      *call.Runner
	opt      options
	instance string
	cluster  bool

	mu       sync.Mutex
	families map[string]*family
	order    []*family
	httpOnce sync.Once
	http     atomic.Pointer[HTTP]

	flushMu sync.Mutex // one flush at a time; guards the fields below
	seq     int64
	pending *batch
	left    bool // a batch withdrawing the gauge contributions went through
	closed  bool

	stop chan struct{}
	done chan struct{}

	flushes, failures, corrupt atomic.Int64

	// offset is the server clock minus the local clock, in ms, learned
	// from the TIME the last flush's script read: it stamps the Sets of
	// Latest gauges with server time without a round trip.
	offset atomic.Int64
	// shared is the other writers' part of connections:http:current as
	// the last flush left it (WithSharedKeys), once sharedOK: on a
	// cluster the maximum, in another slot, is raised from it.
	shared   atomic.Int64
	sharedOK atomic.Bool
}

// New returns a Recorder over rdb and starts its flusher (unless
// WithoutFlusher). It fails with ErrInvalid on a bad option, a nil client,
// a client without ContextTimeoutEnabled, or a Ring client; it does not
// contact Redis.
func New(rdb redis.UniversalClient, opts ...Option) (*Recorder, error) {
	o, err := newOptions("new", rdb, opts)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if o.instance != "" {
		id = o.instance + "." + id
	}
	_, cluster := rdb.(*redis.ClusterClient)
	r := &Recorder{
		run: call.NewRunner(rdb, 0), opt: o, instance: id, cluster: cluster,
		families: map[string]*family{}, stop: make(chan struct{}), done: make(chan struct{}),
	}
	if o.manual {
		close(r.done)
	} else {
		go r.loop()
	}
	return r, nil
}

// Instance returns the recorder's instance ID: the WithInstance label, a
// dot and 16 random hex digits.
func (r *Recorder) Instance() string { return r.instance }

// family declares d, or returns the family already declared with the same
// shape.
func (r *Recorder) family(d Definition) (*family, error) {
	const op = "declare"
	if err := d.check(op); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.families[d.Name]; ok {
		if !f.def.same(d) {
			return nil, pkg.Invalidf(op, "metric %s declared again with another kind, labels, buckets or mode", d.Name)
		}
		return f, nil
	}
	f := &family{def: d.clone(), rec: r}
	if d.Kind == KindHistogram {
		f.buckets = d.bucketNames()
	}
	r.families[d.Name] = f
	r.order = append(r.order, f)
	return f, nil
}

// Counter declares (or returns) the counter name with label names labels.
// Declaring a name again with other labels or another kind fails with
// ErrInvalid.
func (r *Recorder) Counter(name string, labels ...string) (*Counter, error) {
	f, err := r.family(Definition{Name: name, Kind: KindCounter, Labels: labels})
	if err != nil {
		return nil, err
	}
	return &Counter{f}, nil
}

// Gauge declares (or returns) the gauge name; mode says how the instances'
// contributions combine.
func (r *Recorder) Gauge(name string, mode GaugeMode, labels ...string) (*Gauge, error) {
	f, err := r.family(Definition{Name: name, Kind: KindGauge, Labels: labels, Mode: mode})
	if err != nil {
		return nil, err
	}
	return &Gauge{f}, nil
}

// Histogram declares (or returns) the histogram name with increasing
// bucket upper bounds (+Inf is implicit; at most 64).
func (r *Recorder) Histogram(name string, buckets []float64, labels ...string) (*Histogram, error) {
	f, err := r.family(Definition{Name: name, Kind: KindHistogram, Labels: labels, Buckets: buckets})
	if err != nil {
		return nil, err
	}
	return &Histogram{f}, nil
}

// Declare declares each definition (see CommonMetrics).
func (r *Recorder) Declare(defs ...Definition) error {
	for _, d := range defs {
		if _, err := r.family(d); err != nil {
			return err
		}
	}
	return nil
}

// Definitions returns the metrics declared so far, in declaration order.
func (r *Recorder) Definitions() []Definition {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Definition, len(r.order))
	for i, f := range r.order {
		out[i] = f.def.clone()
	}
	return out
}

// Stats counts what the recorder did.
type Stats struct {
	Flushes  int64 // flushes that delivered a batch
	Failures int64 // flush attempts that failed (their deltas were kept and resent)
	Corrupt  int64 // keys, or fields of its hashes, found holding data this package did not write (their deltas dropped)
	Overflow int64 // values recorded in overflow series (cardinality cap)
	Series   int64 // series held in memory, overflow series excluded
	Pending  bool  // a batch is waiting to be resent
}

// Stats returns the recorder's counts.
func (r *Recorder) Stats() Stats {
	s := Stats{Flushes: r.flushes.Load(), Failures: r.failures.Load(), Corrupt: r.corrupt.Load()}
	r.mu.Lock()
	for _, f := range r.order {
		s.Overflow += f.dropped.Load()
		s.Series += f.n.Load()
	}
	r.mu.Unlock()
	if h := r.http.Load(); h != nil {
		h.mu.RLock()
		s.Series += int64(len(h.endpoints))
		h.mu.RUnlock()
	}
	r.flushMu.Lock()
	s.Pending = r.pending != nil
	r.flushMu.Unlock()
	return s
}

func (r *Recorder) report(err error) {
	if err != nil && r.opt.onError != nil {
		r.opt.onError(err)
	}
}

func (r *Recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.opt.interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(5*time.Second, 2*r.opt.interval))
			r.report(r.flush(ctx, false))
			cancel()
		}
	}
}

// Flush sends what was recorded since the last flush, now, in one
// pipeline (one round trip per cluster master). A batch that failed
// before is resent first, unchanged (same sequence number, so the slots
// that applied it do not count it again); new deltas wait in memory until
// it is through. On error the deltas are kept for the next flush; nothing
// is lost or counted twice. After Close it returns ErrClosed.
func (r *Recorder) Flush(ctx context.Context) error { return r.flush(ctx, false) }

// Close stops the flusher, withdraws this instance's gauge contributions
// and flushes what is left, retrying until everything is through or ctx
// ends (then the error says what was not delivered). Recording after Close
// is harmless but never flushed.
func (r *Recorder) Close(ctx context.Context) error {
	r.flushMu.Lock()
	if r.closed {
		r.flushMu.Unlock()
		return pkg.Fail("close", "", ErrClosed, nil)
	}
	r.flushMu.Unlock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	backoff := 10 * time.Millisecond
	for {
		err := r.flush(ctx, true)
		if err == nil {
			r.flushMu.Lock()
			finished := r.pending == nil && r.left
			if finished {
				r.closed = true
			}
			r.flushMu.Unlock()
			if finished {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff):
			backoff = min(2*backoff, time.Second)
		}
	}
}

// serverMs returns the server clock now, as this recorder knows it: the
// local clock corrected by the offset the last flush learned.
func (r *Recorder) serverMs() int64 { return r.opt.clock().UnixMilli() + r.offset.Load() }

// learnOffset records the server clock srv (Unix ms) that a script read
// between the local instants t0 and t1: the offset is measured from their
// midpoint, so it is off by at most half the round trip.
func (r *Recorder) learnOffset(srv int64, t0, t1 time.Time) {
	mid := t0.UnixMilli() + (t1.UnixMilli()-t0.UnixMilli())/2
	r.offset.Store(srv - mid)
}

// maxGauge bounds a gauge's value (a Latest gauge's Set, a Sum gauge's
// contribution) in magnitude: 2^53 - 1, the largest integer the flush
// script (Lua's doubles) holds exactly.
const maxGauge = 1<<53 - 1

// addSum adds n to a Sum gauge's contribution, unless the result would be
// beyond ±maxGauge: then the Add is ignored, as setLatest ignores one, so
// that the flush never writes a contribution the script cannot parse (it
// would drop it as a dead part, and the value would be lost). A compare
// and swap instead of one atomic add: as cheap uncontended, retried when
// another goroutine changed the value in between.
func addSum(s *series, n int64) {
	for {
		// |old| <= maxGauge (every write is bounded), so the bounds
		// below do not overflow
		old := s.n.Load()
		if n > maxGauge-old || n < -maxGauge-old {
			return
		}
		s.set.Store(true)
		if s.n.CompareAndSwap(old, old+n) {
			storeMax(&s.peak, old+n)
			return
		}
	}
}

// setSum sets a Sum gauge's contribution, ignored beyond ±maxGauge (see
// addSum).
func setSum(s *series, v int64) {
	if v > maxGauge || v < -maxGauge {
		return
	}
	s.set.Store(true)
	s.n.Store(v)
	storeMax(&s.peak, v)
}

// setLatest sets (or, with add, adds to) the value of a Latest gauge's
// series and stamps it with the server time, later than the series'
// previous stamp so that this instance's own Sets keep their order. A
// value (or sum) beyond ±maxGauge is ignored, as Counter.Add ignores
// n <= 0: the handles return no error, and the flush script would refuse
// the batch carrying it.
func (r *Recorder) setLatest(s *series, v int64, add bool) {
	if !add && (v > maxGauge || v < -maxGauge) {
		return
	}
	st := r.serverMs()
	s.mu.Lock()
	if add {
		// |old| <= maxGauge, so the bounds below do not overflow
		old := s.n.Load()
		if v > maxGauge-old || v < -maxGauge-old {
			s.mu.Unlock()
			return
		}
		v += old
	}
	s.stamp = max(st, s.stamp+1)
	s.n.Store(v)
	s.set.Store(true)
	s.mu.Unlock()
	storeMax(&s.peak, v)
}

// latest returns a Latest gauge series' value and stamp.
func (s *series) latest() (int64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n.Load(), s.stamp
}

// abandon stops the flusher without flushing: what a killed process does
// (tests).
func (r *Recorder) abandon() {
	close(r.stop)
	<-r.done
	r.flushMu.Lock()
	r.closed = true
	r.flushMu.Unlock()
}
