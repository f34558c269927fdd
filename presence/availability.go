package presence

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// availabilityTTL is Availability.TTL: 30 minutes.
const availabilityTTL = 30 * time.Minute

var (
	//go:embed availability_get.lua
	availabilityGetLua string

	availabilityGetOp = pkg.Declare("availability", availabilityGetLua,
		[]*keys.Template{adminKey}, call.Shared())
	availabilityTaggedGetOp = pkg.Declare("availability", availabilityGetLua,
		[]*keys.Template{availTaggedKey}, call.Shared())
)

// Availability records admins' availability for chat assignment: the bare
// word "online", "away", "busy" or "offline" at admin:{admin_id}:presence
// with a 30 minute TTL (Availability.TTL), refreshed by each Set; an admin
// with no key is offline. It is safe for concurrent use.
//
// A script of another package (a chat assignment) can read it as it is:
// GET the key (nil means offline) and compare the word. On a Redis Cluster
// such a script's keys must share one slot: build the Availability
// WithAvailabilityTag(tag), so that every admin's key is
// admin:{tag}:{admin_id}:presence, and pass Availability.Key(admin) in the
// script's KEYS beside its other {tag} keys.
type Availability struct {
	run  *call.Runner
	opt  options
	tmpl *keys.Template
	get  *call.Op
}

// Availability returns the tracker's Availability, configured by its
// options (the namespace, WithAvailabilityTag and WithPipelining: it has
// round trips in flight of its own). Every call returns the same one.
func (t *Tracker) Availability() *Availability { return t.avail }

// newAvailability returns an Availability over rdb with options o.
func newAvailability(rdb redis.UniversalClient, o options) *Availability {
	a := &Availability{run: call.NewRunner(rdb, o.lanes), opt: o, tmpl: adminKey, get: availabilityGetOp}
	if o.availTag != "" {
		a.tmpl, a.get = availTaggedKey, availabilityTaggedGetOp
	}
	return a
}

// TTL is how long an admin's availability lasts after the last Set: 30
// minutes, the home-automation backend's.
func (a *Availability) TTL() time.Duration { return availabilityTTL }

// Key returns the key holding admin's availability, for the KEYS of a
// script that reads it (see the type's doc). A bad admin ID is ErrInvalid
// (and keys.ErrInvalid).
func (a *Availability) Key(admin string) (string, error) { return a.key("key", admin) }

func (a *Availability) key(op, admin string) (string, error) {
	if a.opt.availTag != "" {
		return pkg.Key(op, a.tmpl, a.opt.ns, a.opt.availTag, admin)
	}
	return pkg.Key(op, a.tmpl, a.opt.ns, admin)
}

// Set stores admin's availability, Online, Away, Busy or Offline (one SET
// with a 30 minute TTL, one round trip); other statuses are ErrInvalid. It
// replaces whatever the key held, TTL included. Running it twice is running it once, so
// a replay after a lost reply reports the same success.
func (a *Availability) Set(ctx context.Context, admin string, s Status) error {
	const op = "set availability"
	if !s.valid() || s == Invisible {
		return pkg.Invalidf(op, "status %q: want online, away, busy or offline", s)
	}
	k, err := a.key(op, admin)
	if err != nil {
		return err
	}
	return pkg.Wrap(ctx, op, k, a.run.Client().Set(ctx, k, string(s), availabilityTTL).Err())
}

// Get returns admin's availability (one read-only script, one round trip).
// An admin with no key (never set, or 30 minutes without Set) is Offline.
// A value other than the four words, or a key with a TTL longer than
// TTL or without one (it would never go offline), gives an
// error matching keys.ErrCorrupt that names the key; with
// WithOtherWriters a key without a TTL is another writer's (the
// home-automation backend's set(key, word, 'EX', 1800) through node-redis
// stores none) and its word is returned, until the next Set gives the key
// its TTL.
func (a *Availability) Get(ctx context.Context, admin string) (Status, error) {
	const op = "availability"
	k, err := a.key(op, admin)
	if err != nil {
		return "", err
	}
	others := "0"
	if a.opt.others {
		others = "1"
	}
	rep, err := a.run.Run(ctx, a.get, []string{k}, unit.MsCeil(availabilityTTL), others)
	if err != nil {
		return "", err
	}
	if rep.Status == call.None {
		return Offline, nil
	}
	s := Status(rep.Str(0))
	return s, rep.Err()
}
