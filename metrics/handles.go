package metrics

import "math"

// Counter is a declared counter metric. Its methods are safe for
// concurrent use and never block or touch the network: they add to
// in-memory atomics that the recorder flushes.
type Counter struct{ f *family }

// CounterSeries is one series of a Counter, resolved once: its methods are
// one atomic add.
type CounterSeries struct{ s *series }

// With returns the series of the label values (one per label, in the
// declared order). Values beyond the cardinality cap, too long, or of the
// wrong number go to the overflow series.
func (c *Counter) With(values ...string) *CounterSeries { return &CounterSeries{c.f.get(values)} }

// Add adds n (ignored unless > 0) to the series of the label values.
func (c *Counter) Add(n int64, values ...string) {
	if n > 0 {
		c.f.get(values).n.Add(n)
	}
}

// Inc adds one to the series of the label values.
func (c *Counter) Inc(values ...string) { c.f.get(values).n.Add(1) }

// Inc adds one.
func (s *CounterSeries) Inc() { s.s.n.Add(1) }

// Add adds n (ignored unless > 0).
func (s *CounterSeries) Add(n int64) {
	if n > 0 {
		s.s.n.Add(n)
	}
}

// Gauge is a declared gauge. Each instance holds its own contribution to
// each series; the cluster value combines the live instances'
// contributions as the gauge's mode says.
type Gauge struct{ f *family }

// GaugeSeries is one series of a Gauge, resolved once.
type GaugeSeries struct {
	s *series
	f *family
}

// With returns the series of the label values (see Counter.With).
func (g *Gauge) With(values ...string) *GaugeSeries { return &GaugeSeries{g.f.get(values), g.f} }

// Add adds n (which may be negative) to this instance's contribution (see
// GaugeSeries.Add).
func (g *Gauge) Add(n int64, values ...string) { g.With(values...).Add(n) }

// Set sets this instance's contribution (ignored beyond ±(2^53 - 1)); for
// a Latest gauge, the value stamped with the server time of the call (see
// Latest).
func (g *Gauge) Set(v int64, values ...string) { g.With(values...).Set(v) }

// Add adds n (which may be negative) to this instance's contribution,
// ignored if the result is beyond ±(2^53 - 1); for a Latest gauge, it sets
// this instance's last value plus n (ignored likewise).
func (s *GaugeSeries) Add(n int64) {
	if s.f.def.Mode == Latest {
		s.f.rec.setLatest(s.s, n, true)
		return
	}
	addSum(s.s, n)
}

// Set sets this instance's contribution (ignored beyond ±(2^53 - 1)); for
// a Latest gauge, the value stamped with the server time of the call (see
// Latest).
func (s *GaugeSeries) Set(v int64) {
	if s.f.def.Mode == Latest {
		s.f.rec.setLatest(s.s, v, false)
		return
	}
	setSum(s.s, v)
}

// Value returns this instance's contribution.
func (s *GaugeSeries) Value() int64 { return s.s.n.Load() }

// Histogram is a declared histogram: observations counted in buckets by
// upper bound, with their sum and count.
type Histogram struct{ f *family }

// HistogramSeries is one series of a Histogram, resolved once.
type HistogramSeries struct {
	s *series
	b []float64
}

// With returns the series of the label values (see Counter.With).
func (h *Histogram) With(values ...string) *HistogramSeries {
	return &HistogramSeries{h.f.get(values), h.f.def.Buckets}
}

// Observe records v in the series of the label values. NaN and ±Inf
// are ignored: Redis cannot add them to the series' sum.
func (h *Histogram) Observe(v float64, values ...string) {
	observe(h.f.get(values), h.f.def.Buckets, v)
}

// Observe records v (NaN and ±Inf are ignored, as by Histogram.Observe).
func (s *HistogramSeries) Observe(v float64) { observe(s.s, s.b, v) }

func observe(s *series, bounds []float64, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	s.counts[i].Add(1)
	addFloat(&s.sum, v)
}
