package metrics

import (
	"math"
	"strconv"

	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// collect takes every delta recorded since the last collect (resetting
// the atomics) and this instance's gauge contributions into a new batch.
// leaving withdraws the contributions instead (Close).
func (r *Recorder) collect(leaving bool) *batch {
	b := &builder{r: r, groups: map[int]*group{}}
	r.mu.Lock()
	fams := append([]*family(nil), r.order...)
	r.mu.Unlock()
	for _, f := range fams {
		switch f.def.Kind {
		case KindCounter:
			r.collectCounter(b, f)
		case KindGauge:
			r.collectGauge(b, f, leaving)
		case KindHistogram:
			r.collectHistogram(b, f)
		}
	}
	if h := r.http.Load(); h != nil {
		r.collectHTTP(b, h, leaving)
	}
	return &batch{groups: b.order, leaving: leaving}
}

// The retention TTLs as script arguments: whole milliseconds, truncated.
var (
	counterPX = strconv.FormatInt(unit.MsFloor(counterTTL), 10)
	gaugePX   = strconv.FormatInt(unit.MsFloor(gaugeTTL), 10)
	pendingPX = strconv.FormatInt(unit.MsFloor(pendingTTL), 10)
	ledgerPX  = strconv.FormatInt(unit.MsFloor(ledgerTTL), 10)
)

// metricKey builds a key of t; the segments were checked when the series
// was made, so an error is a bug.
func (r *Recorder) metricKey(t *keys.Template, args ...string) string {
	k, err := t.Key(r.opt.ns, args...)
	if err != nil {
		panic(err)
	}
	return k
}

func (r *Recorder) collectCounter(b *builder, f *family) {
	totals := r.metricKey(totalsKey, f.def.Name)
	pending := r.metricKey(pendingKey, f.def.Name)
	f.each(func(s *series) {
		d := s.n.Swap(0)
		if d == 0 {
			return
		}
		if s.keys == nil {
			s.keys = []string{r.metricKey(counterKey, f.def.Name, s.dim)}
		}
		b.incr(s.keys[0], d, counterPX)
		b.hincr(totals, s.dim, d, counterPX)
		if r.opt.rollup {
			b.hincr(pending, s.dim, d, pendingPX)
		}
	})
}

func (r *Recorder) collectGauge(b *builder, f *family, leaving bool) {
	var parts, totals string
	f.each(func(s *series) {
		if !s.set.Load() {
			return
		}
		target := r.metricKey(gaugeKey, f.def.Name, s.dim)
		if f.def.Mode == Latest {
			// Not a contribution: the value stays when this instance
			// leaves, until a later Set replaces it or gaugeTTL ends.
			if totals == "" {
				totals = r.metricKey(totalsKey, f.def.Name)
			}
			v, st := s.latest()
			b.latest(target, totals, s.dim, v, st, gaugePX)
			return
		}
		if parts == "" {
			parts = r.metricKey(partsKey, slotTag(keys.Slot(target)), f.def.Name)
		}
		v := s.n.Load()
		s.peak.Store(v)
		b.gauge(target, parts, s.dim, v, leaving, f.def.Mode.arg(), 0, gaugePX)
	})
}

func (r *Recorder) collectHistogram(b *builder, f *family) {
	totals := r.metricKey(totalsKey, f.def.Name)
	pending := r.metricKey(pendingKey, f.def.Name)
	f.each(func(s *series) {
		if s.keys == nil {
			for _, b := range append(f.buckets, "count", "sum") {
				s.keys = append(s.keys, r.metricKey(histogramKey, f.def.Name, s.dim, b))
			}
		}
		var count int64
		for i := range s.counts {
			d := s.counts[i].Swap(0)
			if d == 0 {
				continue
			}
			count += d
			field := s.dim + "|" + f.buckets[i]
			b.incr(s.keys[i], d, counterPX)
			b.hincr(totals, field, d, counterPX)
			if r.opt.rollup {
				b.hincr(pending, field, d, pendingPX)
			}
		}
		sum := math.Float64frombits(s.sum.Swap(0))
		if count == 0 && sum == 0 {
			return
		}
		n := len(f.buckets)
		b.incr(s.keys[n], count, counterPX)
		b.incrFloat(s.keys[n+1], sum, counterPX)
		b.hincr(totals, s.dim+"|count", count, counterPX)
		b.hincrFloat(totals, s.dim+"|sum", sum, counterPX)
		if r.opt.rollup {
			b.hincr(pending, s.dim+"|count", count, pendingPX)
			b.hincrFloat(pending, s.dim+"|sum", sum, pendingPX)
		}
	})
}

// The totals hashes of the per-endpoint request and error counters, read by one
// HGETALL each per scrape.
const (
	endpointRequestsTotals = "http_endpoint_requests"
	endpointErrorsTotals   = "http_endpoint_errors"
)

func (r *Recorder) collectHTTP(b *builder, h *HTTP, leaving bool) {
	k := r.metricKey
	if d := h.total.Swap(0); d != 0 {
		b.incr(k(totalKey), d, noTTL)
	}
	if d := h.accepted.Swap(0); d != 0 {
		b.incr(k(acceptedKey), d, noTTL)
	}
	if d := h.errs.Swap(0); d != 0 {
		b.incr(k(errorsKey), d, noTTL)
	}
	reqTotals := k(endpointTotalsKey, endpointRequestsTotals)
	errTotals := k(endpointTotalsKey, endpointErrorsTotals)
	each := func(e *endpoint) {
		if d := e.requests.Swap(0); d != 0 {
			b.incr(k(endpointKey, e.name), d, noTTL)
			b.hincr(reqTotals, e.name, d, noTTL)
		}
		if d := e.errors.Swap(0); d != 0 {
			b.incr(k(endpointErrorsKey, e.name), d, noTTL)
			b.hincr(errTotals, e.name, d, noTTL)
		}
	}
	h.mu.RLock()
	eps := make([]*endpoint, 0, len(h.endpoints))
	for _, e := range h.endpoints {
		eps = append(eps, e)
	}
	h.mu.RUnlock()
	for _, e := range eps {
		each(e)
	}
	if e := h.over.Load(); e != nil {
		each(e)
	}
	// Current connections: this instance's part, summed over the live
	// instances into connections:http:current, and the peak since the
	// last flush over the others' parts into max_since_startup.
	cur := h.inflight.Load()
	peak := h.peak.Swap(cur)
	cur0 := k(connCurrentKey)
	max0 := k(connMaxKey)
	if r.opt.shared {
		// Shared with another writer: move the key by this instance's
		// change, and raise the maximum to the other writers' part of
		// the count (as this script leaves it, or on a cluster, where
		// the maximum is in another slot, as the last flush left it)
		// plus this instance's peak since the last flush.
		b.sharedCount(cur0, r.companion(partsKey, cur0), cur, leaving, ledgerPX)
		others := ""
		if r.sharedOK.Load() {
			others = strconv.FormatInt(r.shared.Load(), 10)
		}
		g := b.group(max0)
		g.args = append(g.args, "m", g.key(max0), max(peak, cur), others)
	} else {
		b.gauge(cur0, r.companion(partsKey, cur0), "-", cur, leaving, "sum", 0, noTTL)
		b.gauge(max0, r.companion(partsKey, max0), "-", cur, leaving, "max", max(0, peak-cur), noTTL)
	}
	// Speed: per-second counts into the companions of both speed keys.
	pairs := h.perSec.drain()
	lag := int64(math.Ceil(r.opt.interval.Seconds())) + 1
	for _, target := range []string{k(speedKey), k(maxSpeedKey)} {
		ps := r.companion(perSecondKey, target)
		g := b.group(target)
		pi := g.key(ps)
		if len(pairs) > 0 {
			g.args = append(g.args, "c", pi, len(pairs)/2)
			for _, x := range pairs {
				g.args = append(g.args, strconv.FormatInt(x, 10))
			}
		}
		mode := "speed"
		if target != k(speedKey) {
			mode = "max"
		}
		g.args = append(g.args, "v", g.key(target), pi, lag, mode)
	}
}
