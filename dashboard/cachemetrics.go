package dashboard

import (
	"errors"
	"net/http"
	"time"

	"github.com/redschema/redschema/cache"
)

type endpointRow struct {
	Endpoint string  `json:"endpoint"`
	Method   string  `json:"method"`
	Entries  int64   `json:"entries"`
	Hits     int64   `json:"hits"`
	HitRate  float64 `json:"hit_rate"`
	Bytes    int64   `json:"bytes"`
}

type tagRow struct {
	Tag     string `json:"tag"`
	Members int64  `json:"members"`
}

type cacheReply struct {
	Endpoints []endpointRow `json:"endpoints"`
	Tags      []tagRow      `json:"tags"`
	Corrupt   []string      `json:"corrupt,omitempty"` // keys of another type, left out (see leftOut)
}

// historyLen is how many samples the cache and metrics pages' in-memory
// series keep.
const historyLen = 120

// cacheStats answers the cache page: the API cache's live entries, hits
// and hit rate per endpoint and its invalidation tags, from
// cache.Inspector.Overview (one SCAN pipeline and one read pipeline
// per node). A key of another type is left out, and listed in corrupt.
func (h *Handler) cacheStats(r *http.Request) (any, error) {
	ov, err := h.cacheInsp.Overview(r.Context())
	out := cacheReply{Endpoints: []endpointRow{}, Tags: []tagRow{}}
	if out.Corrupt, err = leftOut(err); err != nil {
		return nil, err
	}
	for _, e := range ov.Endpoints {
		out.Endpoints = append(out.Endpoints, endpointRow{Endpoint: e.Endpoint, Method: e.Method, Entries: e.Entries,
			Hits: e.Hits, HitRate: e.HitRate(), Bytes: e.Bytes})
	}
	for _, t := range ov.Tags {
		out.Tags = append(out.Tags, tagRow{Tag: t.Tag, Members: t.Members})
	}
	return out, nil
}

// invalidateTag invalidates every entry of a tag (cache.Store.
// InvalidateTag on the API layout).
func (h *Handler) invalidateTag(r *http.Request) (any, error) {
	tag := r.PostFormValue("tag")
	if tag == "" {
		return nil, badRequest("tag is required")
	}
	n, err := h.cache.InvalidateTag(r.Context(), tag)
	if errors.Is(err, cache.ErrInvalid) {
		return nil, badRequest("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"tag": tag, "invalidated": n}, nil
}

type seriesRow struct {
	Labels  []string `json:"labels"`
	Value   int64    `json:"value"`
	Buckets []int64  `json:"buckets,omitempty"` // cumulative, one per bound then +Inf
	Sum     float64  `json:"sum,omitempty"`
	Count   int64    `json:"count,omitempty"`
}

type metricRow struct {
	Name   string      `json:"name"`
	Kind   string      `json:"kind"`
	Labels []string    `json:"labels"`
	Bounds []float64   `json:"bounds,omitempty"`
	Series []seriesRow `json:"series"`
}

// httpTotals is metrics.HTTPTotals as the page reads it.
type httpTotals struct {
	Total          int64         `json:"total"`
	Accepted       int64         `json:"accepted"`
	Errors         int64         `json:"errors"`
	Connections    int64         `json:"connections"`
	MaxConnections int64         `json:"max_connections"`
	Speed          int64         `json:"speed"`
	MaxSpeed       int64         `json:"max_speed"`
	Endpoints      []endpointHit `json:"endpoints"`
}

type endpointHit struct {
	Endpoint string `json:"endpoint"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
}

type metricsReply struct {
	HTTP    httpTotals  `json:"http"`
	Metrics []metricRow `json:"metrics"`
	History httpHistory `json:"history"`
	Corrupt []string    `json:"corrupt,omitempty"` // keys holding data the metrics package did not write, left out (see leftOut)
}

// httpHistory is the request total sampled at each refresh.
type httpHistory struct {
	At     []int64 `json:"at"`
	Total  []int64 `json:"total"`
	Errors []int64 `json:"errors"`
}

// metricsSnapshot answers the metrics page: the HTTP request totals and
// every series of the metrics defined (metrics.CommonMetrics and those of
// WithMetrics), read with metrics.Reader.Read in one pipeline, plus the
// request totals sampled at each refresh for the throughput chart. Data
// the metrics package did not write is left out, and listed in corrupt.
func (h *Handler) metricsSnapshot(r *http.Request) (any, error) {
	snap, rerr := h.metrics.Read(r.Context())
	corrupt, err := leftOut(rerr)
	if err != nil {
		return nil, err
	}
	if snap == nil {
		return nil, rerr // nothing read: never the case for metrics.Reader, whose Snapshot holds the rest
	}
	t := snap.HTTP
	out := metricsReply{HTTP: httpTotals{Total: t.Total, Accepted: t.Accepted, Errors: t.Errors, Connections: t.Connections,
		MaxConnections: t.MaxConnections, Speed: t.Speed, MaxSpeed: t.MaxSpeed, Endpoints: []endpointHit{}}, Metrics: []metricRow{},
		Corrupt: corrupt}
	for _, e := range t.Endpoints {
		out.HTTP.Endpoints = append(out.HTTP.Endpoints, endpointHit{Endpoint: e.Endpoint, Requests: e.Requests, Errors: e.Errors})
	}
	for _, m := range snap.Metrics {
		row := metricRow{Name: m.Name, Kind: m.Kind.String(), Labels: append([]string{}, m.Labels...), Bounds: m.Buckets, Series: []seriesRow{}}
		for _, s := range m.Series {
			row.Series = append(row.Series, seriesRow{Labels: append([]string{}, s.Labels...), Value: s.Value, Buckets: s.Buckets, Sum: s.Sum, Count: s.Count})
		}
		out.Metrics = append(out.Metrics, row)
	}
	h.mu.Lock()
	hh := &h.httpHist
	ms := time.Now().UnixMilli()
	if len(corrupt) > 0 {
		// a total left out reads 0: no sample, so the chart does not
		// drop to 0 and jump back
	} else if n := len(hh.At); n > 0 && ms-hh.At[n-1] < (h.opt.refresh/2).Milliseconds() {
		hh.Total[n-1], hh.Errors[n-1] = snap.HTTP.Total, snap.HTTP.Errors
	} else {
		hh.At, hh.Total, hh.Errors = append(hh.At, ms), append(hh.Total, snap.HTTP.Total), append(hh.Errors, snap.HTTP.Errors)
		if len(hh.At) > historyLen {
			hh.At, hh.Total, hh.Errors = hh.At[1:], hh.Total[1:], hh.Errors[1:]
		}
	}
	out.History = httpHistory{At: append([]int64(nil), hh.At...), Total: append([]int64(nil), hh.Total...), Errors: append([]int64(nil), hh.Errors...)}
	h.mu.Unlock()
	return out, nil
}
