package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

// getLimits shows an API key's runtime config and what it has left.
func (p *platform) getLimits(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("key_id")
	c, err := p.perKey.Config(r.Context(), id)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	res, err := p.perKey.Peek(r.Context(), id)
	reply(w, http.StatusOK, map[string]any{"config": c, "limit": res.Limit, "remaining": res.Remaining}, err)
}

// setLimits replaces an API key's runtime config {"per_minute",
// "per_hour","per_day","burst"} (0 keeps the policy's value): the next
// request of the key is checked against it, on every instance.
func (p *platform) setLimits(w http.ResponseWriter, r *http.Request) {
	var c ratelimit.Config
	if err := decode(w, r, &c); err != nil {
		reply(w, 0, nil, err)
		return
	}
	id := r.PathValue("key_id")
	if err := p.perKey.SetConfig(r.Context(), id, c); err != nil {
		reply(w, 0, nil, err)
		return
	}
	p.auditEvent(r.Context(), "ratelimit.config", id, principalUser(r))
	reply(w, http.StatusOK, map[string]any{"key_id": id, "config": c}, nil)
}

// series is one metric series as the API shows it.
type series struct {
	Labels map[string]string `json:"labels,omitempty"`
	Value  int64             `json:"value"`
	Sum    float64           `json:"sum,omitempty"` // histograms
}

// showMetrics reads every instance's metrics (one pipeline on DB 7).
func (p *platform) showMetrics(w http.ResponseWriter, r *http.Request) {
	snap, err := p.reader.Read(r.Context())
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	out := map[string][]series{}
	for _, m := range snap.Metrics {
		list := []series{}
		for _, sv := range m.Series {
			s := series{Labels: map[string]string{}, Value: sv.Value}
			for i, l := range m.Labels {
				s.Labels[l] = sv.Labels[i]
			}
			if m.Kind == metrics.KindHistogram {
				s.Value, s.Sum = sv.Count, sv.Sum
			}
			list = append(list, s)
		}
		out[m.Name] = list
	}
	reply(w, http.StatusOK, out, nil)
}

// topics are the seed's seven channels, read as raw JSON payloads.
var topics = []pubsub.Topic[json.RawMessage]{
	pubsub.MustTopic[json.RawMessage]("files", "uploaded"),
	pubsub.MustTopic[json.RawMessage]("files", "processed"),
	pubsub.MustTopic[json.RawMessage]("ai", "response"),
	pubsub.MustTopic[json.RawMessage]("workflow", "started"),
	pubsub.MustTopic[json.RawMessage]("workflow", "completed"),
	pubsub.MustTopic[json.RawMessage]("system", "notification"),
	pubsub.MustTopic[json.RawMessage]("audit", "event"),
}

// events streams the seed's channels as server-sent events ("event:
// files:uploaded", data: the envelope) until the client goes away or the
// server shuts down. Pub/sub is at most once: a client re-reads what it
// shows after (re)connecting.
func (p *platform) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		reply(w, 0, nil, errStatus(http.StatusInternalServerError, "streaming unsupported"))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-p.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	evs, err := pubsub.Subscribe(ctx, p.bus, topics...)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprint(w, ": subscribed\n\n")
	fl.Flush()
	prefix := p.ns.Prefix + "pubsub:"
	for ev := range evs {
		if ev.Err != nil {
			p.log.Printf("events: %v", ev.Err)
			continue
		}
		b, _ := json.Marshal(map[string]any{"event": ev.Event, "timestamp": ev.Timestamp, "payload": ev.Payload, "source": ev.Source})
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", strings.TrimPrefix(ev.Channel, prefix), b)
		fl.Flush()
	}
}

// auditReport is the keyspace audit of every database, as the API shows it.
type auditReport struct {
	Namespace string    `json:"namespace"`
	DBs       []dbAudit `json:"databases"`
	Problems  []string  `json:"problems"`
}

type dbAudit struct {
	DB       int              `json:"db"`
	Scanned  int64            `json:"scanned"`
	Patterns map[string]int64 `json:"patterns"` // template -> keys
}

func (a auditReport) summary() string {
	var n int64
	for _, d := range a.DBs {
		n += d.Scanned
	}
	return fmt.Sprintf("%d databases, %d keys under %q, %d problems", len(a.DBs), n, a.Namespace, len(a.Problems))
}

// auditKeys scans every database of the layout (every master of a
// cluster) against the registry: keys without their TTL, of the wrong
// type, in another area's database, or matching no pattern.
func (p *platform) auditKeys(ctx context.Context) (auditReport, error) {
	opt := keys.AuditOptions{Namespace: p.ns}
	reg, err := keys.Compose(aimemory.Schema(), cache.Schema(), lock.Schema(), metrics.Schema(), pubsub.Schema(), queue.Schema(), ratelimit.Schema(), session.Schema())
	if err != nil {
		return auditReport{}, err
	}
	reps, err := reg.AuditLayout(ctx, p.dbs, opt)
	if err != nil {
		return auditReport{}, err
	}
	out := auditReport{Namespace: p.ns.Prefix, Problems: []string{}}
	for _, rep := range reps {
		sum := rep.Summary(p.ns)
		out.DBs = append(out.DBs, dbAudit{DB: rep.DB, Scanned: sum.Scanned, Patterns: sum.Patterns})
		for _, pr := range rep.Problems() {
			out.Problems = append(out.Problems, fmt.Sprintf("DB %d: %s", rep.DB, pr))
		}
	}
	sort.Slice(out.DBs, func(i, j int) bool { return out.DBs[i].DB < out.DBs[j].DB })
	return out, nil
}

func (p *platform) showAudit(w http.ResponseWriter, r *http.Request) {
	rep, err := p.auditKeys(r.Context())
	reply(w, http.StatusOK, rep, err)
}
