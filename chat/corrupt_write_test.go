package chat

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// corruptAt asserts err matches keys.ErrCorrupt and names k.
func corruptAt(t *testing.T, err error, k string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, keys.ErrCorrupt, "%v", err)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", k)), "%v does not name %s", err, k)
}

// TestAppendCorruptStampWritesNothing: a user message to a conversation
// that is not unread takes an order stamp from the cursor. A stamp that
// does not parse, or runs more than SKEW ahead of the clock, fails the
// Append naming the cursor before anything is written: the message is not
// cached, the activity, the unread queue, the state and the request memo
// are as they were, and a retry caches no duplicate. Through the fast
// path (a Chat that knows the roster) and without it (one that does not).
func TestAppendCorruptStampWritesNothing(t *testing.T) {
	for name, stamp := range map[string]func(now time.Time) string{
		"garbage":       func(time.Time) string { return "abc" },
		"in the future": func(now time.Time) string { return fmt.Sprint(now.Add(48*time.Hour).UnixMilli() * 512) },
	} {
		t.Run(name, func(t *testing.T) {
			for _, fresh := range []bool{false, true} {
				w := newWorld(t)
				ctx := w.e.Ctx()
				was, err := w.c.MarkRead(ctx, "c1")
				require.NoError(t, err)
				require.True(t, was)
				k := hset(t, w, w.c.global[5], "stamp", stamp(w.e.Now()))
				before := w.e.Snapshot()
				c := w.c
				if fresh {
					c = newChat(t, w.e)
				}
				for try := range 2 {
					_, err := c.Append(ctx, "c1", Message{Content: "x", SenderRole: User})
					corruptAt(t, err, k)
					n, err := w.e.Client.LLen(ctx, w.msg).Result()
					require.NoError(t, err)
					assert.EqualValues(t, 1, n, "fresh %v, try %d: the message is not cached", fresh, try)
					unread, err := w.e.Client.ZScore(ctx, w.c.global[2], "c1").Result()
					assert.ErrorIs(t, err, redis.Nil, "fresh %v, try %d: c1 is not unread (score %v)", fresh, try, unread)
					assert.Equal(t, before, w.e.Snapshot(), "fresh %v, try %d: nothing written", fresh, try)
				}
			}
		})
	}
}

// TestAddAdminCorruptWritesNothing: AddAdmin checks the roster and each
// roster admin's keys before it writes the new admin: another admin's
// corrupt capacity, availability or assignments fail the call naming the
// key, and the roster does not hold the new admin.
func TestAddAdminCorruptWritesNothing(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, w *world) string
	}{
		{"roster: garbage capacity", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[4], "a1", "lots") }},
		{"roster: capacity 0", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[4], "a1", "0") }},
		{"availability: garbage", func(t *testing.T, w *world) string {
			return replace(t, w, w.a1[0], func(ctx context.Context, r redis.UniversalClient) error {
				return r.Set(ctx, w.a1[0], "sleeping", time.Minute).Err()
			})
		}},
		{"availability: no TTL", func(t *testing.T, w *world) string {
			return replace(t, w, w.a1[0], func(ctx context.Context, r redis.UniversalClient) error {
				return r.Set(ctx, w.a1[0], "online", 0).Err()
			})
		}},
		{"assignments: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.a1[1]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, fresh := range []bool{false, true} {
				w := newWorld(t)
				ctx := w.e.Ctx()
				k := tc.plant(t, w)
				before := w.e.Snapshot()
				c := w.c
				if fresh {
					c = newChat(t, w.e)
				}
				corruptAt(t, c.AddAdmin(ctx, "a2", 5), k)
				in, err := w.e.Client.HExists(ctx, w.c.global[4], "a2").Result()
				require.NoError(t, err)
				assert.False(t, in, "fresh %v: a2 is not in the roster", fresh)
				assert.Equal(t, before, w.e.Snapshot(), "fresh %v: nothing written", fresh)
			}
		})
	}
}

// churn adds an admin to the roster (through rdb, another client) before
// each script its client sends, so that every attempt of a routing call
// meets a roster other than the one it passes.
type churn struct {
	rdb    redis.UniversalClient
	roster string
	n      atomic.Int64
}

func (h *churn) change(ctx context.Context, cmd redis.Cmder) {
	if name := cmd.Name(); name == "evalsha" || name == "eval" {
		_ = h.rdb.HSet(ctx, h.roster, fmt.Sprintf("z%d", h.n.Add(1)), "1").Err()
	}
}

func (h *churn) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *churn) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.change(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (h *churn) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.change(ctx, cmd)
		}
		return next(ctx, cmds)
	}
}

// TestAddAdminChurnWritesNothing: an AddAdmin that meets another roster
// on every attempt gives up (errRosterChurn, naming the roster) and
// leaves the admin out of the roster: no attempt wrote it.
func TestAddAdminChurnWritesNothing(t *testing.T) {
	w := newWorld(t)
	ctx := w.e.Ctx()
	rdb := w.e.FreshClient()
	h := &churn{rdb: w.e.Client, roster: w.c.global[4]}
	rdb.AddHook(h)
	c := newChatOn(t, w.e, rdb)
	err := c.AddAdmin(ctx, "a2", 5)
	require.ErrorIs(t, err, errRosterChurn)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", w.c.global[4])), "%v does not name the roster", err)
	assert.GreaterOrEqual(t, h.n.Load(), int64(rosterRetries), "the roster changed before every attempt")
	roster, err := w.e.Client.HGetAll(ctx, w.c.global[4]).Result()
	require.NoError(t, err)
	assert.NotContains(t, roster, "a2", "a2 is not in the roster")
	assert.Len(t, roster, 1+int(h.n.Load()), "a1 and the churn's admins only")
}

// TestOpenCorruptStampWritesNothing: opening a conversation takes an
// order stamp from the cursor; a stamp that does not parse fails the Open
// naming the cursor before the conversation enters the active set (or
// anything else is written).
func TestOpenCorruptStampWritesNothing(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		w := newWorld(t)
		ctx := w.e.Ctx()
		k := hset(t, w, w.c.global[5], "stamp", "abc")
		before := w.e.Snapshot()
		c := w.c
		if fresh {
			c = newChat(t, w.e)
		}
		_, err := c.Open(ctx, "c9", Normal)
		corruptAt(t, err, k)
		_, err = w.e.Client.ZScore(ctx, w.c.global[1], "c9").Result()
		assert.ErrorIs(t, err, redis.Nil, "fresh %v: c9 is not active", fresh)
		assert.Equal(t, before, w.e.Snapshot(), "fresh %v: nothing written", fresh)
	}
}

// expire opens conversation id (handed to a1) and makes its last activity
// older than the conversation TTL: the next routing call prunes it.
func expire(t *testing.T, w *world, id string) {
	t.Helper()
	_, err := w.c.Open(w.e.Ctx(), id, Normal)
	require.NoError(t, err)
	zadd(t, w, w.c.global[1], float64(w.e.Now().Add(-2*time.Hour).UnixMilli()), id)
}

// TestRoutingCorruptAfterTidyWritesNothing: a routing call reads and
// checks what its own change depends on (the conversation's state and
// activity, Open's order stamp, Resolve's stats of the admin) before it
// drops expired conversations or requeues an offline admin's ones: with
// such work waiting (c2 expired), a corrupt value fails the call naming
// its key and leaves every key as it was.
func TestRoutingCorruptAfterTidyWritesNothing(t *testing.T) {
	farFuture := float64(time.Now().Add(48*time.Hour).UnixMilli()) * 10
	opOpenC1 := func(ctx context.Context, c *Chat) error { _, err := c.Open(ctx, "c1", Normal); return err }
	opUnassign := func(ctx context.Context, c *Chat) error { _, err := c.Unassign(ctx, "c1"); return err }
	opTransfer := func(ctx context.Context, c *Chat) error { _, err := c.Transfer(ctx, "c1", "a1", "a1"); return err }
	cases := []struct {
		name  string
		plant func(t *testing.T, w *world) string
		ops   map[string]op
	}{
		{"cursor: garbage stamp", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[5], "stamp", "abc") },
			map[string]op{"open": opOpen}},
		{"state: garbage", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[0], "c1", "garbage") },
			map[string]op{"open c1": opOpenC1, "assign": opAssign, "transfer": opTransfer, "unassign": opUnassign, "resolve": opResolve}},
		{"active: time in the future", func(t *testing.T, w *world) string { return zadd(t, w, w.c.global[1], farFuture, "c1") },
			map[string]op{"open c1": opOpenC1, "assign": opAssign, "unassign": opUnassign, "resolve": opResolve}},
		{"stats: garbage day", func(t *testing.T, w *world) string { return hset(t, w, w.a1[2], "day", "monday") },
			map[string]op{"resolve": opResolve}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for name, f := range tc.ops {
				for _, fresh := range []bool{false, true} {
					w := newWorld(t)
					expire(t, w, "c2")
					k := tc.plant(t, w)
					before := w.e.Snapshot()
					c := w.c
					if fresh {
						c = newChat(t, w.e)
					}
					corruptAt(t, f(w.e.Ctx(), c), k)
					assert.Equal(t, before, w.e.Snapshot(), "%s, fresh %v: nothing written (c2 not dropped)", name, fresh)
				}
			}
		})
	}
}

// TestOpenCorruptStampOfflineWritesNothing: with a1 offline holding c1
// (requeued by the next routing call), an Open meeting a cursor whose
// stamp does not parse fails naming the cursor before c1 is requeued.
func TestOpenCorruptStampOfflineWritesNothing(t *testing.T) {
	w := newWorld(t)
	ctx := w.e.Ctx()
	require.NoError(t, w.c.Availability().Set(ctx, "a1", "offline"))
	k := hset(t, w, w.c.global[5], "stamp", "abc")
	before := w.e.Snapshot()
	corruptAt(t, opOpen(ctx, w.c), k)
	assert.Equal(t, before, w.e.Snapshot(), "nothing written (c1 not requeued)")
}

// TestDropCorruptBacklogWritesNothing: Append and MarkRead check the
// backlog's type only when they meet a conversation to drop (expired) or
// a member without a state to remove from the queues; a backlog of
// another type then fails the call naming it before the conversation's
// state, activity, unread place or assignment are touched.
func TestDropCorruptBacklogWritesNothing(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, w *world){
		"expired": func(t *testing.T, w *world) {
			zadd(t, w, w.c.global[1], float64(w.e.Now().Add(-2*time.Hour).UnixMilli()), "c1")
		},
		"no state": func(t *testing.T, w *world) {
			require.NoError(t, w.e.Client.HDel(context.Background(), w.c.global[0], "c1").Err())
		},
	} {
		for opName, f := range map[string]op{"append": opAppend, "reply": opReply, "read": opRead} {
			t.Run(name+"/"+opName, func(t *testing.T) {
				w := newWorld(t)
				plant(t, w)
				k := asString(t, w, w.c.global[3])
				before := w.e.Snapshot()
				corruptAt(t, f(w.e.Ctx(), w.c), k)
				assert.Equal(t, before, w.e.Snapshot(), "nothing written")
			})
		}
	}
}

// TestDashboardTheirCacheCorruptWritesNothing: WithoutTag, a dashboard
// cache the backend wrote (no computed_at) is computed again and
// replaced; when a key it is computed from is corrupt, the call fails
// naming it and the backend's cache stays.
func TestDashboardTheirCacheCorruptWritesNothing(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("WithoutTag is standalone-only")
	}
	ctx := e.Ctx()
	p := e.NS.Prefix
	c, err := New(e.Client, WithNamespace(keys.Namespace{Prefix: p, NoHashTags: true}), WithoutTag())
	require.NoError(t, err)
	require.NoError(t, c.Availability().Set(ctx, "123", "online"))
	require.NoError(t, c.AddAdmin(ctx, "123", 0))
	require.NoError(t, e.Client.HSet(ctx, p+"chat:admin:dashboard:123",
		"total_active", "45", "assigned_to_me", "12", "unread_count", "5", "avg_response_time", "4.2").Err())
	stats := p + "chat:admin:stats:123"
	require.NoError(t, e.Client.HSet(ctx, stats, "day", "monday").Err())
	before := e.Snapshot()
	_, err = c.Dashboard(ctx, "123")
	corruptAt(t, err, stats)
	assert.Equal(t, before, e.Snapshot(), "the backend's cache is not deleted")
}
