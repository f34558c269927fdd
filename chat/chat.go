package chat

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// Chat routes one deployment's support conversations to its admins and
// caches their messages. It is safe for concurrent use; create one per
// process and deployment (tag).
type Chat struct {
	run    *call.Runner
	opt    options
	av     *presence.Availability
	ty     *presence.Typing
	global []string // state, active, unread, backlog, roster, cursor
	chans  [4]string
	head   []any // ARGV[2..7]: conversation TTL, strategy, the four channels
	limits []any // ARGV[9..16] (limits)

	mu     sync.Mutex
	roster *roster
}

// roster is the deployment's admins as this client last saw them.
type roster struct {
	ids   []string // sorted
	quads []string // per admin: availability, assignments, stats, dashboard
}

// New returns a Chat over rdb. It fails with ErrInvalid on a nil client,
// a go-redis client without ContextTimeoutEnabled (which would ignore the
// deadlines of every call), or a bad option; it does not contact Redis.
func New(rdb redis.UniversalClient, opts ...Option) (*Chat, error) {
	return makeChat("new", rdb, opts)
}

// makeChat is New, for the constructor op (New, NewInspector).
func makeChat(op string, rdb redis.UniversalClient, opts []Option) (*Chat, error) {
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	popts := append(slices.Clone(o.presence), presence.WithNamespace(o.ns), presence.WithAvailabilityTag(o.tag))
	if o.noTag {
		switch rdb.(type) {
		case *redis.ClusterClient, *redis.Ring:
			return nil, pkg.Invalidf(op, "WithoutTag is for a standalone server: the backend's chat keys have no common hash tag, so one script's keys span many slots")
		}
		popts = append(slices.Clone(o.presence), presence.WithNamespace(o.ns), presence.WithOtherWriters())
	}
	tr, err := presence.New(rdb, popts...)
	if err != nil {
		return nil, pkg.Invalid(op, err)
	}
	c := &Chat{run: call.NewRunner(rdb, o.lanes), opt: o, av: tr.Availability(), ty: tr.Typing(), roster: &roster{}}
	for _, t := range []*keys.Template{stateKey, activeKey, unreadKey, backlogKey, rosterKey, cursorKey} {
		k, err := o.key(op, t)
		if err != nil {
			return nil, err
		}
		c.global = append(c.global, k)
	}
	for i, t := range []*keys.Template{messageChannel, assignedChannel, resolvedChannel, readChannel} {
		if c.chans[i], err = o.key(op, t); err != nil {
			return nil, err
		}
	}
	strategy := "least"
	if o.strategy == RoundRobin {
		strategy = "rr"
	}
	c.head = []any{unit.MsCeil(o.convTTL), strategy, c.chans[0], c.chans[1], c.chans[2], c.chans[3]}
	c.limits = limits(c.av.TTL(), o.noTag)
	return c, nil
}

// Availability returns the presence Availability this Chat reads admins'
// availability from: the library's one home for it, under the Chat's
// namespace and tag (admin:{tag}:{admin_id}:presence). Admins go online,
// away, busy or offline with its Set.
func (c *Chat) Availability() *presence.Availability { return c.av }

// Typing returns the presence Typing for this Chat's conversations
// (typing:{conversation_id}:{user_id}, 3 s, throttled in Redis): the
// library's one implementation of typing indicators, under the Chat's
// namespace and WithPresence's profile.
func (c *Chat) Typing() *presence.Typing { return c.ty }

func fromMs(n int64) time.Time { return time.UnixMilli(n) }

// newRequestID returns 16 random hex digits: the identity of one request
// across go-redis's resends.
func newRequestID() string {
	const digits = "0123456789abcdef"
	var b [16]byte
	x := rand.Uint64()
	for i := range b {
		b[i] = digits[x&15]
		x >>= 4
	}
	return string(b[:])
}

// checkID rejects an ID over maxIDLen bytes; the key templates check the
// rest (empty, not UTF-8), so that a bad ID matches keys.ErrInvalid
// too.
func checkID(op, what, id string) error {
	if len(id) > maxIDLen {
		return pkg.Invalidf(op, "%s of %d bytes: want at most %d", what, len(id), maxIDLen)
	}
	return nil
}

// convKey returns conversation id's key of template t.
func (c *Chat) convKey(op string, t *keys.Template, id string) (string, error) {
	if err := checkID(op, "conversation ID", id); err != nil {
		return "", err
	}
	return c.opt.key(op, t, id)
}

// adminKeys returns admin id's four routing keys: availability,
// assignments, stats, dashboard.
func (c *Chat) adminKeys(op, id string) ([]string, error) {
	if err := checkID(op, "admin ID", id); err != nil {
		return nil, err
	}
	out := make([]string, 4)
	for i, t := range []*keys.Template{assignmentsKey, statsKey, dashboardKey} {
		k, err := c.opt.key(op, t, id)
		if err != nil {
			return nil, err
		}
		out[i+1] = k
	}
	av, err := c.av.Key(id)
	if err != nil {
		return nil, pkg.Invalid(op, err)
	}
	out[0] = av
	return out, nil
}

// newRoster builds the roster of ids, naming the roster key when an ID
// read from it cannot be an admin.
func (c *Chat) newRoster(op string, ids []string) (*roster, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	r := &roster{ids: ids, quads: make([]string, 0, 4*len(ids))}
	for _, id := range ids {
		q, err := c.adminKeys(op, id)
		if err != nil {
			return nil, pkg.Fail(op, c.global[4], nil, keys.Corrupt(c.global[4], fmt.Errorf("admin ID %.64q: %w", id, err)))
		}
		r.quads = append(r.quads, q...)
	}
	return r, nil
}

func (c *Chat) current() *roster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roster
}

func (c *Chat) setRoster(r *roster) {
	c.mu.Lock()
	c.roster = r
	c.mu.Unlock()
}

// onConversation runs a routing script about conversation id: its
// request memo, then extra keys; id, then args; a request ID drawn now, identical on
// go-redis's resends.
func (c *Chat) onConversation(ctx context.Context, op *call.Op, name, id string, extra []string, args ...any) (call.Reply, error) {
	rk, err := c.convKey(name, requestsKey, id)
	if err != nil {
		return call.Reply{}, err
	}
	return c.route(ctx, op, name, newRequestID(), "", append([]string{rk}, extra...), append([]any{id}, args...)...)
}

// rosterRetries bounds how many times a routing call reloads a roster that
// changed under it before giving up.
const rosterRetries = 4

// errRosterChurn is the cause of a routing call that met a different
// roster rosterRetries times in a row.
var errRosterChurn = errors.New("the roster changed on every attempt")

// route runs a routing script (lib.lua's layout): the shared keys, four
// keys per admin of the roster this client knows (plus admin add, for
// AddAdmin), the operation's keys and arguments. When the script finds
// another roster, route adopts it and runs the script again: one round
// trip, two when the roster changed since this client last looked.
func (c *Chat) route(ctx context.Context, op *call.Op, name, req, add string, opKeys []string, opArgs ...any) (call.Reply, error) {
	var addQuad []string
	if add != "" {
		q, err := c.adminKeys(name, add)
		if err != nil {
			return call.Reply{}, err
		}
		addQuad = q
	}
	for attempt := 0; ; attempt++ {
		r := c.current()
		ids, quads := r.ids, r.quads
		if add != "" && !slices.Contains(ids, add) {
			ids, quads = slices.Clone(ids), slices.Clone(quads)
			i, _ := slices.BinarySearch(ids, add)
			ids = slices.Insert(ids, i, add)
			quads = slices.Insert(quads, 4*i, addQuad...)
		}
		rc := c.routeCall(op, req, ids, quads, opKeys, opArgs)
		rep, err := c.run.Run(ctx, rc.Op, rc.Keys, rc.Args...)
		if err != nil || !rosterChanged(&rep) {
			return rep, err
		}
		fresh := rep.Strs(1)
		if err := rep.Err(); err != nil {
			return rep, err
		}
		nr, err := c.newRoster(name, fresh)
		if err != nil {
			return rep, err
		}
		c.setRoster(nr)
		if attempt+1 >= rosterRetries {
			return rep, pkg.Fail(name, c.global[4], nil, errRosterChurn)
		}
	}
}

// routeCall is the call of a routing script (lib.lua's layout) for the
// roster ids with their admins' keys quads.
func (c *Chat) routeCall(op *call.Op, req string, ids, quads, opKeys []string, opArgs []any) call.Call {
	ks := make([]string, 0, len(c.global)+len(quads)+len(opKeys))
	ks = append(append(append(ks, c.global...), quads...), opKeys...)
	args := make([]any, 0, 2+len(c.head)+len(c.limits)+len(ids)+len(opArgs))
	args = append(args, len(ids))
	args = append(args, c.head...)
	args = append(args, req)
	args = append(args, c.limits...)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, opArgs...)
	return call.Call{Op: op, Keys: ks, Args: args}
}

// rosterChanged reports a routing script's answer that the roster is
// not the one passed.
func rosterChanged(rep *call.Reply) bool {
	return rep.Status == call.Conflict && rep.Str(0) == "roster"
}
