package metrics

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redschema/redschema/keys"
)

// family is one declared metric and its series in this recorder.
type family struct {
	def     Definition
	rec     *Recorder
	buckets []string // histogram: key segments of the buckets, "+Inf" last

	series   sync.Map // dimension -> *series
	mu       sync.Mutex
	n        atomic.Int64 // series held, overflow excluded
	overflow atomic.Pointer[series]
	dropped  atomic.Int64 // values recorded in the overflow series
}

// series is one label-value combination: the deltas since the last flush
// (counters, histograms) or the instance's contribution (gauges).
type series struct {
	dim    string
	n      atomic.Int64   // counter delta; gauge contribution
	peak   atomic.Int64   // gauge: highest contribution since the last flush
	set    atomic.Bool    // gauge: written at least once
	counts []atomic.Int64 // histogram: per-bucket deltas, non-cumulative
	// A Latest gauge's value and the server time of its Set (Unix ms,
	// increasing per series) change together under mu.
	mu    sync.Mutex
	stamp int64
	sum   atomic.Uint64 // histogram: float64 bits of the sum delta
	keys  []string      // the series' keys, built by the first flush (flusher only)
}

func (f *family) newSeries(dim string) *series {
	s := &series{dim: dim}
	if f.def.Kind == KindHistogram {
		s.counts = make([]atomic.Int64, len(f.buckets))
	}
	return s
}

// get returns the series of label values vals, or the overflow series
// when vals cannot be one or the cap is reached.
func (f *family) get(vals []string) *series {
	var dim string
	switch {
	case len(vals) != len(f.def.Labels):
		return f.over()
	case len(vals) == 0:
		dim = "-"
	case len(vals) == 1 && plainValue(vals[0]):
		dim = vals[0]
	default:
		var ok bool
		if dim, ok = joinValues(vals); !ok {
			return f.over()
		}
	}
	return f.lookup(dim)
}

// lookup returns the series of dimension dim, making it if the cap allows.
func (f *family) lookup(dim string) *series {
	if s, ok := f.series.Load(dim); ok {
		return s.(*series)
	}
	if _, err := counterKey.Key(keys.Namespace{}, "n", dim); err != nil { // not a key segment
		return f.over()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.series.Load(dim); ok {
		return s.(*series)
	}
	if f.n.Load() >= int64(f.rec.opt.maxSeries) {
		return f.over()
	}
	s := f.newSeries(dim)
	f.series.Store(dim, s)
	f.n.Add(1)
	return s
}

func (f *family) over() *series {
	f.dropped.Add(1)
	if s := f.overflow.Load(); s != nil {
		return s
	}
	vals := make([]string, max(1, len(f.def.Labels)))
	for i := range vals {
		vals[i] = Overflow
	}
	dim, _ := joinValues(vals)
	f.overflow.CompareAndSwap(nil, f.newSeries(dim))
	return f.overflow.Load()
}

// each calls fn for every series, the overflow series last.
func (f *family) each(fn func(*series)) {
	f.series.Range(func(_, v any) bool { fn(v.(*series)); return true })
	if s := f.overflow.Load(); s != nil {
		fn(s)
	}
}

// plainValue reports whether v is its own dimension: not empty, no '|'
// or '%', not too long.
func plainValue(v string) bool {
	return v != "" && v != "-" && len(v) <= maxLabelValue && !strings.ContainsAny(v, "|%")
}

// joinValues joins label values into a dimension with '|': inside a value
// '%' is written %25 and '|' %7C, an empty value is %00, and the one value
// "-" of a one-label metric is %2D (a dimensionless metric's dimension is
// "-"), so that SplitDimension gives the values back.
func joinValues(vals []string) (string, bool) {
	var b strings.Builder
	for i, v := range vals {
		if len(v) > maxLabelValue {
			return "", false
		}
		if i > 0 {
			b.WriteByte('|')
		}
		if v == "" {
			b.WriteString("%00")
			continue
		}
		if v == "-" && len(vals) == 1 {
			b.WriteString("%2D")
			continue
		}
		for j := 0; j < len(v); j++ {
			switch v[j] {
			case '%':
				b.WriteString("%25")
			case '|':
				b.WriteString("%7C")
			default:
				b.WriteByte(v[j])
			}
		}
	}
	return b.String(), true
}

// SplitDimension returns the label values of a dimension as the recorder
// wrote it (n labels): the inverse of how the recorder joins label values
// (with '|'; inside a value '%' is written %25 and '|' %7C, an empty value
// %00, and the lone value "-" of a one-label metric %2D). A dimensionless
// metric's "-" gives no values.
func SplitDimension(dim string, n int) ([]string, bool) {
	if n == 0 {
		return nil, dim == "-"
	}
	parts := strings.Split(dim, "|")
	if len(parts) != n {
		return nil, false
	}
	for i, p := range parts {
		switch {
		case p == "%00":
			parts[i] = ""
		case p == "%2D":
			parts[i] = "-"
		case strings.Contains(p, "%"):
			p = strings.ReplaceAll(p, "%7C", "|")
			parts[i] = strings.ReplaceAll(p, "%25", "%")
		}
	}
	return parts, true
}

// addFloat adds v to the float64 whose bits are in u.
func addFloat(u *atomic.Uint64, v float64) {
	for {
		old := u.Load()
		if u.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// storeMax raises a to v if v is greater.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}
