package presence

import (
	"context"
	_ "embed"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/sweep"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed sweep.lua
	sweepLua string

	sweepOp = pkg.Declare("sweep", sweepLua, []*keys.Template{onlineKey, sweepsKey}, call.Uses(libLua, call.Batched, call.JSONStr))
)

// sweepLimit is the most silent expiries one visit of one shard announces
// (bounding the script's run time); the rest wait for the next visit.
const sweepLimit = 256

// Shards is the number of online-index shards, one per cluster slot:
// Sweep takes shard numbers in [0, Shards).
const Shards = keys.SlotCount

// SweepWindow is how long after a silent expiry the online index keeps it
// for Sweep: the profile's Retention, or its TTL when the Retention is zero.
// Each shard must be swept at least that often, or silent expiries older
// than it may be pruned unannounced by later writes to their shard.
func (t *Tracker) SweepWindow() time.Duration {
	if t.opt.profile.Retention > 0 {
		return t.opt.profile.Retention
	}
	return t.opt.profile.TTL
}

// Sweep announces silent offlines: users whose presence expired by server
// TIME (all their devices stopped heartbeating and none called Disconnect)
// and whom nothing has announced yet. It visits count online-index shards
// starting at shard first (wrapping after Shards-1), one script per shard,
// all in one pipeline (one round trip on a single server; one per node, in
// parallel, on a cluster). For each such user it publishes, from the script,
// the event Disconnect publishes on going offline: {"userId","status":
// "offline","previous","at"} on Channel, previous the public status the
// user had (online, away or busy), at the expiry time. It returns how many
// users it announced.
//
// Exactly once: the script marks the user announced (negates its index
// score) in the same atomic step, so any number of trackers may sweep the
// same shards concurrently; a user who reconnected before the sweep is not
// announced (their Connect published offline -> online), nor is one who
// called Disconnect (it published the offline event and removed the user
// from the index), nor an Invisible user (never indexed: others already
// see them offline). A shard visit announces at most 256 users; the rest
// go on the next visit. A silent expiry must be swept within SweepWindow,
// after which writes to its shard may prune it unannounced. A replayed
// pipeline (go-redis resends it after a cut connection) announces nobody
// twice, whenever it comes (the announced users are marked), and within
// the replay window (3 min) reports the first run's count. Each visit also drops index
// members whose score no script of this package writes.
//
// Cost: per shard one EVALSHA doing EXISTS and, on a shard that exists,
// TIME, ZRANGEBYSCORE and four ZREMRANGEBYSCORE (O(log N)), plus a ZADD and
// a PUBLISH per announced user. The script is loaded on every master by a
// tracker's first Sweep; a server that lost it (a restart, a failover)
// gets it again with the body of each call of the next Sweep (EVAL).
//
// Errors: ErrNoIndex on a tracker built WithoutOnlineIndex, ErrInvalid for
// first outside [0, Shards) or count outside [1, Shards], or Redis errors
// (with the users announced so far counted).
func (t *Tracker) Sweep(ctx context.Context, first, count int) (int, error) {
	const op = "sweep"
	if t.opt.noIndex {
		return 0, pkg.Fail(op, "", ErrNoIndex, nil)
	}
	if first < 0 || first >= Shards || count < 1 || count > Shards {
		return 0, pkg.Invalidf(op, "shards %d+%d not within [0, %d)", first, count, Shards)
	}
	if err := sweep.Load(ctx, t.run, &t.sweepLoaded, sweepOp); err != nil {
		return 0, err
	}
	args := t.args("", "", newRequestID(), sweepLimit)
	n := 0
	err := sweep.Due(ctx, t.run, Shards, first, count,
		func(slot int) (call.Call, error) {
			tag := keys.SlotTag(slot)
			shard, err := pkg.Key(op, onlineKey, t.opt.ns, tag)
			if err != nil {
				return call.Call{}, err
			}
			rec, err := pkg.Key(op, sweepsKey, t.opt.ns, tag)
			return call.Call{Op: sweepOp, Keys: []string{shard, rec}, Args: args}, err
		},
		sweep.Int,
		func(m int64) error { n += int(m); return nil })
	return n, err
}

// RunSweeper sweeps all Shards in a cycle, batch shards every interval
// (one Sweep call, one round trip), from a random shard so that several
// instances spread out, until ctx is done; it then returns ctx.Err(),
// wrapped. A silent offline is announced within about one cycle,
// ceil(Shards/batch) x every, after the presence expired (e.g. batch 512
// every second: 32 s). The cycle must not exceed SweepWindow
// (DetailedProfile: 600 s, CompactProfile: 300 s), else ErrInvalid; so
// must every > 0 and batch in [1, Shards].
//
// A failed Sweep is passed to onError (if not nil) and the sweeper moves
// on: the shards are visited again on the next cycle. Any number of
// instances may run a sweeper on one namespace (each user is announced
// once); each adds its Redis cost: Shards scripts per cycle, most on
// shards that do not exist (an EXISTS), e.g. 16384 / 32 s = 512 scripts/s.
// On a tracker built WithoutOnlineIndex it returns ErrNoIndex at once.
func (t *Tracker) RunSweeper(ctx context.Context, every time.Duration, batch int, onError func(error)) error {
	const op = "sweeper"
	if t.opt.noIndex {
		return pkg.Fail(op, "", ErrNoIndex, nil)
	}
	return sweep.Run(ctx, pkg, op, Shards, every, batch, t.SweepWindow(), t.Sweep, onError)
}
