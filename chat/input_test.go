package chat

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestNewRejectsBadOptions(t *testing.T) {
	e := harness.New(t)
	noDeadlines := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noDeadlines.Close()
	for name, opts := range map[string][]Option{
		"empty tag":        {WithTag("")},
		"long tag":         {WithTag(strings.Repeat("t", maxIDLen+1))},
		"strategy":         {WithStrategy(7)},
		"capacity 0":       {WithCapacity(-1)},
		"capacity":         {WithCapacity(maxCapacity + 1)},
		"conversation TTL": {WithConversationTTL(time.Millisecond)},
		"long TTL":         {WithConversationTTL(maxConversationTTL + 1)},
		"dashboard TTL":    {WithDashboardTTL(0)},
		"long dashboard":   {WithDashboardTTL(2 * time.Hour)},
		"cache":            {WithMessageCache(0)},
		"big cache":        {WithMessageCache(maxMessageCache + 1)},
		"pipelining":       {WithPipelining(-1)},
		"many pipelines":   {WithPipelining(call.MaxLanes + 1)},
		"namespace":        {WithNamespace(keys.Namespace{Prefix: "a{b"})},
	} {
		_, err := New(e.Client, opts...)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	_, err := New(nil)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = New(noDeadlines)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "ContextTimeoutEnabled")
}

// TestBadInputWritesNothing: every bad input is ErrInvalid before any
// write (the namespace stays empty), and a bad ID also matches
// keys.ErrInvalid.
func TestBadInputWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	long := strings.Repeat("x", maxIDLen+1)
	bad := "\xff\xfe"
	for name, f := range map[string]func() error{
		"open empty":     func() error { _, err := c.Open(ctx, "", Normal); return err },
		"open long":      func() error { _, err := c.Open(ctx, long, Normal); return err },
		"open not utf-8": func() error { _, err := c.Open(ctx, bad, Normal); return err },
		"open priority":  func() error { _, err := c.Open(ctx, "c", "critical"); return err },
		"assign admin":   func() error { _, err := c.Assign(ctx, "c", ""); return err },
		"assign conv":    func() error { _, err := c.Assign(ctx, "", "a"); return err },
		"transfer from":  func() error { _, err := c.Transfer(ctx, "c", "", "a"); return err },
		"transfer to":    func() error { _, err := c.Transfer(ctx, "c", "a", long); return err },
		"unassign":       func() error { _, err := c.Unassign(ctx, ""); return err },
		"resolve":        func() error { _, err := c.Resolve(ctx, long); return err },
		"priority":       func() error { _, err := c.SetPriority(ctx, "c", "whenever"); return err },
		"priority conv":  func() error { _, err := c.SetPriority(ctx, "", High); return err },
		"append role":    func() error { _, err := c.Append(ctx, "c", Message{Content: "x", SenderRole: "bot"}); return err },
		"append no role": func() error { _, err := c.Append(ctx, "c", Message{Content: "x"}); return err },
		"append oversize": func() error {
			_, err := c.Append(ctx, "c", Message{Content: strings.Repeat("x", maxContentLen+1), SenderRole: User})
			return err
		},
		"append not utf-8": func() error { _, err := c.Append(ctx, "c", Message{Content: bad, SenderRole: User}); return err },
		"append sender": func() error {
			_, err := c.Append(ctx, "c", Message{Content: "x", SenderRole: User, SenderID: long})
			return err
		},
		"append conv":       func() error { _, err := c.Append(ctx, "", Message{Content: "x", SenderRole: User}); return err },
		"messages limit 0":  func() error { _, err := c.Messages(ctx, "c", 0, 0); return err },
		"messages limit":    func() error { _, err := c.Messages(ctx, "c", maxPage+1, 0); return err },
		"messages before":   func() error { _, err := c.Messages(ctx, "c", 5, -1); return err },
		"messages conv":     func() error { _, err := c.Messages(ctx, "", 5, 0); return err },
		"mark read":         func() error { _, err := c.MarkRead(ctx, ""); return err },
		"unread limit":      func() error { _, err := c.Unread(ctx, 0); return err },
		"backlog limit":     func() error { _, err := c.Backlog(ctx, maxPage+1); return err },
		"active limit":      func() error { _, err := c.Active(ctx, -1); return err },
		"add admin":         func() error { return c.AddAdmin(ctx, "", 3) },
		"add capacity":      func() error { return c.AddAdmin(ctx, "a", -1) },
		"add capacity high": func() error { return c.AddAdmin(ctx, "a", maxCapacity+1) },
		"remove admin":      func() error { return c.RemoveAdmin(ctx, long) },
		"dashboard":         func() error { _, err := c.Dashboard(ctx, ""); return err },
		"assignments":       func() error { _, err := c.Assignments(ctx, ""); return err },
		"conversation":      func() error { _, err := c.Conversation(ctx, ""); return err },
		"reconciler":        func() error { return c.RunReconciler(ctx, time.Millisecond, nil) },
	} {
		err := f()
		assert.ErrorIs(t, err, ErrInvalid, name)
		assert.True(t, strings.HasPrefix(err.Error(), "chat: "), "%s: %v", name, err)
		assert.Equal(t, 1, strings.Count(err.Error(), "chat: "), "%s: one prefix: %v", name, err)
	}
	for name, f := range map[string]func() error{
		"empty conversation": func() error { _, err := c.Open(ctx, "", Normal); return err },
		"empty admin":        func() error { return c.AddAdmin(ctx, "", 1) },
		"not utf-8":          func() error { _, err := c.Resolve(ctx, bad); return err },
	} {
		assert.ErrorIs(t, f(), keys.ErrInvalid, name)
	}
	assert.Empty(t, e.Keys(), "nothing written")
	// At the bounds, accepted.
	require.NoError(t, c.AddAdmin(ctx, strings.Repeat("a", maxIDLen), maxCapacity))
	_, err := c.Open(ctx, strings.Repeat("c", maxIDLen), Urgent)
	require.NoError(t, err)
	_, err = c.Append(ctx, strings.Repeat("c", maxIDLen), Message{Content: strings.Repeat("é", maxContentLen/2), SenderRole: User, SenderID: strings.Repeat("u", maxIDLen)})
	require.NoError(t, err)
}
