package presence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// failsWritingNothing runs call on the stored state and requires it to fail
// with keys.ErrCorrupt naming k, leaving every key as it was.
func failsWritingNothing(t *testing.T, e *harness.Env, k string, call func(ctx context.Context) error) {
	t.Helper()
	before := e.Snapshot()
	err := call(e.Ctx())
	require.Error(t, err)
	assert.ErrorIs(t, err, keys.ErrCorrupt, "%v", err)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", k)), "%v does not name %s", err, k)
	assert.Equal(t, before, e.Snapshot(), "nothing written")
}

// TestChannelSettleCorruptMemberWritesNothing: users a and b have both
// expired from channel r (a's device first), b's member value is not one
// this package writes. Every call that settles the channel's expired
// devices reads and checks both member values before it removes any: it
// fails naming the member hash, and a is still a member with its device.
func TestChannelSettleCorruptMemberWritesNothing(t *testing.T) {
	for name, call := range map[string]func(ctx context.Context, c *presence.Channels[roomData]) error{
		"join": func(ctx context.Context, c *presence.Channels[roomData]) error {
			_, err := c.Join(ctx, "r", "z", "c1", roomData{Name: "z"})
			return err
		},
		"leave": func(ctx context.Context, c *presence.Channels[roomData]) error {
			_, err := c.Leave(ctx, "r", "z", "c1")
			return err
		},
		"update": func(ctx context.Context, c *presence.Channels[roomData]) error {
			_, err := c.Update(ctx, "r", "z", roomData{Name: "z"})
			return err
		},
		"heartbeat": func(ctx context.Context, c *presence.Channels[roomData]) error {
			return c.Heartbeat(ctx, "r", "z", "c1")
		},
		"sweep": func(ctx context.Context, c *presence.Channels[roomData]) error {
			_, err := c.Sweep(ctx, c.Shard("r"), 1)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newChannels(t, e)
			now := float64(e.Now().UnixMilli())
			members := key(t, e, "presence:channel:{channel}", "r")
			devs := key(t, e, "presence:channel:devices:{channel}", "r")
			due := key(t, e, "presence:channel:due:{slot}", keys.SlotTag(c.Shard("r")))
			require.NoError(t, e.Client.HSet(ctx, members, "a", `1:{"name":"a"}`, "b", "garbage").Err())
			require.NoError(t, e.Client.ZAdd(ctx, devs, redis.Z{Score: now - 2000, Member: "1:ac1"}, redis.Z{Score: now - 1000, Member: "1:bc1"}).Err())
			require.NoError(t, e.Client.ZAdd(ctx, due, redis.Z{Score: now - 2000, Member: "r"}).Err())
			for _, k := range []string{members, devs, due} {
				require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
			}
			failsWritingNothing(t, e, members, func(ctx context.Context) error { return call(ctx, c) })
		})
	}
}

// TestChannelHeartbeatCorruptMemberWritesNothing: a channel heartbeat that
// takes the general script (the channel's due entry is missing) checks the
// user's member value before it reschedules the channel or pushes the
// device's expiry: a corrupt one fails it naming the member hash, with the
// device's score as it was and no due entry.
func TestChannelHeartbeatCorruptMemberWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChannels(t, e)
	now := float64(e.Now().UnixMilli())
	members := key(t, e, "presence:channel:{channel}", "r")
	devs := key(t, e, "presence:channel:devices:{channel}", "r")
	require.NoError(t, e.Client.HSet(ctx, members, "u", "garbage").Err())
	require.NoError(t, e.Client.ZAdd(ctx, devs, redis.Z{Score: now + 500, Member: "1:uc1"}).Err())
	for _, k := range []string{members, devs} {
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
	}
	failsWritingNothing(t, e, members, func(ctx context.Context) error { return c.Heartbeat(ctx, "r", "u", "c1") })
}

// TestOnlineIndexWrongTypeWritesNothing: the online index shard of the
// user's slot holds a string. Every tracker write that indexes the user
// touches the shard before its other writes (the heartbeat's fast path
// too): it fails naming the shard, with no presence or connection written.
func TestOnlineIndexWrongTypeWritesNothing(t *testing.T) {
	cases := []struct {
		name   string
		online bool // u is connected (c1) before the shard is planted
		call   func(ctx context.Context, tr *presence.Tracker) error
	}{
		{"connect of a new user", false, func(ctx context.Context, tr *presence.Tracker) error {
			_, err := tr.Connect(ctx, "u", presence.Conn{ID: "c1", Metadata: web})
			return err
		}},
		{"connect", true, func(ctx context.Context, tr *presence.Tracker) error {
			_, err := tr.Connect(ctx, "u", presence.Conn{ID: "c2", Metadata: web})
			return err
		}},
		{"heartbeat", true, func(ctx context.Context, tr *presence.Tracker) error {
			_, err := tr.Heartbeat(ctx, "u", "c1")
			return err
		}},
		{"disconnect", true, func(ctx context.Context, tr *presence.Tracker) error {
			_, err := tr.Disconnect(ctx, "u", "c1")
			return err
		}},
		{"set status", true, func(ctx context.Context, tr *presence.Tracker) error {
			_, err := tr.SetStatus(ctx, "u", presence.Away)
			return err
		}},
	}
	eachLayout(t, func(t *testing.T, l layout) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := harness.New(t)
				ctx := e.Ctx()
				tr := newTracker(t, e, l.opt())
				if tc.online {
					_, err := tr.Connect(ctx, "u", presence.Conn{ID: "c1", Metadata: web})
					require.NoError(t, err)
					e.Advance(5 * time.Millisecond) // so that a heartbeat writes a later lastSeen
				}
				shard := key(t, e, "presence:online:{slot}", keys.SlotTag(keys.Slot(key(t, e, "presence:{user_id}", "u"))))
				require.NoError(t, e.Client.Set(ctx, shard, "x", time.Minute).Err())
				failsWritingNothing(t, e, shard, func(ctx context.Context) error { return tc.call(ctx, tr) })
			})
		}
	})
}

// TestHeartbeatUnknownCorruptMemoWritesNothing: a heartbeat of an unknown
// connection checks the request memo before it prunes the user's stale
// connections: a memo of a foreign type fails it naming the memo, with the
// stale connection and the online presence as they were.
func TestHeartbeatUnknownCorruptMemoWritesNothing(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		ctx := e.Ctx()
		tr := newTracker(t, e, l.opt()) // TTL 60 s
		stale := e.Now().Add(-2 * time.Minute).UnixMilli()
		conn := fmt.Sprintf(`{"connectedAt":%d,"lastSeen":%d,"metadata":{}}`, stale, stale)
		if l.single() {
			conn = fmt.Sprintf(`[%d,%d,{}]`, stale, stale)
		}
		l.plantConn(t, e, "u", "c1", conn)
		pk := key(t, e, "presence:{user_id}", "u")
		if !l.single() {
			require.NoError(t, e.Client.Set(ctx, pk, fmt.Sprintf(`{"status":"online","lastSeen":%d,"activeConnections":1}`, stale), time.Minute).Err())
		}
		memo := key(t, e, "presence:requests:{user_id}", "u")
		require.NoError(t, e.Client.Set(ctx, memo, "x", time.Minute).Err())
		failsWritingNothing(t, e, memo, func(ctx context.Context) error {
			_, err := tr.Heartbeat(ctx, "u", "c2")
			return err
		})
	})
}

// TestTypingStartCorruptWritesNothing: Typing.Start reads the indicator
// and the typers' index before it takes the throttle: either of a foreign
// type fails it naming the key, with no throttle marker and no indicator
// written, so the next Start is not throttled.
func TestTypingStartCorruptWritesNothing(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, e *harness.Env) string{
		"typers a string": func(t *testing.T, e *harness.Env) string {
			k := key(t, e, "typers:{conversation_id}", "c")
			require.NoError(t, e.Client.Set(e.Ctx(), k, "x", time.Minute).Err())
			return k
		},
		"indicator a hash": func(t *testing.T, e *harness.Env) string {
			k := key(t, e, "typing:{conversation_id}:{user_id}", "c", "u")
			require.NoError(t, e.Client.HSet(e.Ctx(), k, "f", "v").Err())
			require.NoError(t, e.Client.Expire(e.Ctx(), k, time.Minute).Err())
			return k
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ty := newTyping(t, e) // throttle 2 s
			k := plant(t, e)
			failsWritingNothing(t, e, k, func(ctx context.Context) error {
				_, err := ty.Start(ctx, "c", "u", "ann")
				return err
			})
			require.NoError(t, e.Client.Del(e.Ctx(), k).Err())
			ok, err := ty.Start(e.Ctx(), "c", "u", "ann")
			require.NoError(t, err)
			assert.True(t, ok, "not throttled by the failed Start")
		})
	}
}
