package metrics

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed read.lua
	readSrc string
	readOp  = pkg.Declare("read", readSrc, []*keys.Template{partsKey, totalsKey}, call.Uses(partsSrc))
)

// Reader reads the cluster-wide values of metrics: the HTTP request
// metrics (HTTPTotals) and the metrics it is given, all in one pipeline per Read. It
// is what a dashboard or the Prometheus collector (metrics/prom) uses; it
// writes nothing. Safe for concurrent use.
type Reader struct {
	rdb    redis.UniversalClient
	ns     keys.Namespace
	defs   []Definition
	shared bool // WithSharedKeys
	cap    int  // WithMaxSeries: endpoints shown WithSharedKeys
}

// NewReader returns a Reader of the metrics defs (typically a Recorder's
// Definitions, or CommonMetrics) under the namespace of WithNamespace,
// WithSharedKeys and WithMaxSeries (other options are ignored). It fails with ErrInvalid on a bad
// definition or client; it does not contact Redis.
func NewReader(rdb redis.UniversalClient, defs []Definition, opts ...Option) (*Reader, error) {
	const op = "new reader"
	o, err := newOptions(op, rdb, opts)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]Definition, 0, len(defs))
	for _, d := range defs {
		if err := d.check(op); err != nil {
			return nil, err
		}
		if seen[d.Name] {
			return nil, pkg.Invalidf(op, "metric %s given twice", d.Name)
		}
		seen[d.Name] = true
		out = append(out, d.clone())
	}
	return &Reader{rdb: rdb, ns: o.ns, defs: out, shared: o.shared, cap: o.maxSeries}, nil
}

// Definitions returns the metrics the Reader reads.
func (r *Reader) Definitions() []Definition {
	out := make([]Definition, len(r.defs))
	for i, d := range r.defs {
		out[i] = d.clone()
	}
	return out
}

// Snapshot is what one Read found.
type Snapshot struct {
	HTTP    HTTPTotals
	Metrics []MetricValues // in the order of the Reader's definitions
}

// HTTPTotals are the HTTP request metrics, in the home-automation
// backend's keys (docs/home-automation.md).
type HTTPTotals struct {
	Total          int64 // requests:total
	Accepted       int64 // requests:accepted
	Errors         int64 // errors:total
	Connections    int64 // live instances' current connections, summed now (WithSharedKeys: connections:http:current, every writer's)
	MaxConnections int64 // connections:http:max_since_startup
	Speed          int64 // requests:speed_per_second
	MaxSpeed       int64 // requests:max_speed_per_second
	Endpoints      []EndpointTotals
}

// EndpointTotals are one endpoint's request and error counters.
type EndpointTotals struct {
	Endpoint string // "METHOD route"
	Requests int64
	Errors   int64
}

// MetricValues are one metric's series.
type MetricValues struct {
	Definition
	Series []SeriesValues // sorted by label values
}

// SeriesValues is one series: Value for counters and gauges; Buckets
// (cumulative counts, one per bound then +Inf), Sum and Count for
// histograms.
type SeriesValues struct {
	Labels  []string
	Value   int64
	Buckets []int64
	Sum     float64
	Count   int64
}

// Read reads everything in one pipeline (one round trip per cluster
// master; a second one only right after a server lost its scripts). Data
// this package did not write is left out (a value stays 0, a metric has
// no series): the Snapshot holds the rest, with an error matching
// keys.ErrCorrupt naming each such key; any other error fails Read.
// WithSharedKeys, a SCAN of the keyspace (every master) comes first, to
// find the endpoint keys.
func (r *Reader) Read(ctx context.Context) (*Snapshot, error) {
	const op = "read"
	key := func(t *keys.Template, args ...string) string {
		k, err := t.Key(r.ns, args...)
		if err != nil {
			panic(err)
		}
		return k
	}
	comp := func(t *keys.Template, target string) string {
		return key(t, slotTag(keys.Slot(target)), target[len(r.ns.Prefix):])
	}
	pipe := r.rdb.Pipeline()
	type get struct {
		key string
		dst *int64
		cmd *redis.StringCmd
	}
	var snap Snapshot
	h := &snap.HTTP
	var shared []sharedEndpoint
	if r.shared {
		var err error
		if shared, err = r.scanEndpoints(ctx); err != nil {
			return nil, err
		}
	}
	gets := []get{{key: key(totalKey), dst: &h.Total}, {key: key(acceptedKey), dst: &h.Accepted},
		{key: key(errorsKey), dst: &h.Errors}, {key: key(connMaxKey), dst: &h.MaxConnections},
		{key: key(speedKey), dst: &h.Speed}, {key: key(maxSpeedKey), dst: &h.MaxSpeed}}
	if r.shared {
		gets = append(gets, get{key: key(connCurrentKey), dst: &h.Connections})
	}
	for i := range gets {
		gets[i].cmd = pipe.Get(ctx, gets[i].key)
	}
	for i := range shared {
		shared[i].cmd = pipe.Get(ctx, shared[i].key)
	}
	reqK, errK := key(endpointTotalsKey, endpointRequestsTotals), key(endpointTotalsKey, endpointErrorsTotals)
	var reqs, errs *redis.MapStringStringCmd
	if !r.shared {
		reqs, errs = pipe.HGetAll(ctx, reqK), pipe.HGetAll(ctx, errK)
	}
	var evals []*eval
	addEval := func(mode string, ks ...string) *eval {
		e := &eval{keys: ks, args: []any{mode}}
		e.cmd = readOp.Script().EvalSha(ctx, pipe, e.keys, e.args...)
		evals = append(evals, e)
		return e
	}
	var conns *eval
	if !r.shared {
		conns = addEval("sum", comp(partsKey, key(connCurrentKey)))
	}
	hashes := make([]*redis.MapStringStringCmd, len(r.defs))
	gauges := make([]*eval, len(r.defs))
	for i, d := range r.defs {
		if d.Kind == KindGauge {
			ks := []string{key(partsKey, slotTag(keys.Slot(key(gaugeKey, d.Name, "-"))), d.Name)}
			if d.Mode == Latest {
				ks = append(ks, key(totalsKey, d.Name))
			}
			gauges[i] = addEval(d.Mode.arg(), ks...)
			continue
		}
		hashes[i] = pipe.HGetAll(ctx, key(totalsKey, d.Name))
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	r.retryNoScript(ctx, evals)
	// leftOut keeps aside the error of a part whose data this package did
	// not write (the part is left out); any other error is returned.
	var corrupt []error
	leftOut := func(err error) error {
		if errors.Is(err, keys.ErrCorrupt) {
			corrupt = append(corrupt, err)
			return nil
		}
		return err
	}
	for _, g := range gets {
		v, err := g.cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if err := leftOut(pkg.Wrap(ctx, op, g.key, err)); err != nil {
				return nil, err
			}
			continue
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			corrupt = append(corrupt, pkg.Fail(op, g.key, nil, keys.Corrupt(g.key, fmt.Errorf("%.32q is not an integer", v))))
			continue
		}
		*g.dst = n
	}
	if r.shared {
		eps, err := r.sharedTotals(ctx, shared, &corrupt)
		if err != nil {
			return nil, err
		}
		h.Endpoints = eps
	}
	byEp := map[string]*EndpointTotals{}
	for _, x := range []struct {
		key   string
		cmd   *redis.MapStringStringCmd
		field func(*EndpointTotals) *int64
	}{{reqK, reqs, func(e *EndpointTotals) *int64 { return &e.Requests }}, {errK, errs, func(e *EndpointTotals) *int64 { return &e.Errors }}} {
		if x.cmd == nil {
			continue // WithSharedKeys: read from the keys above
		}
		m, err := x.cmd.Result()
		if err != nil {
			if err := leftOut(pkg.Wrap(ctx, op, x.key, err)); err != nil {
				return nil, err
			}
			continue
		}
		for ep, v := range m {
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				corrupt = append(corrupt, pkg.Fail(op, x.key, nil, keys.Corrupt(x.key, fmt.Errorf("field %.64q: %.32q is not an integer", ep, v))))
				continue
			}
			e := byEp[ep]
			if e == nil {
				e = &EndpointTotals{Endpoint: ep}
				byEp[ep] = e
			}
			*x.field(e) = n
		}
	}
	for _, e := range byEp {
		h.Endpoints = append(h.Endpoints, *e)
	}
	sort.Slice(h.Endpoints, func(i, j int) bool { return h.Endpoints[i].Endpoint < h.Endpoints[j].Endpoint })
	if conns != nil {
		cm, err := conns.values(ctx, op)
		if err := leftOut(err); err != nil {
			return nil, err
		}
		h.Connections = cm["-"]
	}
	for i, d := range r.defs {
		mv := MetricValues{Definition: d.clone()}
		var err error
		if d.Kind == KindGauge {
			err = gaugeValues(ctx, op, d, gauges[i], &mv)
		} else {
			err = hashValues(ctx, op, d, key(totalsKey, d.Name), hashes[i], &mv)
		}
		if err != nil {
			if err := leftOut(err); err != nil {
				return nil, err
			}
			mv.Series = nil // what was decoded before the fault is left out too
		}
		snap.Metrics = append(snap.Metrics, mv)
	}
	return &snap, errors.Join(corrupt...)
}

// eval is one read script call of the pipeline.
type eval struct {
	keys []string
	args []any
	cmd  *redis.Cmd
}

// retryNoScript sends again, with EVAL, the calls whose server did not
// hold the script (restarted, failed over).
func (r *Reader) retryNoScript(ctx context.Context, evals []*eval) {
	var again redis.Pipeliner
	for _, e := range evals {
		if redis.HasErrorPrefix(e.cmd.Err(), "NOSCRIPT") {
			if again == nil {
				again = r.rdb.Pipeline()
			}
			e.cmd = readOp.Script().Eval(ctx, again, e.keys, e.args...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
}

// values decodes a read script's reply: dimension -> value.
func (e *eval) values(ctx context.Context, op string) (map[string]int64, error) {
	k := e.keys[0]
	v, err := e.cmd.Result()
	if err != nil {
		return nil, pkg.Wrap(ctx, op, k, err)
	}
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return nil, pkg.Fail(op, k, nil, fmt.Errorf("%w: read reply %T", reply.ErrUnexpected, v))
	}
	if s, _ := a[0].(string); s == "corrupt" {
		why, _ := a[len(a)-1].(string)
		if i, _ := a[1].(int64); i >= 1 && int(i) <= len(e.keys) {
			k = e.keys[i-1]
		}
		return nil, pkg.Fail(op, k, nil, keys.Corrupt(k, errors.New(why)))
	}
	flat, err := reply.Strings(a[1])
	if err != nil || len(flat)%2 != 0 {
		return nil, pkg.Fail(op, k, nil, fmt.Errorf("%w: read reply payload", reply.ErrUnexpected))
	}
	out := make(map[string]int64, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		n, err := strconv.ParseInt(flat[i+1], 10, 64)
		if err != nil {
			return nil, pkg.Fail(op, k, nil, fmt.Errorf("%w: read reply value %q", reply.ErrUnexpected, flat[i+1]))
		}
		out[flat[i]] = n
	}
	return out, nil
}

func gaugeValues(ctx context.Context, op string, d Definition, e *eval, mv *MetricValues) error {
	m, err := e.values(ctx, op)
	if err != nil {
		return err
	}
	for dim, v := range m {
		labels, ok := SplitDimension(dim, len(d.Labels))
		if !ok {
			return pkg.Fail(op, e.keys[0], nil, keys.Corrupt(e.keys[0], fmt.Errorf("dimension %.64q does not fit labels %v", dim, d.Labels)))
		}
		mv.Series = append(mv.Series, SeriesValues{Labels: labels, Value: v})
	}
	sortSeries(mv.Series)
	return nil
}

func hashValues(ctx context.Context, op string, d Definition, k string, cmd *redis.MapStringStringCmd, mv *MetricValues) error {
	m, err := cmd.Result()
	if err != nil {
		return pkg.Wrap(ctx, op, k, err)
	}
	bad := func(field, why string) error {
		return pkg.Fail(op, k, nil, keys.Corrupt(k, fmt.Errorf("field %.64q: %s", field, why)))
	}
	if d.Kind == KindCounter {
		for dim, v := range m {
			labels, ok := SplitDimension(dim, len(d.Labels))
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				return bad(dim, "not a series of this counter")
			}
			mv.Series = append(mv.Series, SeriesValues{Labels: labels, Value: n})
		}
		sortSeries(mv.Series)
		return nil
	}
	names := d.bucketNames()
	byDim := map[string]*SeriesValues{}
	for field, v := range m {
		i := lastBar(field)
		if i < 0 {
			return bad(field, "no bucket")
		}
		dim, b := field[:i], field[i+1:]
		s := byDim[dim]
		if s == nil {
			labels, ok := SplitDimension(dim, len(d.Labels))
			if !ok {
				return bad(field, "not a series of this histogram")
			}
			s = &SeriesValues{Labels: labels, Buckets: make([]int64, len(names))}
			byDim[dim] = s
		}
		if b == "sum" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return bad(field, "sum is not a number")
			}
			s.Sum = f
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return bad(field, "count is not a non-negative integer")
		}
		if b == "count" {
			s.Count = n
			continue
		}
		j := indexOf(names, b)
		if j < 0 {
			return bad(field, "unknown bucket")
		}
		s.Buckets[j] = n
	}
	for _, s := range byDim {
		for j := 1; j < len(s.Buckets); j++ {
			s.Buckets[j] += s.Buckets[j-1] // cumulative, as Prometheus has them
		}
		mv.Series = append(mv.Series, *s)
	}
	sortSeries(mv.Series)
	return nil
}

func lastBar(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '|' {
			return i
		}
	}
	return -1
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func sortSeries(s []SeriesValues) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i].Labels, s[j].Labels
		for k := range min(len(a), len(b)) {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	})
}
