package session

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/sweep"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// EventKind says what happened to a session.
type EventKind string

// The event kinds. Every session has one Created event and, once it has
// ended, exactly one of the other three (its terminal event).
const (
	// Created: Create made the session (Reason "create"), or Renew moved
	// a session to this new ID (Reason "renew").
	Created EventKind = "created"
	// Revoked: Revoke (Reason "revoke"), RevokeAll ("revoke all"),
	// RevokeOthers ("revoke others"), Renew of the old ID ("renew"), or
	// RotateRefresh finding a reused refresh token ("refresh token
	// reused") ended it.
	Revoked EventKind = "revoked"
	// Evicted: Create ended it to keep the user within WithMaxSessions
	// (Reason "max sessions").
	Evicted EventKind = "evicted"
	// Expired: its idle timeout or lifetime passed; At is the deadline
	// when the index recorded one, else when it was noticed.
	Expired EventKind = "expired"
)

// Event is one lifecycle event of a session (WithEvents). It names the
// session by its ID, a digest that cannot authenticate (see Session.ID);
// no handle or token is ever in an event.
type Event struct {
	Kind      EventKind
	UserID    string
	SessionID string
	At        time.Time // server time (Unix ms) of the change
	Reason    string    // see the kinds
	// ID is the event's stream entry ID in the stream of the user's
	// slot: the events of one user are in the order of their IDs.
	ID string
}

// SweepWindow is how long, with WithEvents, a user's index outlives its
// last session, keeping the entries of expired sessions for Sweep to
// announce: 1 hour. Every slot must be swept at least that often, or an
// expiry that no call on the user noticed may go unannounced.
func (s *Store) SweepWindow() time.Duration { return sweepWindow }

// Bounds and defaults of lifecycle events.
const (
	// maxEvents bounds WithEvents: about a million events per slot
	// stream.
	maxEvents = 1 << 20
	// sweepWindow is Store.SweepWindow: 1 hour.
	sweepWindow = time.Hour
	// shards is the number of events streams and sweep schedules, one per
	// cluster slot (keys.SlotCount): Sweep takes shard numbers in
	// [0, keys.SlotCount).
	shards = keys.SlotCount
	// sweepLimit is the most users one schedule visit returns.
	sweepLimit = 256
	// readCount is the most events one Read takes from one slot's stream.
	readCount = 256
)

var (
	//go:embed events_due.lua
	eventsDueSrc string
	//go:embed events_sweep.lua
	eventsSweepSrc string

	eventsDueOp   = pkg.Declare("sweep due", eventsDueSrc, []*keys.Template{dueKey})
	eventsSweepOp = pkg.Declare("sweep", eventsSweepSrc, []*keys.Template{indexKey, eventsKey, dueKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS))
)

// slotKeys returns the events stream and the sweep schedule of slot.
func (s *Store) slotKeys(op string, slot int) (string, string, error) {
	tag := keys.SlotTag(slot)
	ev, err := pkg.Key(op, eventsKey, s.opt.ns, tag)
	if err != nil {
		return "", "", err
	}
	due, err := pkg.Key(op, dueKey, s.opt.ns, tag)
	if err != nil {
		return "", "", err
	}
	return ev, due, nil
}

// evOps maps each operation that takes events keys (declared with
// declare) to its twin declared with them: the same script, whose
// templates name the events stream and the sweep schedule too.
var evOps = map[*call.Op]*call.Op{}

// declare declares an operation on a user's sessions and its twin with
// events (see evOps).
func declare(name, body string, tmpl []*keys.Template, opts ...call.OpOption) *call.Op {
	op := pkg.Declare(name, body, tmpl, opts...)
	evOps[op] = pkg.Declare(name, body, append(tmpl[:len(tmpl):len(tmpl)], eventsKey, dueKey), opts...)
	return op
}

// withEvents returns op, ks and args as they are on a Store without
// events; with events, op's twin and what lib.lua's events takes: the
// events stream and the sweep schedule of idx's slot after ks, the user
// ID, the stream length and the index grace after args.
func (s *Store) withEvents(op *call.Op, idx, userID string, ks []string, args []any) (*call.Op, []string, []any, error) {
	if s.opt.events == 0 {
		return op, ks, args, nil
	}
	ks, args, err := s.evArgs(op.Name(), idx, userID, ks, args)
	return evOps[op], ks, args, err
}

// evArgs appends the events keys and arguments to ks and args.
func (s *Store) evArgs(op, idx, userID string, ks []string, args []any) ([]string, []any, error) {
	ev, due, err := s.slotKeys(op, keys.Slot(idx))
	if err != nil {
		return nil, nil, err
	}
	return append(ks, ev, due), append(args, userID, s.evLen, s.evGrace), nil
}

// Sweep announces the expiries that no call on their user noticed (with
// WithEvents): it visits count sweep schedules starting at shard first
// (wrapping after keys.SlotCount-1), and in each the users due by server TIME (at
// most 256 per shard per visit; the rest wait for the next). For each
// such user one script prunes the index, emitting "expired" for each
// session whose deadline passed, and schedules the user's next visit at
// their first deadline left. It returns how many expiries it announced.
//
// Round trips: one pipeline of one read-only script per shard (split per
// node on a cluster), then, if a user is due, one pipeline of one script
// per due user. Exactly once: every script that prunes an index emits
// the expiries it removes in the same atomic step, so any number of
// instances may sweep concurrently with each other and with every other
// call; a rerun announces nothing twice. Each shard must be swept within
// Store.SweepWindow of an expiry, after which the user's index may expire with
// it unannounced. On a Store without WithEvents there is nothing to
// sweep: it returns 0.
//
// Errors: ErrInvalid for first outside [0, keys.SlotCount) or count outside [1,
// keys.SlotCount], or Redis errors (with the expiries announced so far counted).
func (s *Store) Sweep(ctx context.Context, first, count int) (int, error) {
	const op = "sweep"
	if first < 0 || first >= shards || count < 1 || count > shards {
		return 0, pkg.Invalidf(op, "shards %d+%d not within [0, %d)", first, count, shards)
	}
	if s.opt.events == 0 {
		return 0, nil
	}
	if err := sweep.Load(ctx, s.run, &s.sweepLoaded, eventsDueOp, eventsSweepOp); err != nil {
		return 0, err
	}
	var visits []call.Call
	firstErr := sweep.Due(ctx, s.run, shards, first, count,
		func(slot int) (call.Call, error) {
			_, due, err := s.slotKeys(op, slot)
			return call.Call{Op: eventsDueOp, Keys: []string{due}, Args: []any{sweepLimit}}, err
		},
		sweep.Members,
		func(u string) error {
			idx, err := pkg.Key(op, indexKey, s.opt.ns, u)
			if err != nil {
				return err
			}
			ks, args, err := s.evArgs(op, idx, u, []string{idx}, nil)
			if err != nil {
				return err
			}
			visits = append(visits, call.Call{Op: eventsSweepOp, Keys: ks, Args: args})
			return nil
		})
	n, err := sweep.Count(ctx, s.run, visits)
	if firstErr == nil {
		firstErr = err
	}
	return n, firstErr
}

// RunSweeper runs Sweep over all keys.SlotCount shards in a cycle, batch shards every
// interval, from a random shard so that several instances spread out,
// until ctx is done; it then returns ctx.Err(), wrapped. An expiry no
// call noticed is announced within about one cycle, ceil(keys.SlotCount/batch) x
// every (e.g. batch 1024 every second: 16 s), which must not exceed
// Store.SweepWindow, else ErrInvalid; so must every > 0 and batch in [1,
// keys.SlotCount]. A failed Sweep is passed to onError (if not nil) and the
// sweeper moves on. Any number of instances may run one; each costs
// keys.SlotCount read-only scripts per cycle, most on schedules that do not
// exist.
func (s *Store) RunSweeper(ctx context.Context, every time.Duration, batch int, onError func(error)) error {
	const op = "sweeper"
	return sweep.Run(ctx, pkg, op, shards, every, batch, sweepWindow, s.Sweep, onError)
}

// EventReader reads the lifecycle events of a Store's namespace from the
// events streams of all cluster slots, resumably: its Cursor says where
// it is in each stream. Events are durable: a reader that stops and
// resumes from its cursor misses none, unless a stream was trimmed past
// its position (each keeps about the WithEvents length), which Read then
// reports (ErrEventsTrimmed). The events of
// one user (one slot) arrive in order; those of different slots may
// interleave out of time order (Read sorts one batch by time). It is not
// safe for concurrent use. Reading needs no WithEvents: a reader may run
// on a Store of its own.
type EventReader struct {
	s    *Store
	base string   // the position of every stream not in pos
	pos  []string // per slot, "" for base
}

// NewEventReader returns a reader of the events emitted at or after
// since by the server's clock (a zero since: every event still in the
// streams).
func (s *Store) NewEventReader(since time.Time) *EventReader {
	base := "0-0"
	if !since.IsZero() && since.UnixMilli() > 0 {
		base = strconv.FormatInt(since.UnixMilli()-1, 10) + "-18446744073709551615"
	}
	return &EventReader{s: s, base: base, pos: make([]string, shards)}
}

// ResumeEventReader returns a reader that goes on after cursor, a value
// of EventReader.Cursor. A malformed cursor is ErrInvalid.
func (s *Store) ResumeEventReader(cursor string) (*EventReader, error) {
	const op = "events"
	parts := strings.Split(cursor, ",")
	if !validStreamID(parts[0]) {
		return nil, pkg.Invalidf(op, "malformed cursor")
	}
	r := &EventReader{s: s, base: parts[0], pos: make([]string, shards)}
	for _, p := range parts[1:] {
		slot, id, ok := strings.Cut(p, ":")
		n, err := strconv.Atoi(slot)
		if !ok || err != nil || n < 0 || n >= shards || !validStreamID(id) {
			return nil, pkg.Invalidf(op, "malformed cursor")
		}
		r.pos[n] = id
	}
	return r, nil
}

// validStreamID reports whether id is a stream entry ID ("ms-seq").
func validStreamID(id string) bool {
	_, _, ok := reply.StreamID(id)
	return ok && strings.Contains(id, "-")
}

// Cursor returns the reader's position: pass it to ResumeEventReader to
// go on after the last event Read returned (or Events delivered). Save it
// after handling a batch for at-least-once handling across restarts.
func (r *EventReader) Cursor() string {
	var b strings.Builder
	b.WriteString(r.base)
	for slot, id := range r.pos {
		if id != "" {
			fmt.Fprintf(&b, ",%d:%s", slot, id)
		}
	}
	return b.String()
}

// Read returns the events after the reader's position, at most 256 per
// slot, sorted by time, and moves past them; none is not an error. It
// reads every slot's stream once, without blocking: one XREAD of all the
// streams on a single server, one pipeline of one XREAD per slot on a
// cluster (keys.SlotCount commands, split per node). When it read events of a
// slot after an event it had read there, a second round trip, one
// pipeline of an XRANGE of that event in each such stream, tells whether
// the stream was trimmed past it: an event still there means nothing
// after it was trimmed; one gone means the events read may follow a gap
// (or, when the trim came between the two round trips, may not), which
// is reported, after the events read, as an error matching
// ErrEventsTrimmed naming the stream (one per such stream). An idle Read,
// the common poll, stays one round trip: checking every slot in the
// first would send back an entry per slot. A start the reader did not
// read (the since of NewEventReader, a cursor's base) is not checked: it
// need not be an entry; nor is a stream deleted whole, which returns no
// events. An entry that is not an event is reported as an error matching
// keys.ErrCorrupt naming the stream (the reader moves past it). When a
// round trip fails the reader does not move.
func (r *EventReader) Read(ctx context.Context) ([]Event, error) {
	evs, last, err := r.fetch(ctx)
	for slot, id := range last {
		r.pos[slot] = id
	}
	out := make([]Event, len(evs))
	for i := range evs {
		out[i] = evs[i].Event
	}
	return out, err
}

type slotEvent struct {
	Event
	slot int
}

// slotRead is a stream read, with its slot: a stream's slot is not
// always keys.Slot of its name (hash tags off).
type slotRead struct {
	slot int
	st   redis.XStream
}

// fetch reads the events after the reader's position, without moving
// it; last is the ID of the last entry read from each slot.
func (r *EventReader) fetch(ctx context.Context) (evs []slotEvent, last map[int]string, err error) {
	const op = "events"
	names := make([]string, shards)
	for slot := range shards {
		if names[slot], _, err = r.s.slotKeys(op, slot); err != nil {
			return nil, nil, err
		}
	}
	res, err := r.read(ctx, names)
	if err != nil {
		return nil, nil, err
	}
	err = r.trimmed(ctx, res)
	if err != nil && !errors.Is(err, ErrEventsTrimmed) {
		return nil, nil, err
	}
	last = make(map[int]string)
	for _, x := range res {
		slot, st := x.slot, x.st
		for _, m := range st.Messages {
			last[slot] = m.ID
			e, perr := parseEvent(m.ID, m.Values)
			if perr != nil {
				if !errors.Is(err, keys.ErrCorrupt) {
					err = errors.Join(err, pkg.Fail(op, st.Stream, nil, keys.Corrupt(st.Stream, perr)))
				}
				continue
			}
			evs = append(evs, slotEvent{e, slot})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
	return evs, last, err
}

// at returns the reader's position in slot's stream.
func (r *EventReader) at(slot int) string {
	if id := r.pos[slot]; id != "" {
		return id
	}
	return r.base
}

// read reads every slot's stream (names) after the reader's position
// there, without blocking: one XREAD on a single server, one per slot on
// a cluster.
func (r *EventReader) read(ctx context.Context, names []string) ([]slotRead, error) {
	const op = "events"
	c := r.s.run.Client()
	var res []slotRead
	if _, single := c.(*redis.Client); single {
		streams := make([]string, 2*shards)
		slotOf := make(map[string]int, shards)
		for slot, name := range names {
			streams[slot], streams[shards+slot], slotOf[name] = name, r.at(slot), slot
		}
		v, err := c.XRead(ctx, &redis.XReadArgs{Streams: streams, Count: readCount, Block: -1}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, pkg.Fail(op, "", nil, fmt.Errorf("XREAD of the %d slots' streams: %w", shards, err))
		}
		for _, st := range v {
			res = append(res, slotRead{slotOf[st.Stream], st})
		}
		return res, nil
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.XStreamSliceCmd, shards)
	for slot, name := range names {
		cmds[slot] = pipe.XRead(ctx, &redis.XReadArgs{Streams: []string{name, r.at(slot)}, Count: readCount, Block: -1})
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for slot, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, pkg.Fail(op, names[slot], nil, err)
		}
		for _, st := range v {
			res = append(res, slotRead{slot, st})
		}
	}
	return res, nil
}

// trimmed tells, for each stream of res that the reader had read an
// event of, whether that event is still there, in one pipeline: the
// streams trimmed past it, each an error matching ErrEventsTrimmed
// naming the stream, joined; or the error of the round trip, naming a
// stream it failed on.
func (r *EventReader) trimmed(ctx context.Context, res []slotRead) error {
	const op = "events"
	type check struct {
		x   *slotRead
		cmd *redis.XMessageSliceCmd
	}
	var checks []check
	pipe := r.s.run.Client().Pipeline()
	for i := range res {
		x := &res[i]
		if pos := r.pos[x.slot]; pos != "" && len(x.st.Messages) > 0 {
			checks = append(checks, check{x, pipe.XRangeN(ctx, x.st.Stream, pos, pos, 1)})
		}
	}
	if len(checks) == 0 {
		return nil
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var err error
	for _, c := range checks {
		held, cerr := c.cmd.Result()
		if cerr != nil && !errors.Is(cerr, redis.Nil) {
			return pkg.Fail(op, c.x.st.Stream, nil, cerr)
		}
		if len(held) == 0 {
			err = errors.Join(err, pkg.Fail(op, c.x.st.Stream, ErrEventsTrimmed, fmt.Errorf("resumed after %s, no longer in the stream; read on from %s", r.pos[c.x.slot], c.x.st.Messages[0].ID)))
		}
	}
	return err
}

// Events reads on (Read) every interval until ctx is done and delivers
// the events on a channel, closed then; the reader's Cursor, read after
// the channel is closed, is after the last event delivered. A failed
// Read (an outage, a corrupt entry) is passed to onError (if not nil) and
// reading goes on. Do not use the reader elsewhere until the channel is
// closed.
func (r *EventReader) Events(ctx context.Context, every time.Duration, onError func(error)) <-chan Event {
	out := make(chan Event, readCount)
	go func() {
		defer close(out)
		tick := time.NewTicker(max(every, time.Millisecond))
		defer tick.Stop()
		for {
			evs, last, err := r.fetch(ctx)
			if err != nil && ctx.Err() == nil && onError != nil {
				onError(err)
			}
			for _, e := range evs {
				select {
				case out <- e.Event:
					r.pos[e.slot] = e.ID
				case <-ctx.Done():
					return
				}
			}
			for slot, id := range last {
				r.pos[slot] = id
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// parseEvent decodes one stream entry.
func parseEvent(id string, f map[string]any) (Event, error) {
	str := func(name string) string { v, _ := f[name].(string); return v }
	e := Event{Kind: EventKind(str("kind")), UserID: str("user_id"), SessionID: str("session_id"), Reason: str("reason"), ID: id}
	switch e.Kind {
	case Created, Revoked, Evicted, Expired:
	default:
		return Event{}, fmt.Errorf("entry %s: kind %q is not an event kind", id, e.Kind)
	}
	if e.UserID == "" || !validID(e.SessionID) {
		return Event{}, fmt.Errorf("entry %s: no user ID or session ID", id)
	}
	at, err := strconv.ParseInt(str("at"), 10, 64)
	if err != nil || at < 0 {
		return Event{}, fmt.Errorf("entry %s: at is not Unix ms", id)
	}
	e.At = time.UnixMilli(at).UTC()
	return e, nil
}
