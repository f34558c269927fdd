package chat

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// appendFullOp is Append's script without its fast path
// (append_fast.lua): append.lua alone.
var appendFullOp = conversational("append", appendLua, call.Needs(call.RFC3339), call.On(call.None, ErrNotFound))

// appendTrace runs Append's calls on a deployment (tag) with the script
// op and returns what each left: the reply, the conversation, the
// messages, the unread queue, whether the admin's dashboard cache
// survived, the request memo's members and the events, with times and
// request IDs replaced by "T" and "R".
func appendTrace(t *testing.T, e *harness.Env, tag string, op *call.Op) []string {
	t.Helper()
	defer func(o *call.Op) { appendOp = o }(appendOp)
	appendOp = op
	ctx := e.Ctx()
	c := newChat(t, e, WithTag(tag), WithMessageCache(3))
	team(t, c, 2, 10)
	sub, err := c.Subscribe(ctx, EventMessage, EventRead)
	require.NoError(t, err)
	defer func() { _ = sub.Close() }()
	for _, id := range []string{"c1", "c2"} {
		_, err := c.Open(ctx, id, High)
		require.NoError(t, err)
	}
	rk, err := c.convKey("test", requestsKey, "c1")
	require.NoError(t, err)
	// A request is two members: its ID, and its ID=hex(message ID),hex(time).
	member := regexp.MustCompile(`^[0-9a-f]{16}(?:(=[0-9a-f]+,)[0-9a-f]+)?$`)
	var out []string
	for _, m := range []Message{
		{Content: "hi", SenderRole: User},
		{Content: "again", SenderRole: User, SenderID: "u1"},
		{Content: "note", SenderRole: System},
		{Content: "reply", SenderRole: Admin, SenderID: "a1"},
		{Content: "back", SenderRole: User},
		{Content: `quote " and \ and` + "\n", SenderRole: User},
		{Content: "ünïcode/<>&", SenderRole: User, SenderID: "u 2"},
	} {
		_, err := c.Dashboard(ctx, "a1")
		require.NoError(t, err)
		_, err = c.Dashboard(ctx, "a2")
		require.NoError(t, err)
		got, err := c.Append(ctx, "c1", m)
		require.NoError(t, err)
		cv, err := c.Conversation(ctx, "c1")
		require.NoError(t, err)
		page, err := c.Messages(ctx, "c1", 10, 0)
		require.NoError(t, err)
		unread, err := c.Unread(ctx, 10)
		require.NoError(t, err)
		var dash []int64
		for _, a := range []string{"a1", "a2"} {
			q, err := c.adminKeys("test", a)
			require.NoError(t, err)
			n, err := e.Client.Exists(ctx, q[3]).Result()
			require.NoError(t, err)
			dash = append(dash, n)
		}
		memo, err := e.Client.ZRangeWithScores(ctx, rk, 0, -1).Result()
		require.NoError(t, err)
		var shapes []string
		for _, z := range memo {
			m := z.Member.(string)
			require.Regexp(t, member, m)
			shape := member.ReplaceAllString(m, "R${1}")
			if strings.HasSuffix(shape, ",") {
				shape += "T"
			}
			shapes = append(shapes, shape)
		}
		slices.Sort(shapes)
		last := memo[len(memo)-1].Score
		line := []any{got.ID, got.Timestamp.Equal(cv.LastActivity), cv.Admin, cv.Priority, cv.Unread, cv.AwaitingReply.IsZero(), dash,
			last == float64(got.Timestamp.UnixMilli()), strings.Join(shapes, " ")}
		for _, p := range page {
			assert.Equal(t, p.Timestamp.UnixMilli(), p.Timestamp.Truncate(time.Millisecond).UnixMilli())
			line = append(line, p.ID, p.Content, p.SenderRole, p.SenderID)
		}
		for _, u := range unread {
			line = append(line, u.Conversation, u.Priority)
		}
		for _, ev := range collect(t, sub, 100*time.Millisecond) {
			line = append(line, ev.Kind, ev.Conversation, ev.Admin, ev.Previous, ev.Reason)
			if ev.Message != nil {
				line = append(line, ev.Message.ID, ev.Message.Content, ev.Message.SenderID, ev.Message.Timestamp.Equal(got.Timestamp))
			}
		}
		out = append(out, fmt.Sprintf("%q", fmt.Sprint(line...)))
	}
	return out
}

// TestAppendFastPathMatchesScript: Append with its fast path leaves what
// append.lua alone leaves, message after message (user, system and admin
// ones, a trimmed cache, JSON escapes, the unread queue, dashboards,
// request memos, events).
func TestAppendFastPathMatchesScript(t *testing.T) {
	e := harness.New(t)
	fast := appendTrace(t, e, "fast", appendOp)
	full := appendTrace(t, e, "full", appendFullOp)
	assert.Equal(t, full, fast)
}

// TestAppendFastPathReplays: a request that ran is replayed by the
// script behind the fast path, unchanged.
func TestAppendFastPathReplays(t *testing.T) {
	e := harness.New(t)
	ctx := context.Background()
	c := newChat(t, e)
	team(t, c, 1, 10)
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	mk, err := c.convKey("test", messagesKey, "c1")
	require.NoError(t, err)
	req := newRequestID()
	var got [][2]int64
	for range 2 {
		rep, err := c.route(ctx, appendOp, "append", req, "", []string{mustKey(t, c, "c1"), mk}, "c1", "user", "hi", "", 100)
		require.NoError(t, err)
		got = append(got, [2]int64{rep.Int(0), rep.Int(1)})
		require.NoError(t, rep.Err())
	}
	assert.Equal(t, got[0], got[1], "the first reply, again")
	n, err := e.Client.LLen(ctx, mk).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "cached once")
}

func mustKey(t *testing.T, c *Chat, id string) string {
	t.Helper()
	k, err := c.convKey("test", requestsKey, id)
	require.NoError(t, err)
	return k
}
