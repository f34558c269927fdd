// Package prom exposes redschema metrics to Prometheus: a Collector that
// reads the cluster-wide values from Redis (metrics.Reader: one pipeline
// per scrape) and names them by Prometheus conventions. It is its own
// module so that the metrics package never imports Prometheus.
//
//	rd, _ := metrics.NewReader(rdb, rec.Definitions(), metrics.WithNamespace(ns))
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(prom.NewCollector(rd))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Names: counters end in _total; a name ending in _ms (or _us) is exposed
// in seconds (api_latency_ms becomes api_latency_seconds, its bounds and
// sum divided by 1000); the HTTP request metrics are http_requests_total,
// http_requests_accepted_total, http_errors_total,
// http_endpoint_requests_total{endpoint}, http_endpoint_errors_total{endpoint},
// http_connections, http_connections_max, http_requests_per_second and
// http_requests_per_second_max. Every instance's scrape shows the same
// cluster-wide values, so scrape one instance (or sum nothing): unlike
// per-process client_golang counters, they survive restarts and an idle
// series leaves when its Redis TTL ends.
package prom

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redschema/redschema/metrics"
)

// Collector is a prometheus.Collector over a metrics.Reader.
type Collector struct {
	r       *metrics.Reader
	timeout time.Duration
	prefix  string
	http    httpDescs
	descs   []metricDesc
}

type httpDescs struct {
	total, accepted, errs, epReqs, epErrs, conns, connsMax, speed, speedMax *prometheus.Desc
}

type metricDesc struct {
	def   metrics.Definition
	desc  *prometheus.Desc
	scale float64 // histogram: bound and sum multiplier to base units
}

// Option configures a Collector.
type Option func(*Collector)

// WithTimeout bounds each scrape's read.
//
// Default: 5s.
func WithTimeout(d time.Duration) Option { return func(c *Collector) { c.timeout = d } }

// WithPrefix puts prefix and an underscore before every metric name.
//
// Default: none.
func WithPrefix(prefix string) Option { return func(c *Collector) { c.prefix = prefix } }

// NewCollector returns a Collector of everything r reads.
func NewCollector(r *metrics.Reader, opts ...Option) *Collector {
	c := &Collector{r: r, timeout: 5 * time.Second}
	for _, f := range opts {
		f(c)
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(c.name(name), help, labels, nil)
	}
	c.http = httpDescs{
		total:    d("http_requests_total", "Non-localhost HTTP requests across all instances (requests:total)."),
		accepted: d("http_requests_accepted_total", "HTTP requests not refused (requests:accepted)."),
		errs:     d("http_errors_total", "HTTP responses with status >= 400 (errors:total)."),
		epReqs:   d("http_endpoint_requests_total", "HTTP requests per endpoint \"METHOD route\".", "endpoint"),
		epErrs:   d("http_endpoint_errors_total", "HTTP responses with status >= 400 per endpoint.", "endpoint"),
		conns:    d("http_connections", "In-flight HTTP requests of the live instances."),
		connsMax: d("http_connections_max", "Highest http_connections since the deployment started."),
		speed:    d("http_requests_per_second", "HTTP requests in the last complete second."),
		speedMax: d("http_requests_per_second_max", "Highest http_requests_per_second seen."),
	}
	for _, def := range r.Definitions() {
		name, scale := def.Name, 1.0
		switch def.Kind {
		case metrics.KindCounter:
			if !strings.HasSuffix(name, "_total") {
				name += "_total"
			}
		case metrics.KindHistogram:
			name, scale = baseUnit(name)
		}
		c.descs = append(c.descs, metricDesc{def: def, scale: scale,
			desc: d(name, def.Kind.String()+" "+def.Name+" from redschema metrics", def.Labels...)})
	}
	return c
}

func (c *Collector) name(n string) string {
	if c.prefix == "" {
		return n
	}
	return c.prefix + "_" + n
}

// baseUnit renames a name in milli- or microseconds to seconds.
func baseUnit(name string) (string, float64) {
	switch {
	case strings.HasSuffix(name, "_ms"):
		return strings.TrimSuffix(name, "_ms") + "_seconds", 1e-3
	case strings.HasSuffix(name, "_us"):
		return strings.TrimSuffix(name, "_us") + "_seconds", 1e-6
	}
	return name, 1
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	h := c.http
	for _, d := range []*prometheus.Desc{h.total, h.accepted, h.errs, h.epReqs, h.epErrs, h.conns, h.connsMax, h.speed, h.speedMax} {
		ch <- d
	}
	for _, m := range c.descs {
		ch <- m.desc
	}
}

// Collect reads everything in one pipeline and sends it. A failed read is
// reported as an invalid metric, which fails the scrape visibly.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	snap, err := c.r.Read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.http.total, err)
		return
	}
	h, s := c.http, snap.HTTP
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter(h.total, s.Total)
	counter(h.accepted, s.Accepted)
	counter(h.errs, s.Errors)
	for _, ep := range s.Endpoints {
		counter(h.epReqs, ep.Requests, ep.Endpoint)
		counter(h.epErrs, ep.Errors, ep.Endpoint)
	}
	gauge(h.conns, s.Connections)
	gauge(h.connsMax, s.MaxConnections)
	gauge(h.speed, s.Speed)
	gauge(h.speedMax, s.MaxSpeed)
	for i, m := range snap.Metrics {
		md := c.descs[i]
		for _, sv := range m.Series {
			labels := sv.Labels
			if len(labels) != len(m.Labels) {
				continue
			}
			switch m.Kind {
			case metrics.KindCounter:
				counter(md.desc, sv.Value, labels...)
			case metrics.KindGauge:
				gauge(md.desc, sv.Value, labels...)
			case metrics.KindHistogram:
				buckets := make(map[float64]uint64, len(m.Buckets))
				for j, b := range m.Buckets {
					buckets[b*md.scale] = uint64(sv.Buckets[j])
				}
				ch <- prometheus.MustNewConstHistogram(md.desc, uint64(sv.Count), sv.Sum*md.scale, buckets, labels...)
			}
		}
	}
}

var _ prometheus.Collector = (*Collector)(nil)
