package chat

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Assignment is where a conversation stands after a routing call.
type Assignment struct {
	Conversation string
	// Admin is the admin the conversation is assigned to now, or "" when
	// it waits in the backlog.
	Admin string
	// Previous is the admin it was assigned to before the call ("" for
	// none); Open leaves it empty.
	Previous string
	// Opened reports, from Open, whether this request opened the
	// conversation (false: it was open already).
	Opened bool
}

// Open opens conversation id with priority p ("" means Normal) in the
// backlog and hands the backlog out, in one script (one round trip): the
// conversation is assigned at once if an online admin has room and no
// more urgent or older conversation waits before it. Opening a
// conversation that is open already changes nothing and reports where it
// stands (Opened false). A replay of the request reports its first
// outcome.
//
// Every routing call (Open, Assign, Transfer, Unassign, Resolve,
// Reconcile, AddAdmin, RemoveAdmin) first drops expired conversations and
// requeues the conversations of admins whose availability is offline or
// expired, and ends by handing the backlog out, most urgent and oldest
// first, to online admins under capacity, as the Chat's Strategy says.
//
// Errors: ErrInvalid for an empty or oversize ID or an unknown priority,
// keys.ErrCorrupt naming the key for data this package did not write.
func (c *Chat) Open(ctx context.Context, id string, p Priority) (Assignment, error) {
	const op = "open"
	band, err := checkPriority(op, p)
	if err != nil {
		return Assignment{}, err
	}
	rep, err := c.onConversation(ctx, openOp, op, id, nil, band)
	if err != nil {
		return Assignment{}, err
	}
	a := Assignment{Conversation: id, Admin: rep.Str(0), Opened: rep.Int(1) == 1}
	return a, rep.Err()
}

// Assign assigns conversation id to admin, from the backlog or from
// another admin (an explicit assignment), in one script. It fails with
// ErrNotFound when the conversation is not open, ErrUnknownAdmin when the
// admin is not in the roster, ErrUnavailable when their availability is
// not online, ErrFull when they are at capacity; assigning it to the
// admin who has it changes nothing. The previous admin's freed place goes
// to the backlog. A replay reports the first outcome.
func (c *Chat) Assign(ctx context.Context, id, admin string) (Assignment, error) {
	return c.move(ctx, "assign", id, admin, false, "")
}

// Transfer moves conversation id from admin from to admin to, as Assign,
// but only while from holds it: otherwise ErrNotAssigned, and nothing
// changes.
func (c *Chat) Transfer(ctx context.Context, id, from, to string) (Assignment, error) {
	if _, err := c.adminKeys("transfer", from); err != nil {
		return Assignment{}, err
	}
	return c.move(ctx, "transfer", id, to, true, from)
}

func (c *Chat) move(ctx context.Context, op, id, admin string, check bool, from string) (Assignment, error) {
	q, err := c.adminKeys(op, admin)
	if err != nil {
		return Assignment{}, err
	}
	flag, reason := "0", "explicit"
	if check {
		flag, reason = "1", "transfer"
	}
	rep, err := c.onConversation(ctx, moveOp, op, id, nil, admin, flag, from, reason)
	if err != nil {
		return Assignment{}, err
	}
	if rep.Status == call.Limit {
		return Assignment{}, pkg.Fail(op, q[1], ErrFull, nil)
	}
	if rep.Status == call.Conflict {
		switch why := rep.Str(0); why {
		case "unknown":
			return Assignment{}, pkg.Fail(op, c.global[4], ErrUnknownAdmin, nil)
		case "unavailable":
			return Assignment{}, pkg.Fail(op, q[0], ErrUnavailable, nil)
		case "assigned":
			return Assignment{Conversation: id, Admin: rep.Str(1)}, pkg.Fail(op, c.global[0], ErrNotAssigned, nil)
		}
		return Assignment{}, pkg.Fail(op, c.global[0], nil, rep.Err())
	}
	a := Assignment{Conversation: id, Admin: rep.Str(0), Previous: rep.Str(1)}
	return a, rep.Err()
}

// Unassign gives conversation id back to the backlog, at its place by
// priority and age, and hands the backlog out: another admin with room
// takes it at once (never the one it left, in this call). It reports the
// admin it went to ("" when it waits) and the one it left ("" when it was
// not assigned). ErrNotFound when the conversation is not open. A replay
// reports the first outcome.
func (c *Chat) Unassign(ctx context.Context, id string) (Assignment, error) {
	const op = "unassign"
	rep, err := c.onConversation(ctx, unassignOp, op, id, nil)
	if err != nil {
		return Assignment{}, err
	}
	a := Assignment{Conversation: id, Admin: rep.Str(0), Previous: rep.Str(1)}
	return a, rep.Err()
}

// Resolve closes conversation id: it leaves its admin (whose
// resolved_today counts it) and every queue, its cached messages stay
// until their TTL, and the backlog is handed out. It returns the admin it
// was assigned to ("" for none). ErrNotFound when the conversation is not
// open. A replay reports the first outcome.
func (c *Chat) Resolve(ctx context.Context, id string) (string, error) {
	const op = "resolve"
	rep, err := c.onConversation(ctx, resolveOp, op, id, nil)
	if err != nil {
		return "", err
	}
	admin := rep.Str(0)
	return admin, rep.Err()
}

// SetPriority changes conversation id's priority; its places in the
// backlog and the unread queue keep their age. It returns the previous
// priority. ErrNotFound when the conversation is not open.
func (c *Chat) SetPriority(ctx context.Context, id string, p Priority) (Priority, error) {
	const op = "set priority"
	band, err := checkPriority(op, p)
	if err != nil {
		return "", err
	}
	rep, err := c.onConversation(ctx, priorityOp, op, id, nil, band)
	if err != nil {
		return "", err
	}
	prev := rep.Int(0)
	if err := rep.Err(); err != nil {
		return "", err
	}
	if prev < 0 || prev > 3 {
		return "", pkg.Fail(op, c.global[0], nil, keys.Corrupt(c.global[0], errBadState))
	}
	return bands[prev], nil
}

// Conversation is one open conversation as Chat.Conversation reads it.
type Conversation struct {
	ID       string
	Admin    string // "" while in the backlog
	Priority Priority
	// OpenedAt is when it entered the backlog (server time).
	OpenedAt time.Time
	// LastActivity is its last message (or opening): it expires
	// the conversation TTL after it.
	LastActivity time.Time
	// Unread reports whether it is in the unread queue, since UnreadSince.
	Unread      bool
	UnreadSince time.Time
	// AwaitingReply is when the oldest user message no admin has answered
	// arrived; zero when none waits.
	AwaitingReply time.Time
}

// Conversation returns conversation id's state (one read-only script).
// ErrNotFound when it is not open (never opened, resolved or expired).
func (c *Chat) Conversation(ctx context.Context, id string) (Conversation, error) {
	const op = "conversation"
	if _, err := c.convKey(op, requestsKey, id); err != nil {
		return Conversation{}, err
	}
	rep, err := c.run.Run(ctx, conversationOp, c.global[:3], id)
	if err != nil {
		return Conversation{}, err
	}
	st, hasState := rep.OptStr(0)
	act, hasAct := rep.OptStr(1)
	unread, isUnread := rep.OptStr(2)
	now := rep.Int(3)
	if err := rep.Err(); err != nil {
		return Conversation{}, err
	}
	out := Conversation{ID: id}
	if !hasState {
		return out, pkg.Fail(op, c.global[0], ErrNotFound, nil)
	}
	s, ok := parseState(st, now)
	if !ok {
		return out, pkg.Fail(op, c.global[0], nil, keys.Corrupt(c.global[0], errBadState))
	}
	t, err := strconv.ParseInt(act, 10, 64)
	if !hasAct || err != nil || t < 0 || t > now+unit.MsCeil(maxSkew) {
		if hasAct {
			return out, pkg.Fail(op, c.global[1], nil, keys.Corrupt(c.global[1], errBadTime))
		}
		return out, pkg.Fail(op, c.global[0], ErrNotFound, nil)
	}
	if t <= now-unit.MsCeil(c.opt.convTTL) {
		return out, pkg.Fail(op, c.global[0], ErrNotFound, nil)
	}
	out.Admin, out.Priority, out.LastActivity = s.admin, bands[s.band], fromMs(t)
	out.OpenedAt = fromMs(s.stamp / stampsPerMs)
	if s.waiting > 0 {
		out.AwaitingReply = fromMs(s.waiting)
	}
	if isUnread {
		f, err := strconv.ParseFloat(unread, 64)
		_, since, ok := decodeScore(f)
		if err != nil || !ok {
			return out, pkg.Fail(op, c.global[2], nil, keys.Corrupt(c.global[2], errBadScore))
		}
		out.Unread, out.UnreadSince = true, since
	}
	return out, nil
}

// state is a conversation's field in chat:{tag}:conversations:state.
type state struct {
	band    int
	stamp   int64
	waiting int64
	admin   string
}

// parseState parses "band stamp waiting admin" as lib.lua writes it.
func parseState(v string, now int64) (state, bool) {
	f := strings.SplitN(v, " ", 4)
	if len(f) != 4 || len(f[0]) != 1 || f[0][0] < '0' || f[0][0] > '3' {
		return state{}, false
	}
	stamp, err1 := strconv.ParseInt(f[1], 10, 64)
	wait, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || stamp < 1 || stamp >= bandSize || wait < 0 || wait > now+unit.MsCeil(maxSkew) {
		return state{}, false
	}
	return state{band: int(f[0][0] - '0'), stamp: stamp, waiting: wait, admin: f[3]}, true
}
