package queue

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed daily.lua
	dailySrc string

	dailyOp = pkg.Declare("daily", dailySrc, []*keys.Template{dailyKey}, call.Uses(lib, call.Batched, call.JSONStr))
)

// DayStats is one UTC day of a queue's counts (Inspector.Daily).
type DayStats struct {
	Day       string // yyyy-mm-dd, UTC, by the server clock
	Processed int64  // jobs acked that day
	Failed    int64  // failed attempts that day (as Stats.TotalFailed)
}

// Daily returns the processed and failed counts of queue name for the
// last days UTC days (1 to 90, else ErrInvalid), today included, oldest
// first, a day without counts as zeros. One read-only script (one round
// trip). The counts are written with total_processed and total_failed by
// the scripts that settle jobs, in queue:{queue_name}:daily:{day} (91
// days' TTL). A count that is not a number is an error matching
// keys.ErrCorrupt that names the day's key.
func (in *Inspector) Daily(ctx context.Context, name string, days int) ([]DayStats, error) {
	const op = "daily"
	if days < 1 || days > maxDays {
		return nil, pkg.Invalidf(op, "days %d outside [1, %d]", days, maxDays)
	}
	q, err := in.open(name)
	if err != nil {
		return nil, err
	}
	rep, err := q.run.Run(ctx, dailyOp, []string{q.dailyPre}, days)
	if err != nil {
		return nil, err
	}
	return q.decodeDaily(&rep, days)
}

// dailyCall is Daily's script call.
func (q *Queue[T]) dailyCall(days int) call.Call {
	return call.Call{Op: dailyOp, Keys: []string{q.dailyPre}, Args: []any{days}}
}

// decodeDaily decodes the daily script's reply.
func (q *Queue[T]) decodeDaily(rep *call.Reply, days int) ([]DayStats, error) {
	const op = "daily"
	v := rep.Strs(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	if len(v) != 3*days {
		return nil, pkg.Fail(op, q.dailyPre, nil, fmt.Errorf("unexpected reply: %d values for %d days", len(v), days))
	}
	out := make([]DayStats, days)
	for i := range out {
		d := DayStats{Day: v[3*i]}
		for j, dst := range []*int64{&d.Processed, &d.Failed} {
			s := v[3*i+1+j]
			if s == "" {
				continue
			}
			x, err := strconv.ParseInt(s, 10, 64)
			if err != nil || x < 0 {
				k := q.dailyPre + d.Day
				return nil, pkg.Fail(op, k, nil, keys.Corrupt(k, fmt.Errorf("count %.32q", s)))
			}
			*dst = x
		}
		out[i] = d
	}
	return out, nil
}

// Summaries reads, for each queue of names, its Stats and the counts of
// its last 90 days (View.Daily; View.Jobs is empty), all in one pipeline
// of read-only scripts (one round trip per node of a cluster). The views
// come back in the order of names; a part that fails is left empty and
// its error joined to the one returned. A bad name fails with ErrInvalid
// before anything is sent.
func (in *Inspector) Summaries(ctx context.Context, names []string) ([]View[json.RawMessage], error) {
	if len(names) == 0 {
		return nil, nil
	}
	type reads struct {
		q            *Queue[json.RawMessage]
		stats, daily func() (call.Reply, error)
	}
	rs := make([]reads, len(names))
	pipe := in.rdb.Pipeline()
	for i, n := range names {
		q, err := in.open(n)
		if err != nil {
			return nil, err
		}
		rs[i] = reads{q: q, stats: q.run.Queue(ctx, pipe, q.statsCall()), daily: q.run.Queue(ctx, pipe, q.dailyCall(maxDays))}
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	out := make([]View[json.RawMessage], len(names))
	var errs []error
	for i, r := range rs {
		rep, err := r.stats()
		if err == nil {
			out[i].Stats, err = r.q.decodeStats(&rep)
		}
		errs = append(errs, err)
		if rep, err = r.daily(); err == nil {
			out[i].Daily, err = r.q.decodeDaily(&rep, maxDays)
		}
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// open returns queue name for the Inspector's reads (no pipelining, no
// contact with Redis).
func (in *Inspector) open(name string) (*Queue[json.RawMessage], error) {
	return New[json.RawMessage](in.rdb, name, WithNamespace(in.ns), WithPipelining(0))
}

// maxPage bounds Inspector.Page's limit.
const maxPage = 200

// Page is one page of one state of a queue (Inspector.Page).
type Page struct {
	Stats Stats
	Daily []DayStats // the last 90 days, oldest first
	// Schedules are the queue's periodic jobs (Queue.Schedules), payloads
	// as JSON; one whose definition does not decode has only its Name,
	// and why in ScheduleErrors.
	Schedules      []ScheduleInfo[json.RawMessage]
	ScheduleErrors map[string]string
	State          State
	Offset         int
	Limit          int
	Total          int64                   // jobs in State (before the search): the page's bound
	Rows           []Info[json.RawMessage] // a row that did not parse has Corrupt set
}

// Page reads one page of queue name's jobs in state (List's states) for
// an admin page: limit (1 to 200) jobs from offset, in List's order, with
// the queue's Stats, the state's size, its last 90 days (Daily) and its
// periodic jobs, in one pipeline of read-only
// calls (one round trip; a queue's keys share a slot). A stored entry
// that does not parse is a row of its own (Info.Corrupt says why,
// Info.Raw holds its text), never an error for the page. A non-empty search keeps
// the rows, among the limit read, whose ID starts with it or whose
// payload, raw text or last error contains it: it filters the page, it
// does not search the whole state (that would be unbounded).
func (in *Inspector) Page(ctx context.Context, name string, state State, offset, limit int, search string) (Page, error) {
	const op = "page"
	if !state.valid() || state == Cancelled {
		return Page{}, pkg.Invalidf(op, "state %q", state)
	}
	if offset < 0 || limit < 1 || limit > maxPage {
		return Page{}, pkg.Invalidf(op, "offset %d, limit %d (1..%d)", offset, limit, maxPage)
	}
	q, err := in.open(name)
	if err != nil {
		return Page{}, err
	}
	pipe := in.rdb.Pipeline()
	stats := q.run.Queue(ctx, pipe, q.statsCall())
	list := q.run.Queue(ctx, pipe, q.listCall(string(state), strconv.Itoa(offset), limit))
	done := pipe.ZCount(ctx, q.doneAt, "-inf", "+inf")
	daily := q.run.Queue(ctx, pipe, q.dailyCall(maxDays))
	scheds := q.run.Queue(ctx, pipe, call.Call{Op: schedulesOp, Keys: []string{q.schedules}})
	_, _ = pipe.Exec(ctx) // every command carries its own error
	p := Page{State: state, Offset: offset, Limit: limit}
	rep, err := daily()
	if err == nil {
		p.Daily, err = q.decodeDaily(&rep, maxDays)
	}
	if err != nil {
		return Page{}, err
	}
	if rep, err = scheds(); err != nil {
		return Page{}, err
	}
	if p.Schedules, p.ScheduleErrors, err = q.decodeScheduleRows(&rep); err != nil {
		return Page{}, err
	}
	rep, err = stats()
	if err == nil {
		p.Stats, err = q.decodeStats(&rep)
	}
	if err != nil {
		return Page{}, err
	}
	if rep, err = list(); err != nil {
		return Page{}, err
	}
	infos, whys, err := q.decodeRows(op, &rep, true)
	if err != nil {
		return Page{}, err
	}
	switch state {
	case Pending:
		p.Total = p.Stats.Pending()
	case Scheduled:
		p.Total = p.Stats.Delayed[High] + p.Stats.Delayed[Normal] + p.Stats.Delayed[Low]
	case Active:
		p.Total = p.Stats.InFlight
	case Dead:
		p.Total = p.Stats.Dead
	case Completed:
		n, err := done.Result()
		if err != nil {
			return Page{}, pkg.Fail(op, q.doneAt, nil, err)
		}
		p.Total = n
	}
	p.Rows = make([]Info[json.RawMessage], 0, len(infos))
	for i, info := range infos {
		if search != "" && !strings.HasPrefix(info.ID, search) && !strings.Contains(string(info.Payload), search) &&
			!strings.Contains(info.Raw, search) && !strings.Contains(info.LastError, search) {
			continue
		}
		info.Corrupt = whys[i]
		p.Rows = append(p.Rows, info)
	}
	return p, nil
}

// maxDetail caps the payload Inspector.Job returns.
const maxDetail = 64 << 10

// Job reads the job with the given ID of queue name, in whatever state
// it is (Queue.Peek: one read-only round trip): headers, progress, result
// when completed, state, retry count, max retries, last error and the
// errors of its last 10 attempts (Info.Errors). Its payload (Payload, or Raw for a
// job that does not decode) is cut at 64 KiB, and truncated reports the
// cut (the cut text is then not valid JSON). ErrNotFound when there is
// none.
func (in *Inspector) Job(ctx context.Context, name, id string) (info Info[json.RawMessage], truncated bool, err error) {
	q, err := in.open(name)
	if err != nil {
		return Info[json.RawMessage]{}, false, err
	}
	got, err := q.Peek(ctx, id)
	if err != nil {
		return Info[json.RawMessage]{}, false, err
	}
	info = *got
	if len(info.Payload) > maxDetail {
		info.Payload, truncated = info.Payload[:maxDetail], true
	}
	if len(info.Raw) > maxDetail {
		info.Raw, truncated = info.Raw[:maxDetail], true
	}
	return info, truncated, nil
}

// decodeScheduleRows decodes the schedules script's reply for Page: a
// definition that does not decode is named, with why, in the map.
func (q *Queue[T]) decodeScheduleRows(rep *call.Reply) ([]ScheduleInfo[json.RawMessage], map[string]string, error) {
	rep.Int(0)
	h := rep.Strs(1)
	if err := rep.Err(); err != nil {
		return nil, nil, err
	}
	var out []ScheduleInfo[json.RawMessage]
	bad := map[string]string{}
	for i := 0; i+1 < len(h); i += 2 {
		d := q.decodeSchedule("page", h[i], h[i+1])
		in := ScheduleInfo[json.RawMessage]{Name: d.name}
		if d.err != nil {
			bad[d.name] = d.err.Error()
			out = append(out, in)
			continue
		}
		in.Spec, in.TimeZone, in.Payload = d.def.Spec, d.def.TZ, json.RawMessage(d.def.Payload)
		if d.def.Missed == "catch_up_once" {
			in.Missed = CatchUpOnce
		}
		if d.def.Due > 0 {
			in.Next = msTime(d.def.Due)
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, bad, nil
}
