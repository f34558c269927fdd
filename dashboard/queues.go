package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// historyLen is how many samples of a queue's totals the dashboard keeps
// for the processed/failed chart.
const historyLen = 120

// queueView is one queue opened for reading and admin.
type queueView struct {
	q *queue.Queue[json.RawMessage]
}

// series is a queue's totals sampled at each refresh, oldest first.
type series struct {
	At        []int64 `json:"at"` // Unix ms
	Processed []int64 `json:"processed"`
	Failed    []int64 `json:"failed"`
}

func (s *series) add(at time.Time, st queue.Stats, minGap time.Duration) {
	ms := at.UnixMilli()
	if n := len(s.At); n > 0 && ms-s.At[n-1] < minGap.Milliseconds() {
		s.Processed[n-1], s.Failed[n-1] = st.TotalProcessed, st.TotalFailed
		return
	}
	s.At = append(s.At, ms)
	s.Processed = append(s.Processed, st.TotalProcessed)
	s.Failed = append(s.Failed, st.TotalFailed)
	if len(s.At) > historyLen {
		s.At, s.Processed, s.Failed = s.At[1:], s.Processed[1:], s.Failed[1:]
	}
}

func (h *Handler) queue(name string) (*queue.Queue[json.RawMessage], error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.queues[name]; ok {
		return v.q, nil
	}
	q, err := queue.New[json.RawMessage](h.cs.For(keys.Queues), name, queue.WithNamespace(h.opt.ns))
	if err != nil {
		if errors.Is(err, queue.ErrInvalid) {
			return nil, badRequest("%v", err)
		}
		return nil, err
	}
	h.queues[name] = &queueView{q: q}
	return q, nil
}

// queueStats is one queue's depth and totals.
type queueStats struct {
	Name           string           `json:"name"`
	Ready          map[string]int64 `json:"ready"`
	Scheduled      map[string]int64 `json:"scheduled"`
	InFlight       int64            `json:"in_flight"`
	Dead           int64            `json:"dead"`
	TotalEnqueued  int64            `json:"total_enqueued"`
	TotalProcessed int64            `json:"total_processed"`
	TotalFailed    int64            `json:"total_failed"`
	TotalDead      int64            `json:"total_dead"`
	AvgProcessMs   float64          `json:"avg_process_ms"`
	LastProcessed  *time.Time       `json:"last_processed_at,omitempty"`
	History        series           `json:"history"`
}

func byLevel(m map[queue.Priority]int64) map[string]int64 {
	out := map[string]int64{}
	for _, p := range []queue.Priority{queue.High, queue.Normal, queue.Low} {
		out[p.String()] = m[p]
	}
	return out
}

// record turns one queue's Stats into the page's row and records the
// sample in its history.
func (h *Handler) record(name string, st queue.Stats) queueStats {
	out := queueStats{Name: name, Ready: byLevel(st.Ready), Scheduled: byLevel(st.Delayed), InFlight: st.InFlight,
		Dead: st.Dead, TotalEnqueued: st.TotalEnqueued, TotalProcessed: st.TotalProcessed, TotalFailed: st.TotalFailed,
		TotalDead: st.TotalDead, AvgProcessMs: float64(st.AvgProcessTime) / float64(time.Millisecond)}
	if !st.LastProcessedAt.IsZero() {
		t := st.LastProcessedAt.UTC()
		out.LastProcessed = &t
	}
	h.mu.Lock()
	s := h.history[name]
	if s == nil {
		s = &series{}
		h.history[name] = s
	}
	s.add(time.Now(), st, h.opt.refresh/2)
	out.History = series{At: append([]int64(nil), s.At...), Processed: append([]int64(nil), s.Processed...),
		Failed: append([]int64(nil), s.Failed...)}
	h.mu.Unlock()
	return out
}

// queueList lists every queue (queue.Inspector.Names, a SCAN) with its
// stats, read in one pipeline for all queues (queue.Inspector.Views): two
// round trips per node.
func (h *Handler) queueList(r *http.Request) (any, error) {
	ctx := r.Context()
	names, err := h.queueInspector().Names(ctx)
	if err != nil {
		return nil, err
	}
	out := []queueStats{}
	vs, err := h.queueInspector().Views(ctx, names, 0)
	if err != nil {
		return nil, queueReadErr(err)
	}
	for i, n := range names {
		out = append(out, h.record(n, vs[i].Stats))
	}
	return map[string]any{"queues": out}, nil
}

// queueInspector returns the queue.Inspector of the page's reads.
func (h *Handler) queueInspector() *queue.Inspector { return h.queueInsp }

// queueReadErr turns a bad queue name into a bad request, as opening the
// queue does (Handler.queue).
func queueReadErr(err error) error {
	if errors.Is(err, queue.ErrInvalid) {
		return badRequest("%v", err)
	}
	return err
}

// jobRow is one job as the page shows it.
type jobRow struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Priority   string    `json:"priority"`
	CreatedAt  time.Time `json:"created_at"`
	At         time.Time `json:"at"` // ready (pending, scheduled), lease deadline (active), failed (dead)
	RetryCount int       `json:"retry_count"`
	MaxRetries int       `json:"max_retries"`
	LastError  string    `json:"last_error,omitempty"`
	Payload    string    `json:"payload"`
}

// maxPayloadShown is how much of a payload the page gets.
const maxPayloadShown = 300

// queueJobs answers ?name= (and ?limit=, default 25): the queue's stats
// and its jobs in each state (pending, scheduled, active with lease
// deadlines, dead with their last error), in one pipeline
// (queue.Inspector.Views).
func (h *Handler) queueJobs(r *http.Request) (any, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return nil, badRequest("name is required")
	}
	limit := 25
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			return nil, badRequest("limit must be 1..10000")
		}
		limit = n
	}
	states := []queue.State{queue.Pending, queue.Scheduled, queue.Active, queue.Dead}
	vs, err := h.queueInspector().Views(r.Context(), []string{name}, limit, states...)
	if err != nil {
		return nil, queueReadErr(err)
	}
	v := vs[0]
	st := h.record(name, v.Stats)
	jobs := map[string][]jobRow{}
	for _, state := range states {
		rows := []jobRow{}
		for _, in := range v.Jobs[state] {
			p := string(in.Payload)
			if in.Raw != "" {
				p = in.Raw
			}
			if len(p) > maxPayloadShown {
				p = p[:maxPayloadShown] + "…"
			}
			rows = append(rows, jobRow{ID: in.ID, State: string(in.State), Priority: in.Priority.String(),
				CreatedAt: in.CreatedAt.UTC(), At: in.At.UTC(), RetryCount: in.RetryCount, MaxRetries: in.MaxRetries,
				LastError: in.LastError, Payload: p})
		}
		jobs[string(state)] = rows
	}
	return map[string]any{"stats": st, "jobs": jobs}, nil
}

// jobAction reads the queue and id form fields.
func (h *Handler) jobAction(r *http.Request) (*queue.Queue[json.RawMessage], string, error) {
	name, id := r.PostFormValue("queue"), r.PostFormValue("id")
	if name == "" || id == "" {
		return nil, "", badRequest("queue and id are required")
	}
	q, err := h.queue(name)
	return q, id, err
}

func queueErr(err error) error {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, queue.ErrDuplicate):
		return &httpError{http.StatusConflict, err.Error()}
	case errors.Is(err, queue.ErrInvalid):
		return badRequest("%v", err)
	}
	return err
}

// requeue moves a dead letter back to ready (queue.Queue.Requeue).
func (h *Handler) requeue(r *http.Request) (any, error) {
	q, id, err := h.jobAction(r)
	if err != nil {
		return nil, err
	}
	if err := q.Requeue(r.Context(), id); err != nil {
		return nil, queueErr(err)
	}
	return map[string]any{"requeued": id}, nil
}

// deleteJob deletes a job in any state (queue.Queue.Delete).
func (h *Handler) deleteJob(r *http.Request) (any, error) {
	q, id, err := h.jobAction(r)
	if err != nil {
		return nil, err
	}
	if err := q.Delete(r.Context(), id); err != nil {
		return nil, queueErr(err)
	}
	return map[string]any{"deleted": id}, nil
}
