package presence

import (
	_ "embed"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// replayWindow is how long a request and its first outcome are
// remembered, for go-redis's resends (of a command whose reply was lost,
// and of a whole pipeline after a cut connection): a resend that reaches
// the server within it reports the first run's outcome and changes
// nothing, however many other requests ran on the same user (channel
// member, typer, shard) meanwhile; a later one runs again. It is longer
// than go-redis's whole default retry schedule (at worst about 2 minutes
// from the first run to the last resend; see "Resends" in
// docs/presence.md) and than any call whose context deadline is shorter.
const replayWindow = 3 * time.Minute

// maxClockSkew is how far ahead of the server's clock a stored time may be
// (the server clock stepping back): a lastSeen, score or expiry further
// ahead was not written by this package and is reported as corrupt.
const maxClockSkew = time.Hour

var (
	//go:embed lib.lua
	libLua string

	// replayMs and skewMs are replayWindow and maxClockSkew as the
	// scripts take them in ARGV.
	replayMs = unit.MsCeil(replayWindow)
	skewMs   = unit.MsCeil(maxClockSkew)

	// userKeyTemplates are the KEYS of the scripts on a user's keys.
	userKeyTemplates = []*keys.Template{presenceKey, connsKey, onlineKey, requestsKey}
)

// Tracker records users' connections and presence: multi-device online
// status with heartbeats, stale-connection pruning, last seen, statuses,
// the online index and change events. It is safe for concurrent use;
// create one per process and namespace, and share it.
type Tracker struct {
	run         *call.Runner
	opt         options
	channel     string
	fixed       []any // ARGV[3..10]
	sweepLoaded atomic.Bool
	typing      *Typing
	avail       *Availability
}

// New returns a Tracker over rdb, with its Typing and its Availability
// (Tracker.Typing, Tracker.Availability). It fails with ErrInvalid on a
// nil client, a go-redis client without ContextTimeoutEnabled (which would
// ignore the deadlines of every call), or a bad option; it does not
// contact Redis.
func New(rdb redis.UniversalClient, opts ...Option) (*Tracker, error) {
	return newTracker("new", rdb, opts)
}

// newTracker is New, for the constructor op (New, NewInspector).
func newTracker(op string, rdb redis.UniversalClient, opts []Option) (*Tracker, error) {
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if _, cluster := rdb.(*redis.ClusterClient); cluster && o.others && o.ns.NoHashTags {
		return nil, pkg.Invalidf(op, "WithOtherWriters on a cluster needs hash tags: Typers reads a conversation's indicators with one MGET, which must stay on one slot")
	}
	ch, err := pkg.Key(op, eventsChannel, o.ns)
	if err != nil {
		return nil, err
	}
	idx := "1"
	if o.noIndex {
		idx = "0"
	}
	p := o.profile
	return &Tracker{
		run:     call.NewRunner(rdb, o.lanes),
		opt:     o,
		channel: ch,
		fixed: []any{p.Format.arg(), unit.MsCeil(p.TTL), unit.MsCeil(p.Retention), ch, idx, o.layout.arg(),
			skewMs, replayMs},
		typing: &Typing{run: call.NewRunner(rdb, o.lanes), opt: o},
		avail:  newAvailability(rdb, o),
	}, nil
}

// Profile returns the tracker's profile (durations rounded up to whole
// milliseconds).
func (t *Tracker) Profile() Profile { return t.opt.profile }

// Layout returns the tracker's layout.
func (t *Tracker) Layout() Layout { return t.opt.layout }

// Channel returns the pub/sub channel the tracker publishes events on:
// presence:events under the namespace's prefix.
func (t *Tracker) Channel() string { return t.channel }

// userKeys are the keys of the scripts on one user, in KEYS order.
type userKeys [4]string

func (t *Tracker) userKeys(op, user string) (userKeys, error) {
	var k userKeys
	var err error
	if k[0], err = pkg.Key(op, presenceKey, t.opt.ns, user); err != nil {
		return k, err
	}
	if k[1], err = pkg.Key(op, connsKey, t.opt.ns, user); err != nil {
		return k, err
	}
	if k[2], err = pkg.Key(op, onlineKey, t.opt.ns, keys.SlotTag(keys.Slot(k[0]))); err != nil {
		return k, err
	}
	k[3], err = pkg.Key(op, requestsKey, t.opt.ns, user)
	return k, err
}

// args returns the ARGV of a script on user's keys (see lib.lua): user,
// conn, the fixed ARGV[3..10], reqID, then extra.
func (t *Tracker) args(user, conn, reqID string, extra ...any) []any {
	a := make([]any, 0, 11+len(extra))
	a = append(a, user, conn)
	a = append(a, t.fixed...)
	a = append(a, reqID)
	return append(a, extra...)
}

// newRequestID returns 16 random hex digits: the ID a script records its
// first outcome under (see "Request memos" in lib.lua). Drawn before the
// first send, it is the same in every resend of the request.
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

func fromMs(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
