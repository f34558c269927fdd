package chat

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// world is a deployment with admin a1 (capacity 10, online) holding
// conversation c1, which has one unread user message, and today's
// stats (no cached dashboard: Dashboard computes it).
type world struct {
	e   *harness.Env
	c   *Chat
	a1  []string // a1's availability, assignments, stats, dashboard keys
	msg string   // c1's messages key
	rep string   // c1's request memo
}

func newWorld(t *testing.T) *world {
	e := harness.New(t)
	ctx := e.Ctx()
	w := &world{e: e, c: newChat(t, e)}
	team(t, w.c, 1, 10)
	_, err := w.c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	_, err = w.c.Append(ctx, "c1", Message{Content: "help", SenderRole: User})
	require.NoError(t, err)
	_, err = w.c.Open(ctx, "c0", Normal)
	require.NoError(t, err)
	_, err = w.c.Resolve(ctx, "c0")
	require.NoError(t, err)
	w.a1, err = w.c.adminKeys("test", "a1")
	require.NoError(t, err)
	w.msg, _ = w.c.convKey("test", messagesKey, "c1")
	w.rep, _ = w.c.convKey("test", requestsKey, "c1")
	return w
}

// cached computes a1's dashboard into its cache.
func cached(t *testing.T, w *world) {
	t.Helper()
	_, err := w.c.Dashboard(context.Background(), "a1")
	require.NoError(t, err)
}

type op func(ctx context.Context, c *Chat) error

var (
	opOpen      op = func(ctx context.Context, c *Chat) error { _, err := c.Open(ctx, "c9", Normal); return err }
	opReconcile op = func(ctx context.Context, c *Chat) error { _, err := c.Reconcile(ctx); return err }
	opAdmins    op = func(ctx context.Context, c *Chat) error { _, err := c.Admins(ctx); return err }
	opConv      op = func(ctx context.Context, c *Chat) error { _, err := c.Conversation(ctx, "c1"); return err }
	opAppend    op = func(ctx context.Context, c *Chat) error {
		_, err := c.Append(ctx, "c1", Message{Content: "x", SenderRole: User})
		return err
	}
	opReply op = func(ctx context.Context, c *Chat) error {
		_, err := c.Append(ctx, "c1", Message{Content: "x", SenderRole: Admin})
		return err
	}
	opResolve  op = func(ctx context.Context, c *Chat) error { _, err := c.Resolve(ctx, "c1"); return err }
	opAssign   op = func(ctx context.Context, c *Chat) error { _, err := c.Assign(ctx, "c1", "a1"); return err }
	opPriority op = func(ctx context.Context, c *Chat) error { _, err := c.SetPriority(ctx, "c1", Urgent); return err }
	opRead     op = func(ctx context.Context, c *Chat) error { _, err := c.MarkRead(ctx, "c1"); return err }
	opUnread   op = func(ctx context.Context, c *Chat) error { _, err := c.Unread(ctx, 10); return err }
	opBacklog  op = func(ctx context.Context, c *Chat) error { _, err := c.Backlog(ctx, 10); return err }
	opActive   op = func(ctx context.Context, c *Chat) error { _, err := c.Active(ctx, 10); return err }
	opDash     op = func(ctx context.Context, c *Chat) error { _, err := c.Dashboard(ctx, "a1"); return err }
	opMessages op = func(ctx context.Context, c *Chat) error { _, err := c.Messages(ctx, "c1", 10, 0); return err }
	opPage     op = func(ctx context.Context, c *Chat) error { _, err := c.Messages(ctx, "c1", 10, 2); return err }
	opAssigns  op = func(ctx context.Context, c *Chat) error { _, err := c.Assignments(ctx, "a1"); return err }
)

// replace deletes k and runs write on it (with a TTL unless keep).
func replace(t *testing.T, w *world, k string, write func(ctx context.Context, rdb redis.UniversalClient) error) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, w.e.Client.Del(ctx, k).Err())
	require.NoError(t, write(ctx, w.e.Client))
	return k
}

func asString(t *testing.T, w *world, k string) string {
	return replace(t, w, k, func(ctx context.Context, r redis.UniversalClient) error { return r.Set(ctx, k, "x", time.Hour).Err() })
}

func asList(t *testing.T, w *world, k string) string {
	return replace(t, w, k, func(ctx context.Context, r redis.UniversalClient) error { return r.RPush(ctx, k, "x").Err() })
}

func hset(t *testing.T, w *world, k string, kv ...any) string {
	t.Helper()
	require.NoError(t, w.e.Client.HSet(context.Background(), k, kv...).Err())
	return k
}

func zadd(t *testing.T, w *world, k string, score float64, m string) string {
	t.Helper()
	require.NoError(t, w.e.Client.ZAdd(context.Background(), k, redis.Z{Score: score, Member: m}).Err())
	return k
}

// TestCorruption puts a wrong type, garbage and out-of-range values at
// each key pattern the package reads: every operation that reads it fails
// with keys.ErrCorrupt naming that exact key.
func TestCorruption(t *testing.T) {
	farFuture := float64(time.Now().Add(48*time.Hour).UnixMilli()) * 10
	cases := []struct {
		name  string
		plant func(t *testing.T, w *world) string
		ops   []op
	}{
		{"state: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.c.global[0]) },
			[]op{opOpen, opReconcile, opConv, opAppend, opResolve}},
		{"state: garbage", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[0], "c1", "garbage") },
			[]op{opConv, opAppend, opResolve, opAssign, opPriority, opRead}},
		{"state: band out of range", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[0], "c1", "7 5 0 a1") },
			[]op{opConv, opResolve}},
		{"state: stamp out of range", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[0], "c1", "1 0 0 a1") },
			[]op{opConv, opAppend}},
		{"state: wait in the future", func(t *testing.T, w *world) string {
			return hset(t, w, w.c.global[0], "c1", fmt.Sprintf("1 5 %.0f a1", farFuture))
		}, []op{opConv, opReply}},
		{"active: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.c.global[1]) },
			[]op{opOpen, opActive, opUnread, opDash, opAppend, opConv}},
		{"active: time in the future", func(t *testing.T, w *world) string { return zadd(t, w, w.c.global[1], farFuture, "c1") },
			[]op{opAppend, opConv, opResolve}},
		{"unread: wrong type", func(t *testing.T, w *world) string { return asList(t, w, w.c.global[2]) },
			[]op{opOpen, opAppend, opRead, opUnread, opConv}},
		{"unread: score out of range", func(t *testing.T, w *world) string { return zadd(t, w, w.c.global[2], 1<<60, "c1") },
			[]op{opUnread, opPriority, opConv}},
		{"unread: fractional score", func(t *testing.T, w *world) string { return zadd(t, w, w.c.global[2], 1.5, "c1") },
			[]op{opUnread, opPriority}},
		{"backlog: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.c.global[3]) },
			[]op{opOpen, opReconcile, opBacklog}},
		{"backlog: score out of range", func(t *testing.T, w *world) string { return zadd(t, w, w.c.global[3], -5, "c1") },
			[]op{opBacklog}},
		{"roster: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.c.global[4]) },
			[]op{opOpen, opAdmins, opReconcile, opAppend}},
		{"roster: garbage capacity", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[4], "a1", "lots") },
			[]op{opOpen, opAdmins, opReconcile}},
		{"roster: capacity 0", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[4], "a1", "0") },
			[]op{opOpen, opAdmins}},
		{"roster: capacity above the maximum", func(t *testing.T, w *world) string {
			return hset(t, w, w.c.global[4], "a1", fmt.Sprint(maxCapacity+1))
		}, []op{opOpen, opReconcile}},
		{"roster: an ID that is no admin's", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[4], "", "3") },
			[]op{opOpen, opAdmins}},
		{"cursor: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.c.global[5]) },
			[]op{opOpen, opReconcile}},
		{"cursor: garbage stamp", func(t *testing.T, w *world) string { return hset(t, w, w.c.global[5], "stamp", "abc") },
			[]op{opOpen}},
		{"cursor: stamp in the future", func(t *testing.T, w *world) string {
			return hset(t, w, w.c.global[5], "stamp", fmt.Sprintf("%.0f", farFuture*512))
		}, []op{opOpen}},
		{"assignments: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.a1[1]) },
			[]op{opOpen, opReconcile, opAdmins, opDash, opAssigns}},
		{"assignments: more than any capacity", func(t *testing.T, w *world) string {
			m := make([]any, maxCapacity+1)
			for i := range m {
				m[i] = fmt.Sprint("x", i)
			}
			require.NoError(t, w.e.Client.SAdd(context.Background(), w.a1[1], m...).Err())
			return w.a1[1]
		}, []op{opOpen, opReconcile, opDash}},
		{"availability: wrong type", func(t *testing.T, w *world) string { return asList(t, w, w.a1[0]) },
			[]op{opOpen, opAdmins, opReconcile}},
		{"availability: garbage", func(t *testing.T, w *world) string {
			return replace(t, w, w.a1[0], func(ctx context.Context, r redis.UniversalClient) error {
				return r.Set(ctx, w.a1[0], "sleeping", time.Minute).Err()
			})
		}, []op{opOpen, opAdmins, opReconcile}},
		{"availability: no TTL", func(t *testing.T, w *world) string {
			return replace(t, w, w.a1[0], func(ctx context.Context, r redis.UniversalClient) error {
				return r.Set(ctx, w.a1[0], "online", 0).Err()
			})
		}, []op{opOpen, opReconcile}},
		{"availability: TTL above 30 min", func(t *testing.T, w *world) string {
			return replace(t, w, w.a1[0], func(ctx context.Context, r redis.UniversalClient) error {
				return r.Set(ctx, w.a1[0], "online", 2*time.Hour).Err()
			})
		}, []op{opOpen}},
		{"stats: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.a1[2]) },
			[]op{opResolve, opDash}},
		{"stats: garbage day", func(t *testing.T, w *world) string { return hset(t, w, w.a1[2], "day", "monday") },
			[]op{opResolve, opReply}},
		{"stats: garbage count", func(t *testing.T, w *world) string { return hset(t, w, w.a1[2], "resolved", "-") },
			[]op{opResolve}},
		{"stats: day in the future", func(t *testing.T, w *world) string {
			return hset(t, w, w.a1[2], "day", fmt.Sprint(time.Now().UnixMilli()/86400000+100))
		}, []op{opResolve}},
		{"dashboard: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.a1[3]) },
			[]op{opDash}},
		{"dashboard: garbage", func(t *testing.T, w *world) string {
			cached(t, w)
			return hset(t, w, w.a1[3], "total_active", "many")
		}, []op{opDash}},
		{"dashboard: out of range", func(t *testing.T, w *world) string {
			cached(t, w)
			return hset(t, w, w.a1[3], "avg_response_time", "-1")
		}, []op{opDash}},
		{"dashboard: average past time.Duration", func(t *testing.T, w *world) string {
			cached(t, w)
			return hset(t, w, w.a1[3], "avg_response_time", "200000000") // minutes: 380 years
		}, []op{opDash}},
		{"dashboard: partial", func(t *testing.T, w *world) string {
			return replace(t, w, w.a1[3], func(ctx context.Context, r redis.UniversalClient) error {
				return r.HSet(ctx, w.a1[3], "unread_count", "3").Err()
			})
		}, []op{opDash}},
		{"messages: wrong type", func(t *testing.T, w *world) string { return asString(t, w, w.msg) },
			[]op{opAppend, opMessages}},
		{"messages: garbage head", func(t *testing.T, w *world) string {
			require.NoError(t, w.e.Client.LPush(context.Background(), w.msg, "hello").Err())
			return w.msg
		}, []op{opAppend, opMessages, opPage}},
		{"messages: IDs out of order", func(t *testing.T, w *world) string {
			require.NoError(t, w.e.Client.LPush(context.Background(), w.msg,
				`{"id":9,"content":"x","sender_role":"user","timestamp":"2025-06-27T10:00:00.000Z"}`).Err())
			return w.msg
		}, []op{opMessages}},
		{"messages: unknown role", func(t *testing.T, w *world) string {
			require.NoError(t, w.e.Client.LPush(context.Background(), w.msg,
				`{"id":2,"content":"x","sender_role":"bot","timestamp":"2025-06-27T10:00:00.000Z"}`).Err())
			return w.msg
		}, []op{opMessages}},
		{"requests: a list", func(t *testing.T, w *world) string { return asList(t, w, w.rep) },
			[]op{opAppend, opResolve, opRead}},
		{"requests: a string (the replay record of older versions)", func(t *testing.T, w *world) string {
			return replace(t, w, w.rep, func(ctx context.Context, r redis.UniversalClient) error {
				return r.Set(ctx, w.rep, "not a record", time.Minute).Err()
			})
		}, []op{opAppend, opResolve, opAssign}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, f := range tc.ops {
				w := newWorld(t)
				k := tc.plant(t, w)
				err := f(w.e.Ctx(), newChat(t, w.e))
				require.Error(t, err, "op %d", i)
				assert.ErrorIs(t, err, keys.ErrCorrupt, "op %d: %v", i, err)
				assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", k)), "op %d: %v does not name %s", i, err, k)
				if reflect.ValueOf(f).Pointer() == reflect.ValueOf(opAppend).Pointer() && k != w.c.global[4] {
					// Append by a Chat that knows the roster runs its fast
					// path up to the corrupt key; append.lua names it.
					w := newWorld(t)
					k := tc.plant(t, w)
					err := f(w.e.Ctx(), w.c)
					assert.ErrorIs(t, err, keys.ErrCorrupt, "fast path: %v", err)
					assert.True(t, err != nil && strings.Contains(err.Error(), fmt.Sprintf("%q", k)), "fast path: %v does not name %s", err, k)
				}
			}
		})
	}
}
