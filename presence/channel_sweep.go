package presence

import (
	"context"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/sweep"
	"github.com/redschema/redschema/keys"
)

// chanSweepLimit is the most due channels one shard visit returns; the
// rest wait for the next visit.
const chanSweepLimit = 256

// SweepWindow is how long a channel keeps an expired device for Sweep to
// announce its silent leave: the profile's Retention, or its TTL when the
// Retention is zero. Every shard must be swept at least that often.
func (c *Channels[T]) SweepWindow() time.Duration {
	return time.Duration(c.fixed[1].(int64)) * time.Millisecond
}

// Shard returns the shard (in [0, Shards)) that holds channel's due
// entry: Sweep(ctx, c.Shard(channel), 1) visits just that channel's slot.
// It returns -1 for an ID that cannot be a key segment.
func (c *Channels[T]) Shard(channel string) int {
	k, err := pkg.Key("shard", chanMembersKey, c.opt.ns, channel)
	if err != nil {
		return -1
	}
	return keys.Slot(k)
}

// Sweep announces silent leaves and pending occupancy events: it visits
// count due shards starting at shard first (wrapping after Shards-1) and,
// in each, the channels whose first device expiry or pending occupancy
// event has come by server TIME (at most 256 per shard per visit). For
// each such channel one script removes the expired devices, publishes a
// "leave" event (reason "timeout") for each user whose last device it
// removed, publishes a pending occupancy event, and schedules the
// channel's next visit. It returns the number of leaves it announced.
//
// Round trips: one pipeline of one read-only script per shard (split per
// node on a cluster), then, if any channel is due, one pipeline of one
// script per due channel. Exactly once: each channel's script is atomic
// and removes what it announces, so any number of instances may sweep
// concurrently with each other and with Join, Leave and Heartbeat, which
// settle a channel's expired devices the same way before they act; a
// rerun (a replayed pipeline) announces nothing twice. A silent leave must
// be swept within SweepWindow, after which the channel's keys may expire
// unannounced.
//
// Errors: ErrInvalid for first outside [0, Shards) or count outside [1,
// Shards], or Redis errors (with the leaves announced so far counted).
func (c *Channels[T]) Sweep(ctx context.Context, first, count int) (int, error) {
	const op = "channel sweep"
	if first < 0 || first >= Shards || count < 1 || count > Shards {
		return 0, pkg.Invalidf(op, "shards %d+%d not within [0, %d)", first, count, Shards)
	}
	if err := sweep.Load(ctx, c.run, &c.loaded, chanDueOp, chanSettleOp); err != nil {
		return 0, err
	}
	var settle []call.Call
	firstErr := sweep.Due(ctx, c.run, Shards, first, count,
		func(slot int) (call.Call, error) {
			shard, err := pkg.Key(op, chanDueKey, c.opt.ns, keys.SlotTag(slot))
			return call.Call{Op: chanDueOp, Keys: []string{shard}, Args: []any{chanSweepLimit}}, err
		},
		sweep.Members,
		func(ch string) error {
			k, ev, err := c.keysOf(op, ch, "")
			if err != nil {
				return err
			}
			settle = append(settle, call.Call{Op: chanSettleOp, Keys: k, Args: c.args(ch, ev, "", "", "")})
			return nil
		})
	n, err := sweep.Count(ctx, c.run, settle)
	if firstErr == nil {
		firstErr = err
	}
	return n, firstErr
}

// RunSweeper runs Sweep over all Shards in a cycle, batch shards every
// interval, from a random shard, until ctx is done (it then returns
// ctx.Err(), wrapped), as Tracker.RunSweeper does for silent offlines: a
// silent leave is announced within about one cycle, ceil(Shards/batch) x
// every, after the device expired, unless a write to its channel
// announces it first. The cycle must not exceed SweepWindow, else
// ErrInvalid; so must every > 0 and batch in [1, Shards]. A failed Sweep
// is passed to onError (if not nil) and the sweeper moves on.
func (c *Channels[T]) RunSweeper(ctx context.Context, every time.Duration, batch int, onError func(error)) error {
	const op = "channel sweeper"
	return sweep.Run(ctx, pkg, op, Shards, every, batch, c.SweepWindow(), c.Sweep, onError)
}
