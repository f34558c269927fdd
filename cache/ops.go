package cache

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/sub"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed tag_bump.lua
	tagBumpSrc string
	tagBumpOp  = pkg.Declare("invalidate tag", tagBumpSrc, []*keys.Template{tagKey, tagGenKey, tagDyingKey})
)

// Set stores value at ref, with its metadata and tags, in one round trip,
// whatever is there: without tags, one MULTI/EXEC of plain commands
// (shared with concurrent Sets); with tags, one pipeline of the tags'
// scripts, then the entry's.
// A load in flight for ref loses its lease and does not overwrite value;
// local tiers drop their copies. It fails with ErrInvalid, before any
// I/O, for a value above the max value size or a bad option. Replayed by
// go-redis after a lost reply, it writes the same again.
func (s *Store) Set(ctx context.Context, ref Ref, value []byte, opts ...FetchOption) error {
	const op = "set"
	cfg, err := s.config(op, defaultTTL, s.opt.grace, opts)
	if err != nil {
		return err
	}
	return s.set(ctx, op, ref, value, cfg)
}

func (s *Store) set(ctx context.Context, op string, ref Ref, value []byte, cfg *fetchConfig) error {
	if err := s.checkOpen(op, ref.value); err != nil {
		return err
	}
	switch {
	case ref.value == "":
		return pkg.Invalidf(op, "zero Ref")
	case len(value) > s.opt.maxValue:
		return pkg.Invalidf(op, "value of %d bytes above the max %d", len(value), s.opt.maxValue)
	}
	if s.local != nil {
		s.local.del(ref.value)
	}
	id := s.newID()
	if len(cfg.tagKeys) == 0 {
		err := s.sets.do(ctx, ref.value, s.setCmds(ctx, ref, id, value, cfg)...)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return pkg.Wrap(ctx, op, ref.value, err)
		}
		// A redirect, a failover or a network error: the write script,
		// which the Runner retries until the deadline, writes the same.
	}
	_, err := s.writeBack(ctx, ref, id, value, cfg, 0, nil, "set")
	return err
}

// setCmds are an untagged Set's commands, for one MULTI/EXEC: the writes
// the write script runs in mode "set", with the same arguments
// (writeArgs), in the same order; the set event follows them (txPipe
// publishes one for all the Sets of a round trip). A Set reads nothing
// before it writes, so it needs no script: the transaction makes it
// atomic (a load in flight finds its lease gone with the old metadata,
// and a read sees the old entry or the new one), and sent twice it
// writes the same twice.
func (s *Store) setCmds(ctx context.Context, ref Ref, id string, value []byte, cfg *fetchConfig) []*redis.Cmd {
	w := s.writeArgs(id, value, cfg, 0, "set")
	life, hint, createdAt, size := w[2], w[3], w[7], w[8]
	var v, m any = ref.value, ref.meta
	// One backing array for every command's arguments.
	a := [...]any{
		"set", v, value, "px", life, // 0:5
		"del", m, // 5:7
		"hset", m, "created_at", createdAt, "hits", "0", "size_bytes", size, "hint", hint, "wid", id, // 7:19
		"pexpire", m, life, // 19:22
	}
	args := a[:]
	return []*redis.Cmd{
		redis.NewCmd(ctx, args[0:5:5]...),
		redis.NewCmd(ctx, args[5:7:7]...),
		redis.NewCmd(ctx, args[7:19:19]...),
		redis.NewCmd(ctx, args[19:22:22]...),
	}
}

// Delete removes the entry ref (value, metadata and any lease) in one
// round trip; a load in flight does not put it back, and local tiers drop
// their copies. Deleting a missing entry is not an error.
func (s *Store) Delete(ctx context.Context, ref Ref) error {
	const op = "delete"
	if err := s.checkOpen(op, ref.value); err != nil {
		return err
	}
	if ref.value == "" {
		return pkg.Invalidf(op, "zero Ref")
	}
	if s.local != nil {
		s.local.del(ref.value)
	}
	_, err := s.run.Run(ctx, deleteOp, []string{ref.value, ref.meta}, s.channel, s.origin)
	return err
}

// invalidateBatch is how many members one step of InvalidateTag reads and
// deletes: every command it sends touches at most that many keys.
const invalidateBatch = 512

// InvalidateTag deletes every entry recorded under tag and returns how
// many it deleted (markers of a load that found nothing included; not
// the members whose entry was gone already). One script on the tag's slot gives the tag a new
// generation, so that no load that started before stores its value under
// the tag, and renames the tag to its dying set (O(1)); new entries go to
// a fresh tag meanwhile. Then it drains the dying set: ZRANGE of 512
// members, a pipeline of UNLINKs of their entries (split per node on a
// cluster, each O(1)), ZREM of the batch, until it is empty: no command
// blocks Redis, whatever the tag's size. When it returns nil, no entry of
// the tag written before the call is left; local tiers are told last. If
// it fails midway (an error is returned; or the process dies), the
// members left stay in the dying set and the next InvalidateTag of the
// tag deletes them first. Members that are not keys of this Store's
// layout are dropped from the dying set and reported to the error hook.
func (s *Store) InvalidateTag(ctx context.Context, tag string) (int, error) {
	const op = "invalidate tag"
	if err := s.checkOpen(op, tag); err != nil {
		return 0, err
	}
	t, err := s.tagKeys(op, tag)
	if err != nil {
		return 0, err
	}
	gen := s.newID()
	n := 0
	for {
		rep, err := s.run.Run(ctx, tagBumpOp, []string{t.set, t.gen, t.dying}, gen, unit.MsFloor(genTTL))
		if err != nil {
			return n, err
		}
		moved := rep.Int(0)
		if err := rep.Err(); err != nil {
			return n, err
		}
		d, err := s.drain(ctx, op, t)
		n += d
		if err != nil {
			return n, err
		}
		if moved >= 0 {
			break
		}
	}
	if s.local != nil {
		s.local.delTag(tag)
	}
	if err := sub.Publish(ctx, s.rdb, s.channel, "t "+s.origin+" "+tag).Err(); err != nil {
		return n, pkg.Fail(op, s.channel, nil, err)
	}
	return n, nil
}

// drain deletes the entries of t's dying set in batches and empties it.
func (s *Store) drain(ctx context.Context, op string, t tagPair) (int, error) {
	n := 0
	for {
		members, err := s.rdb.ZRange(ctx, t.dying, 0, invalidateBatch-1).Result()
		if err != nil {
			return n, pkg.Wrap(ctx, op, t.dying, err)
		}
		if len(members) == 0 {
			return n, nil
		}
		pipe := s.rdb.Pipeline()
		var unlinks []*redis.IntCmd
		for _, m := range members {
			ref, ok := s.refOf(m)
			if !ok {
				s.report(ctx, t.dying, pkg.Fail(op, t.dying, nil, keys.Corrupt(t.dying, fmt.Errorf("member %q is not a key of this store's layout: dropped", m))))
				continue
			}
			unlinks = append(unlinks, pipe.Unlink(ctx, ref.value, ref.meta))
		}
		if len(unlinks) > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return n, pkg.Wrap(ctx, op, t.dying, err)
			}
		}
		if err := s.rdb.ZRem(ctx, t.dying, toAny(members)...).Err(); err != nil {
			return n, pkg.Wrap(ctx, op, t.dying, err)
		}
		for _, u := range unlinks {
			if u.Val() > 0 { // else gone already (deleted, expired)
				n++
			}
		}
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, v := range ss {
		out[i] = v
	}
	return out
}

// compile-time check that the declared ops are what the runner takes.
var _ = []*call.Op{readOp, leaseOp, writeOp, releaseOp, extendOp, unsetOp, deleteOp, tagAddOp, tagGenOp, tagBumpOp, hitsOp}
