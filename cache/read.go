package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// readOut is what a read found: state is "fresh", "stale", "neg",
// "pass", "miss", or "bad" (KEYS[bad] holds data this package did not
// write: the caller reports it and reloads).
type readOut struct {
	state        string
	value        []byte
	fresh, delta time.Duration
	bad          int64
	why          string
}

func (r readOut) badKey(ref Ref) string {
	if r.bad == 2 {
		return ref.meta
	}
	return ref.value
}

// maxDelta bounds a stored load duration (an entry's XFetch delta).
const maxDelta = 86_400_000

// plainRead is the first look of a fetch at one entry, in plain commands
// that cost Redis a fraction of a script: GET and PTTL of the value, and
// HGET of the metadata's "hint" field ("{grace_ms}:{delta_ms}" for a
// value, "neg" or "pass" for a marker). A value's freshness is its PTTL
// less its grace, so no clock but the server's is read; a marker is there
// while its metadata is (the write gives the metadata the marker's life
// as its TTL). The three go out in one pipeline (shared with concurrent
// reads and scripts); they are not one atomic step, and decide treats
// every interleaving with a write as either what the entry was or a miss
// (see rawEntry.decide).
type plainRead struct {
	args [7]any
	get  *redis.StringCmd
	vttl *redis.IntCmd
	hint *redis.StringCmd
	cmds [3]redis.Cmder
}

// plainReads recycles plainReads whose commands have their replies.
var plainReads = sync.Pool{New: func() any { return new(plainRead) }}

func newPlainRead(ctx context.Context, ref Ref) *plainRead {
	r := plainReads.Get().(*plainRead)
	var v, m any = ref.value, ref.meta
	r.args = [7]any{"get", v, "pttl", v, "hget", m, "hint"}
	r.get = redis.NewStringCmd(ctx, r.args[0:2:2]...)
	r.vttl = redis.NewIntCmd(ctx, r.args[2:4:4]...)
	r.hint = redis.NewStringCmd(ctx, r.args[4:7:7]...)
	r.cmds = [3]redis.Cmder{r.get, r.vttl, r.hint}
	return r
}

// read looks at ref: one round trip, shared with concurrent reads and
// scripts (Runner.Send) when pipelining is on. An entry whose metadata
// only the read script knows (an older version's), and a read that failed
// (a slot migration, a failover, a network error: the Runner retries the
// first two until the deadline), go through the read script: a second
// round trip. A key of another type is a "bad" answer, not an error: the
// caller heals it.
func (s *Store) read(ctx context.Context, ref Ref) (readOut, error) {
	r := newPlainRead(ctx, ref)
	if err := s.run.Send(ctx, ref.value, r.cmds[:]...); err != nil {
		return readOut{}, pkg.Fail("get", ref.value, nil, err) // ctx ended; r may be in flight
	}
	out, ok := r.decide(s.maxArg)
	*r = plainRead{}
	plainReads.Put(r)
	if ok {
		return out, nil
	}
	return s.readScript(ctx, ref)
}

// readMany reads refs in one pipeline (split per node on a cluster), then
// those that need the read script (see read) in a second one.
func (s *Store) readMany(ctx context.Context, refs []Ref) ([]readOut, error) {
	reads := make([]*plainRead, len(refs))
	pipe := s.rdb.Pipeline()
	for i, ref := range refs {
		reads[i] = newPlainRead(ctx, ref)
		for _, c := range reads[i].cmds {
			_ = pipe.Process(ctx, c)
		}
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	out := make([]readOut, len(refs))
	var old []call.Call
	var oldIdx []int
	for i, r := range reads {
		o, ok := r.decide(s.maxArg)
		if !ok {
			old = append(old, call.Call{Op: readOp, Keys: []string{refs[i].value, refs[i].meta}})
			oldIdx = append(oldIdx, i)
		}
		out[i] = o
	}
	if len(old) > 0 {
		reps, errs := s.run.RunMany(ctx, old)
		for j, rep := range reps {
			i := oldIdx[j]
			o, err := s.scriptReply(rep, errs[j], refs[i])
			if err != nil {
				return nil, err
			}
			out[i] = o
		}
	}
	return out, nil
}

// decide turns the three replies into the entry's state; false means the
// read script must settle it (a command failed, or a value's metadata has
// no hint).
func (r *plainRead) decide(maxArg int64) (readOut, bool) {
	var e rawEntry
	var verr, herr error
	e.value, verr = r.get.Bytes()
	e.hint, herr = r.hint.Result()
	e.hasV, e.hasHint = verr == nil, herr == nil
	switch {
	case verr != nil && verr != redis.Nil && wrongType(verr):
		return readOut{state: "bad", bad: 1, why: "holds another type than a string"}, true
	case herr != nil && herr != redis.Nil && wrongType(herr):
		return readOut{state: "bad", bad: 2, why: "holds another type than a hash"}, true
	case verr != nil && verr != redis.Nil, herr != nil && herr != redis.Nil:
		return readOut{}, false
	}
	var err error
	if e.vttl, err = r.vttl.Result(); err != nil {
		return readOut{}, false
	}
	return e.decide(maxArg)
}

// rawEntry is what a read returned for one entry: the plain reads'
// three replies, and what the read script adds (the metadata's PTTL and
// its fields as older versions wrote them).
type rawEntry struct {
	value         []byte
	hasV, hasHint bool
	vttl          int64 // PTTL: -2 for a missing key, -1 for one without a TTL
	hint          string
	// Read by the read script only:
	script                   bool
	mttl                     int64
	freshUntil, delta, state string
	now                      int64
}

// decide turns what was read into the entry's state. A value's freshness
// is its PTTL less the grace its hint records; a marker is there while
// its metadata is (the read script also checks the metadata's PTTL
// against the longest freshness). The plain reads are not one atomic
// step: a write may land between them, and each such interleaving gives
// what the entry was at the GET, or a miss (which the lease script then
// settles atomically), never a false report: a value gone by its PTTL,
// or whose hint names a marker, is a miss. A value read with a newer
// write's PTTL or hint is served with that write's freshness. A value
// whose metadata has no hint needs the read script (false), which reads
// metadata as older versions wrote it, and tells a value without
// metadata (another application's, with the seed's layout) by the
// metadata's PTTL.
func (e *rawEntry) decide(maxArg int64) (readOut, bool) {
	bad := func(i int64, why string) (readOut, bool) { return readOut{state: "bad", bad: i, why: why}, true }
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	if !e.hasV {
		if (e.hint == "neg" || e.hint == "pass") && !e.script {
			return readOut{state: e.hint}, true
		}
		if (e.hint == "neg" || e.hint == "pass") && e.mttl > 0 && e.mttl <= maxArg {
			return readOut{state: e.hint, fresh: ms(e.mttl)}, true
		}
		if !e.hasHint && e.script && (e.state == "neg" || e.state == "pass") {
			if fu, err := strconv.ParseInt(e.freshUntil, 10, 64); err == nil && fu > e.now && fu-e.now <= maxArg {
				return readOut{state: e.state, fresh: ms(fu - e.now)}, true
			}
		}
		return readOut{state: "miss"}, true
	}
	switch {
	case e.vttl == -2:
		return readOut{state: "miss"}, true // gone since the GET
	case e.vttl < 0:
		return bad(1, "value without a TTL")
	case !e.hasHint && !e.script:
		return readOut{}, false
	case !e.hasHint && (e.mttl == -2 || e.freshUntil == ""):
		// No metadata (or only a lease): a value another application
		// wrote with the seed's layout, or whose metadata was evicted,
		// fresh for its TTL.
		return readOut{state: "fresh", value: e.value, fresh: ms(e.vttl)}, true
	case !e.hasHint:
		return e.decideOlder(maxArg), true
	case e.hint == "neg" || e.hint == "pass":
		return readOut{state: "miss"}, true // replaced by a marker since the GET
	}
	g, d, ok := strings.Cut(e.hint, ":")
	grace, gerr := strconv.ParseInt(g, 10, 64)
	delta, derr := strconv.ParseInt(d, 10, 64)
	if !ok || gerr != nil || derr != nil || grace < 0 || grace > maxArg || delta < 0 || delta > maxDelta {
		return bad(2, fmt.Sprintf("hint %.40q out of range", e.hint))
	}
	fresh := e.vttl - grace
	if fresh > maxArg {
		return bad(2, "freshness beyond the longest TTL")
	}
	out := readOut{state: "fresh", value: e.value, fresh: ms(fresh), delta: ms(delta)}
	if fresh <= 0 {
		out.state = "stale"
	}
	return out, true
}

// decideOlder reads metadata as older versions wrote it: freshness until
// fresh_until_ms (server time), delta_ms.
func (e *rawEntry) decideOlder(maxArg int64) readOut {
	bad := func(i int64, why string) readOut { return readOut{state: "bad", bad: i, why: why} }
	delta := int64(0)
	if e.delta != "" {
		var derr error
		if delta, derr = strconv.ParseInt(e.delta, 10, 64); derr != nil || delta < 0 || delta > maxDelta {
			return bad(2, "delta_ms out of range")
		}
	}
	fu, ferr := strconv.ParseInt(e.freshUntil, 10, 64)
	if ferr != nil || fu < 0 || fu-e.now > maxArg {
		return bad(2, "fresh_until_ms out of range")
	}
	out := readOut{state: "fresh", value: e.value, fresh: time.Duration(fu-e.now) * time.Millisecond, delta: time.Duration(delta) * time.Millisecond}
	if fu <= e.now {
		out.state = "stale"
	}
	return out
}

// wrongType reports a WRONGTYPE reply (miniredis puts it inside its own
// message).
func wrongType(err error) bool { return strings.Contains(err.Error(), "WRONGTYPE") }

// readScript runs the read script, which reads metadata in any layout
// this package wrote (fresh_until_ms with the server's clock), through
// the Runner (which retries slot migrations and failovers).
func (s *Store) readScript(ctx context.Context, ref Ref) (readOut, error) {
	rep, err := s.run.Run(ctx, readOp, []string{ref.value, ref.meta})
	return s.scriptReply(rep, err, ref)
}

// scriptReply decodes the read script's reply and decides the entry's
// state as decide does.
func (s *Store) scriptReply(rep call.Reply, err error, ref Ref) (readOut, error) {
	if err != nil {
		var ce *keys.CorruptError
		if errors.As(err, &ce) && (ce.Key == ref.value || ce.Key == ref.meta) {
			i := int64(1)
			if ce.Key == ref.meta {
				i = 2
			}
			return readOut{state: "bad", bad: i, why: ce.Err.Error()}, nil
		}
		return readOut{}, err
	}
	e := rawEntry{script: true}
	var v string
	v, e.hasV = rep.OptStr(0)
	e.value = []byte(v)
	e.vttl = rep.Int(1)
	e.hint, e.hasHint = rep.OptStr(2)
	e.mttl = rep.Int(3)
	e.freshUntil, _ = rep.OptStr(4)
	e.delta, _ = rep.OptStr(5)
	e.state, _ = rep.OptStr(6)
	e.now = rep.Int(7)
	if err := rep.Err(); err != nil {
		return readOut{}, err
	}
	out, _ := e.decide(s.maxArg)
	return out, nil
}
