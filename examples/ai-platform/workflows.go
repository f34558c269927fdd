package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/queue"
)

// Execution is the payload of the n8n queue: seed 001's item fields.
type Execution struct {
	WorkflowID  string         `json:"workflow_id"`
	TriggerType string         `json:"trigger_type"` // webhook, schedule, manual
	TriggerData map[string]any `json:"trigger_data"`
}

// workflows are the platform's n8n workflows; "sync-crm" calls a service
// that is down, so its executions fail into the dead-letter list.
var workflows = []map[string]string{
	{"id": "nightly-report", "name": "Nightly report", "trigger": "schedule"},
	{"id": "ingest-invoices", "name": "Ingest invoices", "trigger": "webhook"},
	{"id": "sync-crm", "name": "Sync CRM contacts", "trigger": "manual"},
}

// executionRecord is one execution's history (n8n keeps it in its
// database; here in memory).
type executionRecord struct {
	ID       string    `json:"id"`
	Workflow string    `json:"workflow_id"`
	Status   string    `json:"status"` // queued, running, retrying, success, failed
	Attempts int       `json:"attempts"`
	Fence    int64     `json:"fence,omitempty"` // the workflow lock's fencing token of the last attempt
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at"`
	Error    string    `json:"error,omitempty"`
}

type executions struct {
	mu sync.Mutex
	by map[string]*executionRecord
}

func newExecutions() *executions { return &executions{by: map[string]*executionRecord{}} }

func (e *executions) update(id string, f func(*executionRecord)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.by[id]; ok {
		f(r)
	}
}

// listWorkflows is shared by every user (cached 60 s).
func (p *platform) listWorkflows(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, map[string]any{"workflows": workflows}, nil)
}

// execute queues an execution of workflow {id} (?priority=high|normal|low)
// with the request's JSON body as trigger data.
func (p *platform) execute(w http.ResponseWriter, r *http.Request) {
	wf := r.PathValue("id")
	known := false
	for _, x := range workflows {
		known = known || x["id"] == wf
	}
	if !known {
		reply(w, 0, nil, errStatus(http.StatusNotFound, "no workflow %q", wf))
		return
	}
	data := map[string]any{}
	if r.ContentLength != 0 {
		if err := decode(w, r, &data); err != nil {
			reply(w, 0, nil, err)
			return
		}
	}
	prio := map[string]queue.Priority{"high": queue.High, "low": queue.Low}[r.URL.Query().Get("priority")]
	id := "exec-" + randomHex(6)
	p.executions.mu.Lock()
	p.executions.by[id] = &executionRecord{ID: id, Workflow: wf, Status: "queued"}
	p.executions.mu.Unlock()
	_, err := p.runs.Enqueue(r.Context(), Execution{WorkflowID: wf, TriggerType: "manual", TriggerData: data},
		queue.WithID(id), queue.WithPriority(prio))
	reply(w, http.StatusAccepted, map[string]string{"execution_id": id}, err)
}

func (p *platform) getExecution(w http.ResponseWriter, r *http.Request) {
	p.executions.mu.Lock()
	rec, ok := p.executions.by[r.PathValue("id")]
	var out executionRecord
	if ok {
		out = *rec
	}
	p.executions.mu.Unlock()
	if !ok {
		reply(w, 0, nil, errStatus(http.StatusNotFound, "no such execution"))
		return
	}
	reply(w, http.StatusOK, out, nil)
}

// runExecution is the n8n worker. Executions of one workflow run one at a
// time: the worker waits for lock:workflow:{id} (300 s, kept alive by the
// watchdog). Its last failed attempt goes to the dead-letter list, with a
// system notification.
func (p *platform) runExecution(ctx context.Context, j *queue.Job[Execution]) error {
	wf := j.Payload.WorkflowID
	l, err := p.locks.Acquire(ctx, lock.Workflow, wf, p.locks.DefaultTTL(lock.Workflow), lock.WithWatchdog(0))
	if err != nil {
		return err
	}
	defer func() { _ = l.Release(context.WithoutCancel(ctx)) }()
	p.executions.update(j.ID, func(r *executionRecord) {
		r.Status, r.Attempts, r.Fence, r.Started = "running", j.RetryCount+1, l.Fence(), time.Now()
	})
	publish(ctx, p, pubsub.TopicWorkflowStarted(), pubsub.WorkflowStarted{ExecutionID: j.ID, WorkflowID: wf})

	result, err := runWorkflow(l.Context(), j.Payload)
	finished := time.Now()
	if err != nil {
		last := j.RetryCount >= j.MaxRetries
		p.executions.update(j.ID, func(r *executionRecord) {
			r.Status, r.Error, r.Finished = "retrying", err.Error(), finished
			if last {
				r.Status = "failed"
			}
		})
		if last {
			publish(ctx, p, pubsub.TopicWorkflowCompleted(), pubsub.WorkflowCompleted{ExecutionID: j.ID, Status: "failed"})
			publish(ctx, p, pubsub.TopicSystemNotification(), pubsub.SystemNotification{Type: "dead_letter",
				Message: fmt.Sprintf("execution %s of %s failed %d times: %v", j.ID, wf, j.RetryCount+1, err), Severity: "error"})
		}
		return err
	}
	p.executions.update(j.ID, func(r *executionRecord) { r.Status, r.Finished = "success", finished })
	publish(ctx, p, pubsub.TopicWorkflowCompleted(), pubsub.WorkflowCompleted{ExecutionID: j.ID, Status: "success", Result: result})
	return nil
}

// runWorkflow stands in for n8n running the workflow's nodes.
func runWorkflow(ctx context.Context, e Execution) (map[string]any, error) {
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if e.WorkflowID == "sync-crm" {
		return nil, errors.New(`node "HTTP Request": crm.example.com answered 503`)
	}
	return map[string]any{"items": 3}, nil
}

// publish sends an event; pub/sub is at most once, so a failure is
// logged, never the job's failure.
func publish[T any](ctx context.Context, p *platform, t pubsub.Topic[T], v T) {
	if _, err := pubsub.Publish(ctx, p.bus, t, v); err != nil {
		p.log.Printf("publish %s: %v", t.Channel(p.ns), err)
	}
}

// queueOf returns the named queue's admin view.
func (p *platform) queueOf(name string) (queueAdmin, error) {
	switch name {
	case p.runs.Name():
		return adminOf(p.runs), nil
	case p.jobs.Name():
		return adminOf(p.jobs), nil
	}
	return queueAdmin{}, errStatus(http.StatusNotFound, "no queue %q", name)
}

// queueAdmin is what the admin endpoints do with a queue of any payload.
type queueAdmin struct {
	stats   func(context.Context) (queue.Stats, error)
	dead    func(context.Context) ([]map[string]any, error)
	requeue func(context.Context, string) error
}

func adminOf[T any](q *queue.Queue[T]) queueAdmin {
	return queueAdmin{
		stats: q.Stats,
		dead: func(ctx context.Context) ([]map[string]any, error) {
			list, err := q.List(ctx, queue.Dead, 0, 100)
			out := []map[string]any{}
			for _, d := range list {
				out = append(out, map[string]any{"id": d.ID, "payload": d.Payload, "attempts": d.RetryCount, "error": d.LastError, "failed_at": d.At})
			}
			return out, err
		},
		requeue: q.Requeue,
	}
}

func (p *platform) queueStats(w http.ResponseWriter, r *http.Request) {
	q, err := p.queueOf(r.PathValue("name"))
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	s, err := q.stats(r.Context())
	reply(w, http.StatusOK, map[string]any{
		"total_enqueued": s.TotalEnqueued, "total_processed": s.TotalProcessed, "total_failed": s.TotalFailed,
		"total_dead": s.TotalDead, "avg_process_time_ms": s.AvgProcessTime.Milliseconds(), "last_processed_at": s.LastProcessedAt,
		"pending": s.Pending(), "in_flight": s.InFlight, "dead": s.Dead,
	}, err)
}

func (p *platform) deadLetters(w http.ResponseWriter, r *http.Request) {
	q, err := p.queueOf(r.PathValue("name"))
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	list, err := q.dead(r.Context())
	reply(w, http.StatusOK, list, err)
}

// requeue gives a dead job another round of attempts.
func (p *platform) requeue(w http.ResponseWriter, r *http.Request) {
	q, err := p.queueOf(r.PathValue("name"))
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	err = q.requeue(r.Context(), r.PathValue("id"))
	reply(w, http.StatusOK, map[string]string{"requeued": r.PathValue("id")}, err)
}
