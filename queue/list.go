package queue

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed list.lua
	listSrc string

	listOp = pkg.Declare("list", listSrc, with(liveKeys, progressKey, doneKey, doneAtKey, flowsKey, errorsKey), call.Uses(lib, call.Batched, call.JSONStr))
)

// State names where a job is.
type State string

// The states of a job.
const (
	Pending   State = "pending"   // ready, waiting for a consumer
	Scheduled State = "scheduled" // waiting for its delay or retry backoff
	Active    State = "active"    // leased to a consumer
	Dead      State = "dead"      // in the dead-letter list
	Completed State = "completed" // acked, kept by WithRetention
	Cancelled State = "cancelled" // stopped by Cancel, kept by WithRetention
	// Waiting: a flow's parent waiting for its children (EnqueueFlow);
	// Peek reports it, List and Purge take no such state.
	Waiting State = "waiting"
)

func (s State) valid() bool {
	return s == Pending || s == Scheduled || s == Active || s == Dead || s == Completed || s == Cancelled
}

// Info describes a job found by List or Peek.
type Info[T any] struct {
	Job[T]
	State State
	// At is when the job becomes ready (Pending, Scheduled), when its
	// lease expires (Active), when it failed for good (Dead), or when it
	// finished (Completed).
	At time.Time
	// Progress is the JSON its handler last reported (Job.SetProgress):
	// for an Active job found by Peek, and for a Completed one; nil
	// otherwise or when none was reported.
	Progress json.RawMessage
	// Result is the JSON result of a Completed job (Job.SetResult), nil
	// when it set none.
	Result json.RawMessage
	// Raw is the stored job text of a dead job whose JSON did not decode
	// (its Payload is then zero); empty otherwise. A dead-letter entry that
	// is not JSON at all is an error matching keys.ErrCorrupt.
	Raw string
	// Errors are the errors of its last attempts (at most 10, oldest
	// first; Kind EventFailed, At, RetryCount the attempt, Error), read by
	// Peek and kept with a dead letter; nil for List's rows.
	Errors []Event
	// Corrupt is why a stored entry did not parse, with its text in Raw:
	// set only by Inspector.Page, which shows such an entry as a row.
	Corrupt string
}

// maxList bounds one List call, so a single script never blocks Redis
// for long.
const maxList = 10000

// List returns up to limit jobs (1..10,000) in state, skipping offset:
// pending jobs by priority then FIFO, scheduled jobs by priority then
// ready time, active jobs by lease deadline, dead and completed jobs
// newest first (Completed: the jobs WithRetention keeps, completed or
// cancelled, each with its own State; Cancelled is not a List state). One
// script (one round trip), read-only. Info.Delivery is the job's last
// lease token (0 if never delivered).
func (q *Queue[T]) List(ctx context.Context, state State, offset, limit int) ([]Info[T], error) {
	const op = "list"
	if !state.valid() || state == Cancelled {
		return nil, pkg.Invalidf(op, "state %q", state)
	}
	if offset < 0 || limit < 1 || limit > maxList {
		return nil, pkg.Invalidf(op, "offset %d, limit %d (1..%d)", offset, limit, maxList)
	}
	return q.list(ctx, op, string(state), strconv.Itoa(offset), limit)
}

// Peek returns the job with the given ID in whatever state it is, or
// ErrNotFound: live (with its progress while Active; Waiting, with a zero
// At, for a flow's parent waiting for its children), else finished and
// kept by WithRetention (Completed, with its result and last progress),
// else dead. One round trip, read-only; a dead job is found by a scan of
// the dead-letter list (bounded by its cap).
func (q *Queue[T]) Peek(ctx context.Context, id string) (*Info[T], error) {
	const op = "peek"
	if _, err := q.jobKey(op, id); err != nil {
		return nil, err
	}
	out, err := q.list(ctx, op, "id", id, 1)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, pkg.Fail(op, q.jobs, ErrNotFound, fmt.Errorf("job %q", id))
	}
	return &out[0], nil
}

func (q *Queue[T]) list(ctx context.Context, op, what, arg string, limit int) ([]Info[T], error) {
	c := q.listCall(what, arg, limit)
	rep, err := q.run.Run(ctx, c.Op, c.Keys, c.Args...)
	if err != nil {
		return nil, err
	}
	return q.decodeList(op, &rep)
}

// listCall is the list script's call: what is a state, or "id" for Peek.
func (q *Queue[T]) listCall(what, arg string, limit int) call.Call {
	return call.Call{Op: listOp, Keys: with(q.live, q.progress, q.done, q.doneAt, q.flows, q.errors), Args: []any{what, arg, limit}}
}

// decodeList decodes the list script's reply.
func (q *Queue[T]) decodeList(op string, rep *call.Reply) ([]Info[T], error) {
	out, _, err := q.decodeRows(op, rep, false)
	return out, err
}

// decodeRows decodes the list script's reply. When lenient, a dead or
// done entry that does not parse becomes a row of its own, its text in
// Raw and why it did not parse at the same index of whys ("" for a good
// row), rather than failing the whole read.
func (q *Queue[T]) decodeRows(op string, rep *call.Reply, lenient bool) ([]Info[T], []string, error) {
	rows := rep.List(1)
	if err := rep.Err(); err != nil {
		return nil, nil, err
	}
	out := make([]Info[T], 0, len(rows))
	whys := make([]string, 0, len(rows))
	for _, rv := range rows {
		if len(whys) < len(out) {
			whys = append(whys, "")
		}
		row, ok := rv.([]any)
		if !ok {
			return nil, nil, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: row %T", rv))
		}
		r := rowReader{vals: row}
		var in Info[T]
		if len(row) == 2 && r.str(0) == "dead" {
			if err := q.decodeDead(r.str(1), &in); err != nil {
				if !lenient {
					return nil, nil, pkg.Fail(op, q.dead, nil, err)
				}
				in = Info[T]{State: Dead, Raw: r.str(1)}
				out, whys = append(out, in), append(whys, err.Error())
				continue
			}
			out = append(out, in)
			continue
		}
		if len(row) == 2 && r.str(0) == "done" {
			if err := q.decodeDone(r.str(1), &in); err != nil {
				if !lenient {
					return nil, nil, pkg.Fail(op, q.done, nil, err)
				}
				in = Info[T]{State: Completed, Raw: r.str(1)}
				out, whys = append(out, in), append(whys, err.Error())
				continue
			}
			out = append(out, in)
			continue
		}
		if len(row) != 7 {
			return nil, nil, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: row of %d", len(row)))
		}
		state, id, st, body, score, prog := State(r.str(0)), r.str(1), r.str(2), r.str(3), r.int(4), r.str(5)
		var errs []Event
		if h := r.str(6); h != "" {
			var err error
			if errs, err = parseErrors(id, h); err != nil {
				return nil, nil, pkg.Fail(op, q.errors, nil, keys.Corrupt(q.errors, err))
			}
		}
		if r.err != nil {
			return nil, nil, pkg.Fail(op, q.jobs, nil, r.err)
		}
		if err := q.decodeBody(q.jobs, body, &in.Job); err != nil {
			if !lenient {
				return nil, nil, pkg.Fail(op, q.jobs, nil, err)
			}
			in = Info[T]{State: state, Raw: body}
			in.ID = id
			out, whys = append(out, in), append(whys, err.Error())
			continue
		}
		// A job never delivered has no state entry: no delivery, no
		// attempt, its JSON's retries and priority.
		dlv, retry, max, p, lastErr := int64(0), 0, in.MaxRetries, in.Priority, ""
		if st != "" {
			var err error
			if dlv, retry, max, p, lastErr, err = parseState(q.state, st); err != nil {
				return nil, nil, pkg.Fail(op, q.state, nil, err)
			}
		}
		if state != Active {
			score /= 1000
		}
		in.State, in.Errors = state, errs
		in.ID, in.Delivery, in.RetryCount, in.MaxRetries, in.Priority, in.LastError = id, dlv, retry, max, p, lastErr
		in.At = msTime(score)
		if state == Waiting {
			in.At = time.Time{} // ready when its last child leaves
		}
		if state == Active {
			in.LeaseDeadline = in.At
			if prog != "" {
				d, js, ok := strings.Cut(prog, ",")
				if !ok || !json.Valid([]byte(js)) {
					return nil, nil, pkg.Fail(op, q.progress, nil, keys.Corrupt(q.progress, fmt.Errorf("job %q: bad progress %.64q", id, prog)))
				}
				if d == strconv.FormatInt(dlv, 10) {
					in.Progress = json.RawMessage(js)
				}
			}
		}
		out = append(out, in)
	}
	for len(whys) < len(out) {
		whys = append(whys, "")
	}
	return out, whys, nil
}

// doneEntry is the done hash's value: a job kept by WithRetention.
type doneEntry struct {
	ID         string          `json:"id"`
	State      string          `json:"state"`
	FinishedAt int64           `json:"finished_at"` // Unix ms, server clock
	RetryCount int             `json:"retry_count"`
	Delivery   int64           `json:"delivery"`
	Result     json.RawMessage `json:"result"`
	Progress   json.RawMessage `json:"progress"`
	Job        json.RawMessage `json:"job"`
}

// raw returns m, or nil for JSON null or nothing.
func raw(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

func (q *Queue[T]) decodeDone(s string, in *Info[T]) error {
	var e doneEntry
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return keys.Corrupt(q.done, err)
	}
	if e.ID == "" || !State(e.State).valid() {
		return keys.Corrupt(q.done, fmt.Errorf("entry %.64q has no id or a bad state", s))
	}
	if raw(e.Job) != nil {
		if err := q.decodeBody(q.done, string(e.Job), &in.Job); err != nil {
			in.Job = Job[T]{}
			in.Raw = string(e.Job)
		}
	}
	in.ID, in.State, in.At, in.RetryCount, in.Delivery = e.ID, State(e.State), msTime(e.FinishedAt), e.RetryCount, e.Delivery
	in.Result, in.Progress = raw(e.Result), raw(e.Progress)
	return nil
}

// deadEntry is the dead-letter list's element: the job JSON as it was
// stored, with why and when it failed for good.
type deadEntry struct {
	ID         string          `json:"id"`
	Error      string          `json:"error"`
	FailedAt   int64           `json:"failed_at"` // Unix ms, server clock
	RetryCount int             `json:"retry_count"`
	MaxRetries int             `json:"max_retries"`
	Level      string          `json:"level"`
	Raw        *string         `json:"raw,omitempty"`
	Errors     json.RawMessage `json:"errors,omitempty"`
	Job        json.RawMessage `json:"job"`
}

func (q *Queue[T]) decodeDead(s string, in *Info[T]) error {
	var e deadEntry
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return keys.Corrupt(q.dead, err)
	}
	if len(e.Job) > 0 && string(e.Job) != "null" {
		if err := q.decodeBody(q.dead, string(e.Job), &in.Job); err != nil {
			// The entry is readable, its job is not (stored by another
			// program or payload type): show it raw rather than failing
			// the whole listing.
			in.Job = Job[T]{}
			raw := string(e.Job)
			e.Raw = &raw
		}
	}
	p, ok := parseLevel(e.Level)
	if !ok {
		return keys.Corrupt(q.dead, fmt.Errorf("bad level %q", e.Level))
	}
	in.ID, in.State, in.At = e.ID, Dead, msTime(e.FailedAt)
	in.RetryCount, in.MaxRetries, in.Priority, in.LastError = e.RetryCount, e.MaxRetries, p, e.Error
	if e.Raw != nil {
		in.Raw = *e.Raw
	}
	if len(e.Errors) > 0 {
		es, err := parseErrors(e.ID, string(e.Errors))
		if err != nil {
			return keys.Corrupt(q.dead, err)
		}
		in.Errors = es
	}
	return nil
}

// attemptError is one element of a job's attempt errors (the errors hash,
// a dead letter's "errors").
type attemptError struct {
	At      int64  `json:"at"` // Unix ms, server clock
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
}

// parseErrors decodes the attempt errors of job id as failed events.
func parseErrors(id, s string) ([]Event, error) {
	var es []attemptError
	if err := json.Unmarshal([]byte(s), &es); err != nil {
		return nil, fmt.Errorf("attempt errors of %q: %w", id, err)
	}
	out := make([]Event, len(es))
	for i, e := range es {
		out[i] = Event{Kind: EventFailed, JobID: id, At: msTime(e.At), RetryCount: e.Attempt, Error: e.Error}
	}
	return out, nil
}
