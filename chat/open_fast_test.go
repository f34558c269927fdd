package chat

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/presence"
)

// openFullOp is Open's script without its fast path (open_fast.lua):
// open.lua alone.
var openFullOp = conversational("open", openLua)

// openTrace runs a sequence of Opens (and the calls that set up each
// case) on a deployment (tag) with the script op, and returns what each
// Open left: the reply, the routing state (sets, backlog, states'
// admins, active, unread), which dashboard caches survived, which shared keys'
// TTLs it refreshed, the request memo's members and the events, with times,
// stamps and request IDs replaced.
func openTrace(t *testing.T, e *harness.Env, tag string, strategy Strategy, op *call.Op) []string {
	t.Helper()
	defer func(o *call.Op) { openOp = o }(openOp)
	openOp = op
	ctx := e.Ctx()
	c := newChat(t, e, WithTag(tag), WithStrategy(strategy))
	ids := []string{"a1", "a 2", "a3"}
	for _, id := range ids {
		require.NoError(t, c.AddAdmin(ctx, id, 2))
		require.NoError(t, c.Availability().Set(ctx, id, presence.Online))
	}
	sub, err := c.Subscribe(ctx, EventAssigned, EventResolved)
	require.NoError(t, err)
	defer func() { _ = sub.Close() }()
	member := regexp.MustCompile(`^[0-9a-f]{16}(=[0-9a-f,]+)?$`)
	appendTime := regexp.MustCompile(`^(R=[0-9a-f]+,)[0-9a-f]{8,}$`) // an Append's reply: its time
	var out []string
	open := func(conv string) {
		for _, id := range ids {
			_, err := c.Dashboard(ctx, id)
			require.NoError(t, err)
		}
		for _, k := range c.global { // to tell which TTLs Open refreshes
			require.NoError(t, e.Client.PExpire(ctx, k, time.Minute).Err())
		}
		a, err := c.Open(ctx, conv, High)
		require.NoError(t, err)
		s := c.snapshot(t)
		states := map[string]string{}
		for k, v := range s.states {
			st, ok := parseState(v, time.Now().UnixMilli()+1e9)
			require.True(t, ok, v)
			states[k] = fmt.Sprint(st.band, " ", st.waiting > 0, " ", st.admin)
		}
		unread, err := e.Client.ZRange(ctx, c.global[2], 0, -1).Result()
		require.NoError(t, err)
		line := []any{a, s.sets, s.backlog, states, s.active, unread}
		for _, id := range ids {
			q, err := c.adminKeys("test", id)
			require.NoError(t, err)
			n, err := e.Client.Exists(ctx, q[3]).Result()
			require.NoError(t, err)
			ttl, err := e.Client.PTTL(ctx, q[1]).Result()
			require.NoError(t, err)
			line = append(line, n, ttl > 0 || ttl == -2)
		}
		for _, k := range c.global {
			ttl, err := e.Client.PTTL(ctx, k).Result()
			require.NoError(t, err)
			line = append(line, ttl > time.Minute || ttl == -2)
		}
		rk, err := c.convKey("test", requestsKey, conv)
		require.NoError(t, err)
		memo, err := e.Client.ZRange(ctx, rk, 0, -1).Result()
		require.NoError(t, err)
		var shapes []string
		for _, m := range memo {
			require.Regexp(t, member, m)
			shapes = append(shapes, appendTime.ReplaceAllString(member.ReplaceAllString(m, "R${1}"), "${1}T"))
		}
		slices.Sort(shapes)
		line = append(line, strings.Join(shapes, " "))
		for _, ev := range collect(t, sub, 100*time.Millisecond) {
			line = append(line, ev.Kind, ev.Conversation, ev.Admin, ev.Previous, ev.Reason)
		}
		out = append(out, fmt.Sprintf("%q", fmt.Sprint(line...)))
	}
	open("c1") // the fast path's case
	_, err = c.Append(ctx, "c1", Message{Content: "hi", SenderRole: User})
	require.NoError(t, err)
	open("c2") // with an unread queue
	open("c1") // open already
	open("c3")
	open("c4") // to the admin with a space in their ID
	// A member of the active set and unread without a state.
	require.NoError(t, e.Client.ZAdd(ctx, c.global[1], redis.Z{Score: float64(time.Now().UnixMilli()), Member: "c5"}).Err())
	require.NoError(t, e.Client.ZAdd(ctx, c.global[2], redis.Z{Score: 1, Member: "c5"}).Err())
	open("c5")
	// Away and offline admins, and an offline one who holds conversations.
	require.NoError(t, c.Availability().Set(ctx, "a1", presence.Away))
	require.NoError(t, c.Availability().Set(ctx, "a3", presence.Offline))
	open("c6")
	require.NoError(t, c.Availability().Set(ctx, "a1", presence.Online))
	require.NoError(t, c.Availability().Set(ctx, "a3", presence.Online))
	open("c7")
	open("c8") // everyone full: the backlog
	open("c9") // a backlog before it
	_, err = c.Resolve(ctx, "c1")
	require.NoError(t, err)
	collect(t, sub, 100*time.Millisecond)
	open(`c"10`) // a JSON escape
	return out
}

// TestOpenFastPathMatchesScript: Open with its fast path leaves what
// open.lua alone leaves, call after call (new and open conversations,
// both strategies, an admin ID with a space, a member without a state,
// away and offline admins, full admins and the backlog, a JSON escape):
// the replies, sets, states, queues, dashboards, TTLs, request memos
// and events.
func TestOpenFastPathMatchesScript(t *testing.T) {
	e := harness.New(t)
	for _, s := range []Strategy{LeastLoaded, RoundRobin} {
		fast := openTrace(t, e, fmt.Sprint("fast", s), s, openOp)
		full := openTrace(t, e, fmt.Sprint("full", s), s, openFullOp)
		assert.Equal(t, full, fast)
	}
}

// TestOpenFastPathReplays: a request that ran through the fast path is
// replayed by the script behind it, unchanged.
func TestOpenFastPathReplays(t *testing.T) {
	e := harness.New(t)
	ctx := context.Background()
	c := newChat(t, e)
	team(t, c, 2, 10)
	req := newRequestID()
	var got []string
	for range 2 {
		rep, err := c.route(ctx, openOp, "open", req, "", []string{mustKey(t, c, "c1")}, "c1", 2)
		require.NoError(t, err)
		got = append(got, fmt.Sprint(rep.Str(0), " ", rep.Int(1)))
		require.NoError(t, rep.Err())
	}
	assert.Equal(t, []string{"a1 1", "a1 1"}, got, "the first reply, again")
	n, err := e.Client.SCard(ctx, mustAdminKey(t, c, "a1", 1)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "assigned once")
}

func mustAdminKey(t *testing.T, c *Chat, id string, j int) string {
	t.Helper()
	q, err := c.adminKeys("test", id)
	require.NoError(t, err)
	return q[j]
}
