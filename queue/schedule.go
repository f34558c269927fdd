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
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed schedule.lua
	scheduleSrc string
	//go:embed schedules.lua
	schedulesSrc string
	//go:embed tick.lua
	tickSrc string

	scheduleOp  = pkg.Declare("schedule", scheduleSrc, []*keys.Template{scheduleKey}, call.Durable())
	schedulesOp = pkg.Declare("schedules", schedulesSrc, []*keys.Template{scheduleKey})
	// tick enqueues with enqueue.lua's own logic, enqueue() in
	// enqueue_lib.lua.
	tickOp, tickEvOp = twin("tick", tickSrc,
		[]*keys.Template{jobsKey, priorityKey, statsKey, wakeKey, replyKey, scheduleKey}, call.Uses(enqueueLib), call.Durable())
)

// minInterval is the shortest fixed interval of a schedule ("@every d").
const minInterval = 10 * time.Millisecond

// Missed is what a scheduler does with ticks that passed while no
// scheduler ran (every instance down, or a pass late by more than one
// period).
type Missed int

const (
	// Skip drops missed ticks: a tick more than one period
	// late enqueues nothing, and the next due tick is the first after now.
	Skip Missed = iota
	// CatchUpOnce enqueues one job for all the ticks missed, at once, then
	// goes on from the first tick after now.
	CatchUpOnce
)

// schedDef is a stored schedule: JSON with "due" first (the scripts read
// and compare what follows it).
type schedDef struct {
	Due     int64  `json:"due"` // next tick, Unix ms; 0: not set yet
	Spec    string `json:"spec"`
	TZ      string `json:"tz,omitempty"`
	Missed  string `json:"missed"`
	Payload []byte `json:"payload"` // the codec's bytes
}

// compiled is a schedule's next-tick function.
type compiled struct {
	every time.Duration
	cron  cronSpec
	loc   *time.Location
}

// next is the first tick strictly after t (zero if none).
func (c compiled) next(t time.Time) time.Time {
	if c.every > 0 {
		e := c.every.Milliseconds()
		return time.UnixMilli((t.UnixMilli()/e + 1) * e)
	}
	return c.cron.next(t, c.loc)
}

func compile(spec, tz string) (compiled, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return compiled{}, err
		}
		loc = l
	}
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		every, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return compiled{}, fmt.Errorf("spec %q: %w", spec, err)
		}
		if every < minInterval || every > maxDelay || every%time.Millisecond != 0 {
			return compiled{}, fmt.Errorf("spec %q: interval outside [%v, %v] or not whole ms", spec, minInterval, maxDelay)
		}
		return compiled{every: every, loc: loc}, nil
	}
	c, err := parseCron(spec)
	if err != nil {
		return compiled{}, err
	}
	if c.next(time.Now(), loc).IsZero() {
		return compiled{}, fmt.Errorf("cron %q never matches", spec)
	}
	return compiled{cron: c, loc: loc}, nil
}

// Schedule creates or replaces the periodic job name: at each tick of
// spec a job with payload is enqueued, at Normal priority with the
// queue's default retries, with the ID "name@tick" (tick in Unix ms).
// spec is a 5-field cron expression "minute hour day-of-month month
// day-of-week" (each field "*", "n", "a-b", lists "a,b", steps "/n";
// day of week 0-7, 0 and 7 Sunday; when both day fields are restricted
// either matches), read in loc's wall clock, or "@every d" for a fixed
// interval d (10ms to 366 days, whole milliseconds), ticks at multiples
// of d since the Unix epoch. With loc Europe/Paris, "0 9 * * *" is 09:00
// in Paris, summer and winter; a wall-clock time a DST change skips has
// no tick that day (02:30 on the spring change), one it repeats has one
// tick, the first. loc is time.UTC for UTC and must be loadable by name
// (time.LoadLocation) on every instance: UTC, Local or an IANA name.
// missed is what the scheduler does with ticks no scheduler ran for:
// Skip or CatchUpOnce. Ticks happen only while some
// process runs RunSchedules; each tick is enqueued once, however many
// do. Scheduling the same definition again changes nothing (every
// instance may declare its schedules at start-up); a new spec, zone,
// policy or payload takes effect from the first tick after the next
// scheduler pass. It reports whether the stored definition changed. One
// script (one round trip). A bad spec or name is ErrInvalid; with
// WithDurability it waits for replicas like Enqueue.
func (q *Queue[T]) Schedule(ctx context.Context, name, spec string, payload T, loc *time.Location, missed Missed) (bool, error) {
	const op = "schedule"
	if err := q.checkScheduleName(op, name); err != nil {
		return false, err
	}
	if loc == nil || (missed != Skip && missed != CatchUpOnce) {
		return false, pkg.Invalidf(op, "nil time zone or unknown missed-tick policy %d", int(missed))
	}
	tz := loc.String()
	if tz == "UTC" {
		tz = ""
	}
	if _, err := compile(spec, tz); err != nil {
		return false, pkg.Invalid(op, err)
	}
	data, err := q.o.codec.Marshal(payload)
	if err != nil {
		return false, pkg.Invalid(op, fmt.Errorf("payload does not encode: %w", err))
	}
	// The tick's job must fit too.
	if _, err := q.encode(op, tickID(name, 0), payload, Normal, time.Now(), q.o.maxRetries); err != nil {
		return false, err
	}
	policy := "skip"
	if missed == CatchUpOnce {
		policy = "catch_up_once"
	}
	b, err := json.Marshal(schedDef{Spec: spec, TZ: tz, Missed: policy, Payload: data})
	if err != nil {
		return false, pkg.Invalid(op, err)
	}
	rest := strings.TrimPrefix(string(b), `{"due":0,`)
	rep, err := q.run.Run(ctx, scheduleOp, []string{q.schedules}, name, rest)
	nd, err := call.NotDurable(err)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return false, err
	}
	return n == 1, nd
}

// tickID is the job ID of a tick: the schedule name, "@" and the tick.
func tickID(name string, tick int64) string { return name + "@" + strconv.FormatInt(tick, 10) }

func (q *Queue[T]) checkScheduleName(op, name string) error {
	// the name and its tick suffix must be a job ID
	if _, err := q.jobKey(op, tickID(name, 1<<53)); err != nil {
		return err
	}
	if name == "" || strings.Contains(name, "@") {
		return pkg.Invalidf(op, "schedule name %q (empty or with '@')", name)
	}
	return nil
}

// Unschedule removes the periodic job name; jobs it already enqueued
// stay. It reports whether there was one. One command.
func (q *Queue[T]) Unschedule(ctx context.Context, name string) (bool, error) {
	const op = "unschedule"
	if err := q.checkScheduleName(op, name); err != nil {
		return false, err
	}
	n, err := q.run.Client().HDel(ctx, q.schedules, name).Result()
	if err != nil {
		return false, pkg.Fail(op, q.schedules, nil, err)
	}
	return n == 1, nil
}

// ScheduleInfo describes one periodic job.
type ScheduleInfo[T any] struct {
	Name     string
	Spec     string // cron expression or "@every d"
	TimeZone string // "" for UTC
	Missed   Missed
	// Next is the next tick (server time); zero until a scheduler pass
	// after the schedule was created or replaced.
	Next    time.Time
	Payload T
}

// Schedules lists the periodic jobs, by name. One script (one round
// trip). A definition that does not decode is an error matching
// keys.ErrCorrupt that names the schedules hash.
func (q *Queue[T]) Schedules(ctx context.Context) ([]ScheduleInfo[T], error) {
	_, defs, err := q.readSchedules(ctx, "schedules")
	if err != nil {
		return nil, err
	}
	out := make([]ScheduleInfo[T], 0, len(defs))
	var errs []error
	for _, d := range defs {
		if d.err != nil {
			errs = append(errs, d.err)
			continue
		}
		in := ScheduleInfo[T]{Name: d.name, Spec: d.def.Spec, TimeZone: d.def.TZ}
		if d.def.Missed == "catch_up_once" {
			in.Missed = CatchUpOnce
		}
		if d.def.Due > 0 {
			in.Next = msTime(d.def.Due)
		}
		if err := q.o.codec.Unmarshal(d.def.Payload, &in.Payload); err != nil {
			errs = append(errs, q.corruptSchedule("schedules", d.name, err))
			continue
		}
		out = append(out, in)
	}
	return out, errors.Join(errs...)
}

type storedSchedule struct {
	name, raw string
	def       schedDef
	c         compiled
	err       error
}

func (q *Queue[T]) corruptSchedule(op, name string, err error) error {
	return pkg.Fail(op, q.schedules, nil, keys.Corrupt(q.schedules, fmt.Errorf("schedule %q: %w", name, err)))
}

// decodeSchedule decodes a stored definition; a bad one carries an error
// matching keys.ErrCorrupt naming the schedules hash.
func (q *Queue[T]) decodeSchedule(op, name, raw string) storedSchedule {
	s := storedSchedule{name: name, raw: raw}
	var err error
	if err = json.Unmarshal([]byte(raw), &s.def); err != nil || !strings.HasPrefix(raw, `{"due":`) || s.def.Due < 0 {
		s.err = q.corruptSchedule(op, name, fmt.Errorf("definition %.64q does not decode", raw))
	} else if s.c, err = compile(s.def.Spec, s.def.TZ); err != nil {
		s.err = q.corruptSchedule(op, name, err)
	}
	return s
}

// readSchedules returns the server time and the stored schedules, sorted
// by name; one that does not decode carries its error.
func (q *Queue[T]) readSchedules(ctx context.Context, op string) (time.Time, []storedSchedule, error) {
	rep, err := q.run.Run(ctx, schedulesOp, []string{q.schedules})
	if err != nil {
		return time.Time{}, nil, err
	}
	now := rep.Int(0)
	h := rep.Strs(1)
	if err := rep.Err(); err != nil {
		return time.Time{}, nil, err
	}
	var out []storedSchedule
	for i := 0; i+1 < len(h); i += 2 {
		out = append(out, q.decodeSchedule(op, h[i], h[i+1]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return msTime(now), out, nil
}

// maxSchedulerWait bounds how long RunSchedules sleeps between passes, so
// that a new or changed schedule is noticed.
const maxSchedulerWait = time.Second

// RunSchedules enqueues the jobs of the queue's periodic jobs (Schedule)
// until ctx ends, then returns nil. Run it in any number of processes:
// each tick is claimed by one of them, in the script that enqueues its
// job, so each tick is enqueued exactly once (or, for ticks missed, as
// the schedule's Missed policy says). Ticks are read on the server's
// clock. Each pass is one round trip to read the schedules plus one per
// due tick; between passes it sleeps until the next tick, at most one
// second. Errors it survives (Redis unreachable, a corrupt definition)
// are reported as Run's are: to WithErrorHandler, or logged with slog.
func (q *Queue[T]) RunSchedules(ctx context.Context) error {
	for {
		wait, err := q.schedulePass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			q.report(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// schedulePass claims every due tick once and returns how long to sleep
// until the next one (at most maxSchedulerWait).
func (q *Queue[T]) schedulePass(ctx context.Context) (time.Duration, error) {
	const op = "tick"
	now, defs, err := q.readSchedules(ctx, op)
	if err != nil {
		return maxSchedulerWait, err
	}
	wait := maxSchedulerWait
	var errs []error
	for _, s := range defs {
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		due := s.def.Due
		next := s.c.next(now).UnixMilli()
		if due > 0 && due > now.UnixMilli() {
			wait = min(wait, time.Duration(due-now.UnixMilli())*time.Millisecond)
			continue
		}
		// due now (or a new definition: set its first tick)
		enqueue := due > 0 && (s.c.next(msTime(due)).UnixMilli() > now.UnixMilli() || s.def.Missed == "catch_up_once")
		if err := q.tick(ctx, s, due, next, enqueue); err != nil {
			errs = append(errs, err)
		}
		wait = min(wait, time.Duration(next-now.UnixMilli())*time.Millisecond)
	}
	return max(wait, time.Millisecond), errors.Join(errs...)
}

// tick claims the tick due of s, storing next as its next tick, and
// enqueues its job when enqueue is set. Losing the claim to another
// scheduler is not an error.
func (q *Queue[T]) tick(ctx context.Context, s storedSchedule, due, next int64, enqueue bool) error {
	const op = "tick"
	d := s.def
	d.Due = next
	b, err := json.Marshal(d)
	if err != nil {
		return pkg.Fail(op, q.schedules, nil, err)
	}
	ks := []string{q.jobs, q.levelKey(Normal), q.stats, q.wake, q.request(), q.schedules}
	args := []any{"", "", 0, 0, 0, s.name, s.raw, due, string(b), "0"}
	if enqueue {
		var payload T
		if err := q.o.codec.Unmarshal(d.Payload, &payload); err != nil {
			return q.corruptSchedule(op, s.name, err)
		}
		p, err := q.prepare(op, payload, []EnqueueOption{WithID(tickID(s.name, due))})
		if err != nil {
			return err
		}
		args[0], args[1], args[9] = p.id, p.args[1], "1"
	}
	if q.o.events > 0 {
		ks, args = append(ks, q.events), append(args, q.o.events)
	}
	rep, err := q.run.Run(ctx, q.pick(tickOp, tickEvOp), ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return err
	}
	if rep.Status == call.Conflict {
		why, _ := rep.OptStr(0)
		if why == "live" {
			return pkg.Fail(op, q.jobs, ErrDuplicate, fmt.Errorf("schedule %q tick %d: job %q is live", s.name, due, tickID(s.name, due)))
		}
		return nil // claimed by another scheduler, replaced, or not due yet
	}
	return nd
}
