package presence

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed sweep.lua
	sweepLua    string
	sweepScript = script.New(indexLua, sweepLua)
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
	if t.cfg.profile.Retention > 0 {
		return t.cfg.profile.Retention
	}
	return t.cfg.profile.TTL
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
// after which writes to its shard may prune it unannounced.
//
// Cost: per shard one EVALSHA doing EXISTS and, on a shard that exists,
// TIME, ZRANGEBYSCORE and two ZREMRANGEBYSCORE (O(log N)), plus a ZADD and
// a PUBLISH per announced user. The script is loaded on first use (and
// again after NOSCRIPT, e.g. a restarted server).
//
// Errors: ErrNoIndex on a tracker built WithoutOnlineIndex, ErrInvalidInput
// for first outside [0, Shards) or count outside [1, Shards], or Redis
// errors (with the users announced so far counted).
func (t *Tracker) Sweep(ctx context.Context, first, count int) (int, error) {
	const op = "sweep"
	if t.cfg.noIndex {
		return 0, fmt.Errorf("presence: %s: %w", op, ErrNoIndex)
	}
	if first < 0 || first >= Shards || count < 1 || count > Shards {
		return 0, fmt.Errorf("presence: %s: %w: shards %d+%d not within [0, %d)", op, ErrInvalidInput, first, count, Shards)
	}
	ks := make([]string, count)
	for i := range ks {
		k, err := onlineKey.Key(t.cfg.ns, slotTag((first+i)%Shards))
		if err != nil {
			return 0, fmt.Errorf("presence: %s: %w", op, err)
		}
		ks[i] = k
	}
	args := t.args("", "", sweepLimit)
	n, missing, err := t.sweepPipe(ctx, ks, args)
	if err != nil || len(missing) == 0 {
		return n, err
	}
	// NOSCRIPT: load the script (on every master) and rerun the shards that
	// did not run; the others are done (rerunning them would be harmless).
	if err := sweepScript.Load(ctx, t.c); err != nil {
		return n, fmt.Errorf("presence: %s: load script: %w", op, err)
	}
	m, missing, err := t.sweepPipe(ctx, missing, args)
	n += m
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("presence: %s %s: script not loaded", op, missing[0])
	}
	return n, err
}

// sweepPipe runs sweep.lua by hash on each shard key in one pipeline and
// returns the users announced, the keys whose node answered NOSCRIPT and
// the first other error.
func (t *Tracker) sweepPipe(ctx context.Context, ks []string, args []any) (int, []string, error) {
	pipe := t.c.Pipeline()
	cmds := make([]*redis.Cmd, len(ks))
	for i, k := range ks {
		cmds[i] = sweepScript.EvalSha(ctx, pipe, []string{k}, args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	n := 0
	var missing []string
	var first error
	for i, c := range cmds {
		v, err := c.Result()
		if err == nil {
			var m int64
			if m, err = reply.Int64(v); err == nil {
				n += int(m)
				continue
			}
		}
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, ks[i])
		} else if first == nil {
			first = fmt.Errorf("presence: sweep %s: %w", ks[i], err)
		}
	}
	return n, missing, first
}

// RunSweeper sweeps all Shards in a cycle, batch shards every interval
// (one Sweep call, one round trip), from a random shard so that several
// instances spread out, until ctx is done; it then returns ctx.Err(),
// wrapped. A silent offline is announced within about one cycle,
// ceil(Shards/batch) x every, after the presence expired (e.g. batch 512
// every second: 32 s). The cycle must not exceed SweepWindow (Seed002:
// 600 s, Seed004: 300 s), else ErrInvalidInput; so must every > 0 and
// batch in [1, Shards].
//
// A failed Sweep is passed to onError (if not nil) and the sweeper moves
// on: the shards are visited again on the next cycle. Any number of
// instances may run a sweeper on one namespace (each user is announced
// once); each adds its Redis cost: Shards scripts per cycle, most on
// shards that do not exist (an EXISTS), e.g. 16384 / 32 s = 512 scripts/s.
// On a tracker built WithoutOnlineIndex it returns ErrNoIndex at once.
func (t *Tracker) RunSweeper(ctx context.Context, every time.Duration, batch int, onError func(error)) error {
	const op = "sweeper"
	if t.cfg.noIndex {
		return fmt.Errorf("presence: %s: %w", op, ErrNoIndex)
	}
	if every <= 0 || batch < 1 || batch > Shards {
		return fmt.Errorf("presence: %s: %w: every %v, batch %d", op, ErrInvalidInput, every, batch)
	}
	cycle := time.Duration((Shards+batch-1)/batch) * every
	if cycle > t.SweepWindow() {
		return fmt.Errorf("presence: %s: %w: a cycle of %v exceeds the sweep window %v", op, ErrInvalidInput, cycle, t.SweepWindow())
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	cursor := rand.IntN(Shards)
	for {
		if _, err := t.Sweep(ctx, cursor, batch); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		cursor = (cursor + batch) % Shards
		select {
		case <-ctx.Done():
			return fmt.Errorf("presence: %s: %w", op, ctx.Err())
		case <-tick.C:
		}
	}
}
