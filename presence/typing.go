package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed typing_start.lua
	typingStartLua string
	//go:embed typing_stop.lua
	typingStopLua string
	//go:embed typers.lua
	typersLua string

	typingStartOp = pkg.Declare("start typing", typingStartLua,
		[]*keys.Template{typingKey, typersKey, throttleKey, typingRequestsKey}, call.Uses(libLua, call.Batched, call.JSONStr), call.Shared())
	typingStopOp = pkg.Declare("stop typing", typingStopLua,
		[]*keys.Template{typingKey, typersKey, typingRequestsKey}, call.Uses(libLua, call.Batched, call.JSONStr), call.Shared())
	typersOp = pkg.Declare("typers", typersLua, []*keys.Template{typersKey}, call.Shared())
)

// Typing records "user is typing" indicators per conversation: one JSON
// value per user and conversation, expiring after the profile's TypingTTL,
// throttled across app instances, and listed without KEYS. It is safe for
// concurrent use; create one per process and namespace.
//
// A typing value this package did not write (a bare SET around it) is
// replaced by Start and deleted by Stop; the index and the throttle marker
// are checked (see Typers, Start). With WithOtherWriters, Typers reads the
// values themselves, so that another writer's appear (see Typers).
type Typing struct {
	run *call.Runner
	opt options
}

// Typing returns the tracker's Typing, configured by its options (the
// namespace, the profile's TypingTTL and TypingThrottle, and
// WithPipelining: it has round trips in flight of its own). Every call
// returns the same one.
func (t *Tracker) Typing() *Typing { return t.typing }

// Typer is one typing indicator.
type Typer struct {
	UserID   string    // "userId"
	Username string    // "username"
	At       time.Time // "timestamp": when Start wrote it
}

type typerWire struct {
	UserID   *string `json:"userId"`
	Username string  `json:"username"`
	At       *int64  `json:"timestamp"`
}

func (t *Typing) keysOf(op, conversation, user string) (typing, typers, throttle, replay string, err error) {
	if typing, err = pkg.Key(op, typingKey, t.opt.ns, conversation, user); err != nil {
		return
	}
	if typers, err = pkg.Key(op, typersKey, t.opt.ns, conversation); err != nil {
		return
	}
	th, rq := throttleKey, typingRequestsKey
	if t.opt.others {
		th, rq = otherThrottleKey, otherTypingRequestsKey
	}
	if throttle, err = pkg.Key(op, th, t.opt.ns, conversation, user); err != nil {
		return
	}
	replay, err = pkg.Key(op, rq, t.opt.ns, conversation, user)
	return
}

// Start writes user's typing indicator in conversation (the JSON
// {"userId","username","timestamp"} at typing:{conversation_id}:{user_id},
// for the profile's TypingTTL) and indexes it for Typers, in one atomic
// script (one round trip). It is throttled inside Redis to one accepted
// write per TypingThrottle per user per conversation, so the throttle holds
// across app instances; it returns false, and writes nothing, when
// throttled. A Stop does not reset the throttle. A replay of the request
// reports the first run's answer: within TypingThrottle with a throttle
// (the throttle marker holds its request ID), within the replay window (3 min) without
// one. Errors: ErrInvalid for an empty or
// oversize ID (also keys.ErrInvalid) or a username over 256
// bytes or not UTF-8; keys.ErrCorrupt for a throttle marker without a TTL
// within the throttle interval (it would throttle the user for ever).
func (t *Typing) Start(ctx context.Context, conversation, user, username string) (bool, error) {
	const op = "start typing"
	typing, typers, throttle, replay, err := t.keysOf(op, conversation, user)
	if err != nil {
		return false, err
	}
	if err := checkText(op, "username", username, maxUsernameLen, false); err != nil {
		return false, err
	}
	p := t.opt.profile
	rep, err := t.run.Run(ctx, typingStartOp, []string{typing, typers, throttle, replay},
		user, username, unit.MsCeil(p.TypingTTL), unit.MsCeil(p.TypingThrottle), newRequestID(), skewMs, replayMs)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	return n == 1, rep.Err()
}

// Stop clears user's typing indicator in conversation, in one atomic
// script (one round trip). It reports whether there was one. A replay of
// the request within the replay window (3 min) reports the first run's answer and
// clears nothing a later Start wrote.
func (t *Typing) Stop(ctx context.Context, conversation, user string) (bool, error) {
	const op = "stop typing"
	typing, typers, _, replay, err := t.keysOf(op, conversation, user)
	if err != nil {
		return false, err
	}
	rep, err := t.run.Run(ctx, typingStopOp, []string{typing, typers, replay}, newRequestID(), replayMs)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	return n == 1, rep.Err()
}

// Typers returns who is typing in conversation now, from the
// conversation's index (one read-only script, one round trip; no KEYS).
// Indicators written by Start appear until Stop or TypingTTL, one per user
// (the latest); indicators written around this package (a bare SETEX) are
// not indexed, and one deleted around it (a bare DEL) stays listed until
// its TypingTTL. Order: oldest expiry first. An index entry this package
// did not write (not the typing JSON, or expiring later than any Start
// sets) gives an error matching keys.ErrCorrupt naming the index key.
//
// With WithOtherWriters it reads the indicators themselves instead, as the
// chat app's own code does, so that one another writer set (SETEX) is
// listed and one it deleted (DEL) is not: it SCANs for the conversation's
// typing keys (MATCH typing:<conversation_id>:*, 1,000 keys a round trip)
// and reads them with one MGET. That costs one round trip per 1,000 keys
// in the database (on a cluster, on each master), the server work of the
// chat app's own KEYS without blocking the server; use it while another
// writer shares the keys. Order: oldest timestamp first. A value that is
// not the typing JSON gives an error matching keys.ErrCorrupt naming its
// key.
func (t *Typing) Typers(ctx context.Context, conversation string) ([]Typer, error) {
	const op = "typers"
	k, err := pkg.Key(op, typersKey, t.opt.ns, conversation)
	if err != nil {
		return nil, err
	}
	if t.opt.others {
		return t.scanTypers(ctx, op, conversation)
	}
	rep, err := t.run.Run(ctx, typersOp, []string{k}, unit.MsCeil(t.opt.profile.TypingTTL), skewMs)
	if err != nil {
		return nil, err
	}
	vals := rep.Strs(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	all := make([]Typer, 0, len(vals))
	last := make(map[string]int, len(vals))
	for _, s := range vals {
		ty, err := decodeTyper(k, s)
		if err != nil {
			return nil, pkg.Fail(op, k, nil, err)
		}
		last[ty.UserID] = len(all)
		all = append(all, ty)
	}
	// A user has one entry unless their typing key was deleted or evicted
	// around Start/Stop (a bare DEL, an LRU eviction); the values come
	// oldest expiry first, so each user's last one is the latest.
	out := all[:0]
	for i, ty := range all {
		if last[ty.UserID] == i {
			out = append(out, ty)
		}
	}
	return out, nil
}

func decodeTyper(key, s string) (Typer, error) {
	var w typerWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Typer{}, keys.Corrupt(key, err)
	}
	switch {
	case w.UserID == nil || *w.UserID == "":
		return Typer{}, keys.Corrupt(key, errors.New("typing value without userId"))
	case w.At == nil || *w.At < 0 || *w.At > latest(0):
		return Typer{}, keys.Corrupt(key, errors.New("typing value without a valid timestamp"))
	}
	return Typer{UserID: *w.UserID, Username: w.Username, At: fromMs(*w.At)}, nil
}

// scanTypers is Typers with WithOtherWriters: the conversation's typing
// keys found by SCAN (checked with Parse, since '*' also matches ':'),
// then read with one MGET (they share the conversation's slot).
func (t *Typing) scanTypers(ctx context.Context, op, conversation string) ([]Typer, error) {
	match := typingKey.Match(t.opt.ns, map[string]string{"conversation_id": conversation})
	var mu sync.Mutex
	seen := map[string]bool{}
	var ks []string
	err := keys.ForEachNode(ctx, t.run.Client(), func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, match, scanCount).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			if args, err := typingKey.Parse(t.opt.ns, k); err != nil || args[0] != conversation {
				continue
			}
			mu.Lock()
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
			mu.Unlock()
		}
		return it.Err()
	})
	if err != nil {
		return nil, pkg.Wrap(ctx, op, match, err)
	}
	if len(ks) == 0 {
		return []Typer{}, nil
	}
	vals, err := t.run.Client().MGet(ctx, ks...).Result()
	if err != nil {
		return nil, pkg.Wrap(ctx, op, ks[0], err)
	}
	out := make([]Typer, 0, len(ks))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // expired (or deleted) since the SCAN
		}
		ty, err := decodeTyper(ks[i], s)
		if err != nil {
			return nil, pkg.Fail(op, ks[i], nil, err)
		}
		out = append(out, ty)
	}
	slices.SortFunc(out, func(a, b Typer) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.UserID, b.UserID)
	})
	return out, nil
}

// scanCount is the COUNT of Typers' SCAN with WithOtherWriters.
const scanCount = 1000
