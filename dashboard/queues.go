package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// maxOpenQueues bounds the queues the dashboard keeps open for its
// actions (an LRU): a request naming any queue, existing or not, never
// grows the process beyond it.
const maxOpenQueues = 64

// queueView is one queue opened for the dashboard's actions.
type queueView struct {
	q    *rawQueue
	used time.Time // when it was last used (the LRU's order)
}

// queue returns the queue name opened for an action, from a bounded LRU
// of maxOpenQueues.
func (h *Handler) queue(name string) (*rawQueue, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if v, ok := h.queues[name]; ok {
		v.used = now
		return v.q, nil
	}
	opts := append([]queue.Option{queue.WithNamespace(h.opt.ns), queue.WithPipelining(0)}, h.opt.queueOpts...)
	q, err := queue.New[json.RawMessage](h.cs.For(keys.Queues), name, opts...)
	if err != nil {
		if errors.Is(err, queue.ErrInvalid) {
			return nil, badRequest("%v", err)
		}
		return nil, err
	}
	if len(h.queues) >= maxOpenQueues {
		var oldest string
		var at time.Time
		for n, v := range h.queues {
			if oldest == "" || v.used.Before(at) {
				oldest, at = n, v.used
			}
		}
		delete(h.queues, oldest)
	}
	h.queues[name] = &queueView{q: q, used: now}
	return q, nil
}

// daily is a queue's processed and failed counts per UTC day, oldest
// first, as three parallel arrays for the chart.
type daily struct {
	Days      []string `json:"days"`
	Processed []int64  `json:"processed"`
	Failed    []int64  `json:"failed"`
}

// queueStats is one queue's depth, totals and daily counts.
type queueStats struct {
	Name           string           `json:"name"`
	Paused         bool             `json:"paused"`
	Ready          map[string]int64 `json:"ready"`
	Scheduled      map[string]int64 `json:"scheduled"`
	InFlight       int64            `json:"in_flight"`
	Dead           int64            `json:"dead"`
	TotalEnqueued  int64            `json:"total_enqueued"`
	TotalProcessed int64            `json:"total_processed"`
	TotalFailed    int64            `json:"total_failed"`
	TotalDead      int64            `json:"total_dead"`
	AvgProcessMs   float64          `json:"avg_process_ms"`
	OldestReadyMs  int64            `json:"oldest_ready_ms"`
	LastProcessed  *time.Time       `json:"last_processed_at,omitempty"`
	Daily          daily            `json:"daily"`
	Error          string           `json:"error,omitempty"` // why the queue's stats or daily counts did not read (the rest of the row is what did)
}

func byLevel(m map[queue.Priority]int64) map[string]int64 {
	out := map[string]int64{}
	for _, p := range []queue.Priority{queue.High, queue.Normal, queue.Low} {
		out[p.String()] = m[p]
	}
	return out
}

// row turns one queue's Stats and daily counts into the page's row.
func row(name string, st queue.Stats, days []queue.DayStats) queueStats {
	out := queueStats{Name: name, Paused: st.Paused, Ready: byLevel(st.Ready), Scheduled: byLevel(st.Delayed), InFlight: st.InFlight,
		Dead: st.Dead, TotalEnqueued: st.TotalEnqueued, TotalProcessed: st.TotalProcessed, TotalFailed: st.TotalFailed,
		TotalDead: st.TotalDead, AvgProcessMs: float64(st.AvgProcessTime) / float64(time.Millisecond),
		OldestReadyMs: st.OldestReady.Milliseconds(),
		Daily:         daily{Days: []string{}, Processed: []int64{}, Failed: []int64{}}}
	if !st.LastProcessedAt.IsZero() {
		t := st.LastProcessedAt.UTC()
		out.LastProcessed = &t
	}
	for _, d := range days {
		out.Daily.Days = append(out.Daily.Days, d.Day)
		out.Daily.Processed = append(out.Daily.Processed, d.Processed)
		out.Daily.Failed = append(out.Daily.Failed, d.Failed)
	}
	return out
}

// queueList lists every queue (queue.Inspector.Names, a SCAN) with its
// stats and daily counts, read in one pipeline for all queues
// (queue.Inspector.Summaries): two round trips per node. When a queue's
// data does not parse (keys.ErrCorrupt), each queue is read again alone,
// one round trip each, so that the others still show and the bad one's
// row says why.
func (h *Handler) queueList(r *http.Request) (any, error) {
	ctx := r.Context()
	names, err := h.queueInspector().Names(ctx)
	if err != nil {
		return nil, err
	}
	out := []queueStats{}
	ss, err := h.queueInspector().Summaries(ctx, names)
	if errors.Is(err, keys.ErrCorrupt) {
		for _, n := range names {
			one, err := h.queueInspector().Summaries(ctx, []string{n})
			if err != nil && !errors.Is(err, keys.ErrCorrupt) {
				return nil, queueReadErr(err)
			}
			q := row(n, one[0].Stats, one[0].Daily)
			if err != nil {
				q.Error = err.Error()
			}
			out = append(out, q)
		}
		return map[string]any{"queues": out}, nil
	}
	if err != nil {
		return nil, queueReadErr(err)
	}
	for i, s := range ss {
		out = append(out, row(names[i], s.Stats, s.Daily))
	}
	return map[string]any{"queues": out}, nil
}

// queueInspector returns the queue.Inspector of the page's reads.
func (h *Handler) queueInspector() *queue.Inspector { return h.queueInsp }

// queueReadErr turns a bad queue name or argument into a bad request.
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
	At         time.Time `json:"at"` // ready (pending, scheduled), lease deadline (active), failed (dead), finished (done)
	RetryCount int       `json:"retry_count"`
	MaxRetries int       `json:"max_retries"`
	LastError  string    `json:"last_error,omitempty"`
	Payload    string    `json:"payload"`
	Corrupt    string    `json:"corrupt,omitempty"` // why the stored entry did not parse; Payload holds its text
}

// scheduleRow is one periodic job as the page shows it.
type scheduleRow struct {
	Name     string     `json:"name"`
	Spec     string     `json:"spec"`
	NextRun  *time.Time `json:"next_run,omitempty"`
	Location string     `json:"location"`
	Corrupt  string     `json:"corrupt,omitempty"`
}

// maxPayloadShown is how much of a payload a list row gets.
const maxPayloadShown = 300

// maxPageLimit caps ?limit= of the queue page.
const maxPageLimit = 200

// pageStates maps the page's state names to the queue's.
var pageStates = map[string]queue.State{"pending": queue.Pending, "scheduled": queue.Scheduled,
	"active": queue.Active, "dead": queue.Dead, "done": queue.Completed}

// queueJobs answers ?name=&state=&offset=&limit=&q=: the queue's stats,
// one page of one state (limit 1..200, default 25) and its periodic
// jobs, in one pipeline (queue.Inspector.Page). A stored entry that does
// not parse is a row with corrupt set.
func (h *Handler) queueJobs(r *http.Request) (any, error) {
	qs := r.URL.Query()
	name := qs.Get("name")
	if name == "" {
		return nil, badRequest("name is required")
	}
	stateName := qs.Get("state")
	if stateName == "" {
		stateName = "pending"
	}
	state, ok := pageStates[stateName]
	if !ok {
		return nil, badRequest("state must be pending, scheduled, active, dead or done")
	}
	num := func(k string, def, lo, hi int) (int, error) {
		s := qs.Get(k)
		if s == "" {
			return def, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return 0, badRequest("%s must be %d..%d", k, lo, hi)
		}
		return n, nil
	}
	limit, err := num("limit", 25, 1, maxPageLimit)
	if err != nil {
		return nil, err
	}
	offset, err := num("offset", 0, 0, 1<<30)
	if err != nil {
		return nil, err
	}
	p, err := h.queueInspector().Page(r.Context(), name, state, offset, limit, qs.Get("q"))
	if err != nil {
		return nil, queueReadErr(err)
	}
	jobs := make([]jobRow, 0, len(p.Rows))
	for _, in := range p.Rows {
		pl := string(in.Payload)
		if in.Raw != "" {
			pl = in.Raw
		}
		if len(pl) > maxPayloadShown {
			pl = pl[:maxPayloadShown] + "…"
		}
		st := stateName
		if in.State == queue.Cancelled {
			st = string(queue.Cancelled)
		}
		jobs = append(jobs, jobRow{ID: in.ID, State: st, Priority: in.Priority.String(),
			CreatedAt: in.CreatedAt.UTC(), At: in.At.UTC(), RetryCount: in.RetryCount, MaxRetries: in.MaxRetries,
			LastError: in.LastError, Payload: pl, Corrupt: in.Corrupt})
	}
	scheds := make([]scheduleRow, 0, len(p.Schedules))
	for _, s := range p.Schedules {
		sr := scheduleRow{Name: s.Name, Spec: s.Spec, Location: s.TimeZone, Corrupt: p.ScheduleErrors[s.Name]}
		if sr.Location == "" {
			sr.Location = "UTC"
		}
		if !s.Next.IsZero() {
			t := s.Next.UTC()
			sr.NextRun = &t
		}
		scheds = append(scheds, sr)
	}
	return map[string]any{"stats": row(name, p.Stats, p.Daily), "state": stateName, "offset": offset, "limit": limit,
		"total": p.Total, "jobs": jobs, "schedules": scheds}, nil
}

// jobDetail answers /api/job?queue=&id=: one job in full
// (queue.Inspector.Job); 404 when it is gone.
func (h *Handler) jobDetail(r *http.Request) (any, error) {
	name, id := r.URL.Query().Get("queue"), r.URL.Query().Get("id")
	if name == "" || id == "" {
		return nil, badRequest("queue and id are required")
	}
	d, truncated, err := h.queueInspector().Job(r.Context(), name, id)
	if err != nil {
		return nil, queueErr(err)
	}
	payload := string(d.Payload)
	if d.Raw != "" {
		payload = d.Raw
	}
	type attempt struct {
		At      *time.Time `json:"at"`
		Attempt int        `json:"attempt"`
		Error   string     `json:"error"`
	}
	// the errors of its last attempts (queue.Info.Errors); a job that
	// failed before they were kept has its last error only
	errs := []attempt{}
	for _, e := range d.Errors {
		t := e.At.UTC()
		errs = append(errs, attempt{At: &t, Attempt: e.RetryCount, Error: e.Error})
	}
	if len(errs) == 0 && d.LastError != "" {
		a := attempt{Attempt: d.RetryCount, Error: d.LastError}
		if d.State == queue.Dead {
			t := d.At.UTC()
			a.At = &t
		}
		errs = append(errs, a)
	}
	headers := d.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	state := string(d.State)
	if d.State == queue.Completed {
		state = "done"
	}
	return map[string]any{"id": d.ID, "state": state, "priority": d.Priority.String(), "created_at": d.CreatedAt.UTC(),
		"at": d.At.UTC(), "retry_count": d.RetryCount, "max_retries": d.MaxRetries, "payload": payload,
		"payload_truncated": truncated, "headers": headers, "progress": d.Progress, "result": d.Result, "errors": errs}, nil
}

// queueForm reads the queue form field and opens it.
func (h *Handler) queueForm(r *http.Request) (*rawQueue, error) {
	name := r.PostFormValue("queue")
	if name == "" {
		return nil, badRequest("queue is required")
	}
	return h.queue(name)
}

// jobIDs reads the id form fields (one or more, at most 500).
func jobIDs(r *http.Request) ([]string, error) {
	if err := r.ParseForm(); err != nil {
		return nil, badRequest("%v", err)
	}
	ids := r.PostForm["id"]
	if len(ids) == 0 {
		return nil, badRequest("id is required")
	}
	return ids, nil
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

// setPaused pauses (queue.Queue.Pause) or resumes (Resume) a queue.
func (h *Handler) setPaused(pause bool) apiFunc {
	return func(r *http.Request) (any, error) {
		q, err := h.queueForm(r)
		if err != nil {
			return nil, err
		}
		set := q.Resume
		if pause {
			set = q.Pause
		}
		if _, err := set(r.Context()); err != nil {
			return nil, queueErr(err)
		}
		return map[string]any{"paused": pause}, nil
	}
}

// rawQueue is a queue opened by the dashboard: payloads stay JSON.
type rawQueue = queue.Queue[json.RawMessage]

// jobsAction is an action on the jobs named by the id fields: one
// (rawQueue.Requeue or Delete, 404 or 409 as it fails) or many
// (RequeueMany, DeleteMany). The reply counts them under verb.
func (h *Handler) jobsAction(verb string, one func(*rawQueue, context.Context, string) error,
	many func(*rawQueue, context.Context, ...string) (int, error)) apiFunc {
	return func(r *http.Request) (any, error) {
		q, err := h.queueForm(r)
		if err != nil {
			return nil, err
		}
		ids, err := jobIDs(r)
		if err != nil {
			return nil, err
		}
		n := 1
		if len(ids) == 1 {
			err = one(q, r.Context(), ids[0])
		} else {
			n, err = many(q, r.Context(), ids...)
		}
		if err != nil {
			return nil, queueErr(err)
		}
		return map[string]any{verb: n}, nil
	}
}

// bulkBatch is the batch of the all-dead actions; bulkBatches bounds one
// request's batches (the dead-letter list is capped at 100,000).
const (
	bulkBatch   = 1000
	bulkBatches = 100
)

// deadAction runs step over the dead letters until a batch of bulkBatch
// comes back short: requeue-all (rawQueue.RequeueDead) and purge-dead
// (Purge of the dead state). The reply counts them under verb.
func (h *Handler) deadAction(verb string, step func(*rawQueue, context.Context) (int, error)) apiFunc {
	return func(r *http.Request) (any, error) {
		q, err := h.queueForm(r)
		if err != nil {
			return nil, err
		}
		total := 0
		for i := 0; i < bulkBatches; i++ {
			n, err := step(q, r.Context())
			total += n
			if err != nil {
				return nil, queueErr(err)
			}
			if n < bulkBatch {
				break
			}
		}
		return map[string]any{verb: total}, nil
	}
}

func requeueDead(q *rawQueue, ctx context.Context) (int, error) { return q.RequeueDead(ctx, bulkBatch) }
func purgeDead(q *rawQueue, ctx context.Context) (int, error) {
	return q.Purge(ctx, queue.Dead, bulkBatch)
}

// cancelJob cancels a job (queue.Queue.Cancel) and reports its state.
func (h *Handler) cancelJob(r *http.Request) (any, error) {
	q, err := h.queueForm(r)
	if err != nil {
		return nil, err
	}
	id := r.PostFormValue("id")
	if id == "" {
		return nil, badRequest("id is required")
	}
	st, err := q.Cancel(r.Context(), id)
	if err != nil {
		return nil, queueErr(err)
	}
	return map[string]any{"state": st}, nil
}

// runNow makes a scheduled job ready now (queue.Queue.Promote).
func (h *Handler) runNow(r *http.Request) (any, error) {
	q, err := h.queueForm(r)
	if err != nil {
		return nil, err
	}
	id := r.PostFormValue("id")
	if id == "" {
		return nil, badRequest("id is required")
	}
	if err := q.Promote(r.Context(), id); err != nil {
		return nil, queueErr(err)
	}
	return map[string]any{"promoted": id}, nil
}
