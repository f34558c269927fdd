package metrics

import (
	"math"
	"slices"
	"strconv"
)

// Kind is a metric type.
type Kind uint8

// The metric kinds.
const (
	KindCounter Kind = iota + 1
	KindGauge
	KindHistogram
)

// String returns "counter", "gauge" or "histogram".
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return "kind(?)"
}

// GaugeMode says how the contributions of several instances to a gauge
// make its value.
type GaugeMode uint8

// The gauge modes.
const (
	// Sum adds the contributions of the live instances: each instance
	// holds its own part (its sessions, its connections), and a dead
	// instance's part stops counting after the heartbeat TTL. A
	// contribution beyond ±(2^53 - 1) (a Set, or an Add's result) is
	// ignored when recorded; a sum beyond it is held at the bound.
	Sum GaugeMode = iota
	// Latest takes the latest Set by server time, whatever the order in
	// which instances flush: for a value that several instances observe
	// (a queue's depth), where summing would count it once per instance.
	// A Set is stamped in memory with the server clock the recorder
	// learned at its last flush; the value outlives the instance that set
	// it, until 60s (the gauge keys' TTL) after the last flush of an instance holding it.
	// A value beyond ±(2^53 - 1) is ignored when recorded.
	Latest
)

func (m GaugeMode) arg() string {
	if m == Latest {
		return "last"
	}
	return "sum"
}

// Definition describes a metric: what a Recorder declares and what a
// Reader (or the Prometheus collector) reads.
type Definition struct {
	Name    string    // [a-zA-Z_][a-zA-Z0-9_]*, at most 128 bytes
	Kind    Kind      // counter, gauge or histogram
	Labels  []string  // label names, in the order values are given; at most 8
	Buckets []float64 // histogram: increasing finite upper bounds, at most 64 (+Inf is implicit)
	Mode    GaugeMode // gauge: how instances' contributions combine
}

// Limits of a Definition.
const (
	maxLabels  = 8
	maxBuckets = 64
)

// Overflow is the label value of a metric's overflow series: values
// beyond the cardinality cap (WithMaxSeries), label values longer than
// 256 bytes, and calls with the wrong number of label values are
// recorded there.
const Overflow = "(overflow)"

// maxLabelValue bounds one label value, in bytes.
const maxLabelValue = 256

// LatencyBuckets returns the default bounds of a latency histogram in
// milliseconds: Prometheus's default buckets (5ms to 10s) in ms.
func LatencyBuckets() []float64 {
	return []float64{5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}
}

// CommonMetrics returns the common metrics of the AI platform
// (docs/ai-platform.md): api_requests_total (endpoint, method, status),
// api_latency_ms (histogram by endpoint), ai_tokens_used (model, type),
// active_sessions (gauge), queue_depth (gauge by queue_name, latest
// observation wins) and file_uploads_bytes.
func CommonMetrics() []Definition {
	return []Definition{
		{Name: "api_requests_total", Kind: KindCounter, Labels: []string{"endpoint", "method", "status"}},
		{Name: "api_latency_ms", Kind: KindHistogram, Labels: []string{"endpoint"}, Buckets: LatencyBuckets()},
		{Name: "ai_tokens_used", Kind: KindCounter, Labels: []string{"model", "type"}},
		{Name: "active_sessions", Kind: KindGauge},
		{Name: "queue_depth", Kind: KindGauge, Labels: []string{"queue_name"}, Mode: Latest},
		{Name: "file_uploads_bytes", Kind: KindCounter},
	}
}

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// check validates d for op.
func (d Definition) check(op string) error {
	if !validName(d.Name) {
		return pkg.Invalidf(op, "metric name %q is not [a-zA-Z_][a-zA-Z0-9_]* of at most 128 bytes", d.Name)
	}
	if len(d.Labels) > maxLabels {
		return pkg.Invalidf(op, "metric %s: %d labels, at most %d", d.Name, len(d.Labels), maxLabels)
	}
	for i, l := range d.Labels {
		if !validName(l) || slices.Contains(d.Labels[:i], l) {
			return pkg.Invalidf(op, "metric %s: label name %q invalid or repeated", d.Name, l)
		}
	}
	switch d.Kind {
	case KindCounter:
	case KindGauge:
		if d.Mode != Sum && d.Mode != Latest {
			return pkg.Invalidf(op, "metric %s: unknown gauge mode %d", d.Name, d.Mode)
		}
	case KindHistogram:
		if len(d.Buckets) == 0 || len(d.Buckets) > maxBuckets {
			return pkg.Invalidf(op, "metric %s: %d buckets, want 1 to %d", d.Name, len(d.Buckets), maxBuckets)
		}
		for i, b := range d.Buckets {
			if math.IsNaN(b) || math.IsInf(b, 0) || i > 0 && b <= d.Buckets[i-1] {
				return pkg.Invalidf(op, "metric %s: bucket bounds must be finite and increasing", d.Name)
			}
		}
	default:
		return pkg.Invalidf(op, "metric %s: unknown kind %d", d.Name, d.Kind)
	}
	return nil
}

func (d Definition) same(o Definition) bool {
	return d.Name == o.Name && d.Kind == o.Kind && slices.Equal(d.Labels, o.Labels) &&
		slices.Equal(d.Buckets, o.Buckets) && d.Mode == o.Mode
}

func (d Definition) clone() Definition {
	d.Labels = slices.Clone(d.Labels)
	d.Buckets = slices.Clone(d.Buckets)
	return d
}

// bucketNames returns the key segments of the buckets: each bound as the
// shortest decimal, and "+Inf".
func (d Definition) bucketNames() []string {
	out := make([]string, 0, len(d.Buckets)+1)
	for _, b := range d.Buckets {
		out = append(out, strconv.FormatFloat(b, 'g', -1, 64))
	}
	return append(out, "+Inf")
}
