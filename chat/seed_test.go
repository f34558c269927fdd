package chat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// TestSeedWithoutTagRefusals: WithoutTag is for a standalone server with
// the backend's untagged keys; on a cluster New refuses it (this is what
// the cluster run proves), and everywhere with hash tags or WithTag.
func TestSeedWithoutTagRefusals(t *testing.T) {
	e := harness.New(t)
	bare := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
	_, err := New(e.Client, WithNamespace(e.NS), WithoutTag())
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "NoHashTags")
	_, err = New(e.Client, WithNamespace(bare), WithoutTag(), WithTag("support"))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(e.Client, WithNamespace(bare), WithoutTag())
	if e.Backend == harness.Cluster {
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), "standalone server")
		_, err = NewInspector(e.Client, WithNamespace(bare), WithoutTag())
		require.ErrorIs(t, err, ErrInvalid)
		return
	}
	require.NoError(t, err)
}

// TestSeedChatSharesTheBackendsKeys runs the home-automation backend's
// own chat code (seed 000 §5, node-redis 4, transcribed command for
// command) against a Chat WithoutTag: the admin it sets online (with no
// TTL, as node-redis leaves it) gets the conversation, and the backend's
// reads of the assignment set, the queues, the message cache, the
// dashboard and the availability find what the Chat wrote, at the
// backend's own keys.
func TestSeedChatSharesTheBackendsKeys(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
	c, err := New(e.Client, WithNamespace(ns), WithoutTag())
	if e.Backend == harness.Cluster {
		// Standalone-only: the cluster refuses the mode before any key is
		// written.
		require.ErrorIs(t, err, ErrInvalid)
		assert.Empty(t, e.Keys())
		return
	}
	require.NoError(t, err)
	p := e.NS.Prefix // the backend's REDIS_KEY_PREFIX

	// await client.set('ha:admin:123:presence', 'online', 'EX', 1800):
	// node-redis 4 drops the positional EX.
	require.NoError(t, e.Client.Do(ctx, "SET", p+"admin:123:presence", "online").Err())
	k, err := c.Availability().Key("123")
	require.NoError(t, err)
	require.Equal(t, p+"admin:123:presence", k, "chat reads the backend's availability key")

	require.NoError(t, c.AddAdmin(ctx, "123", 0))
	a, err := c.Open(ctx, "456", High)
	require.NoError(t, err, "an availability without a TTL is the backend's word, not corrupt")
	assert.Equal(t, "123", a.Admin, "the admin the backend set online gets the conversation")
	_, err = c.Append(ctx, "456", Message{Content: "My lights are off", SenderRole: User, SenderID: "u1"})
	require.NoError(t, err)

	// The backend's reads.
	n, err := e.Client.SCard(ctx, p+"admin:123:assignments").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "SCARD ha:admin:123:assignments")
	assert.True(t, e.Client.SIsMember(ctx, p+"admin:123:assignments", "456").Val())
	isOnline := e.Client.Get(ctx, p+"admin:123:presence").Val()
	assert.True(t, isOnline == "online" && n < 10, "the backend's assignment check passes")
	active, err := e.Client.ZRevRangeWithScores(ctx, p+"chat:conversations:active", 0, 9).Result()
	require.NoError(t, err)
	require.Len(t, active, 1)
	assert.Equal(t, "456", active[0].Member)
	assert.InDelta(t, float64(e.Now().UnixMilli()), active[0].Score, float64(time.Minute.Milliseconds()), "scored by Date.now()")
	unread, err := e.Client.ZRevRange(ctx, p+"chat:conversations:unread", 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"456"}, unread, "ZREVRANGE ha:chat:conversations:unread 0 -1")

	_, err = c.Append(ctx, "456", Message{Content: "Hello, how can I help?", SenderRole: Admin, SenderID: "123"})
	require.NoError(t, err)
	msgs, err := e.Client.LRange(ctx, p+"chat:conversation:456:messages", 0, 19).Result()
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	var newest struct {
		ID         int64  `json:"id"`
		Content    string `json:"content"`
		SenderRole string `json:"sender_role"`
		Timestamp  string `json:"timestamp"`
	}
	require.NoError(t, json.Unmarshal([]byte(msgs[0]), &newest))
	assert.Equal(t, "Hello, how can I help?", newest.Content, "LPUSH order: newest first")
	assert.Equal(t, "admin", newest.SenderRole)
	_, err = time.Parse("2006-01-02T15:04:05.000Z", newest.Timestamp)
	assert.NoError(t, err, "new Date().toISOString()")
	assert.Positive(t, e.Client.PTTL(ctx, p+"chat:conversation:456:messages").Val())

	_, err = c.Dashboard(ctx, "123")
	require.NoError(t, err)
	dash, err := e.Client.HGetAll(ctx, p+"chat:admin:dashboard:123").Result()
	require.NoError(t, err)
	for _, f := range []string{"total_active", "assigned_to_me", "unread_count", "avg_response_time"} {
		assert.Contains(t, dash, f, "HGET ha:chat:admin:dashboard:123 %s", f)
	}
	assert.Equal(t, "1", dash["total_active"])
	assert.Equal(t, "1", dash["assigned_to_me"])

	// Every key is the backend's, or one the library adds beside them;
	// none carries a tag segment (the unread queue went with the admin's
	// reply).
	want := []string{"admin:123:assignments", "admin:123:presence", "chat:admin:dashboard:123",
		"chat:conversation:456:messages", "chat:conversations:active"}
	added := []string{"chat:admin:stats:123", "chat:admins", "chat:conversation:456:requests",
		"chat:conversations:state", "chat:cursor"}
	var got []string
	for _, k := range e.Keys() {
		got = append(got, strings.TrimPrefix(k, p))
	}
	slices.Sort(got)
	all := slices.Concat(want, added)
	slices.Sort(all)
	assert.Equal(t, all, got)
	reg := harness.Registry(t, Schema())
	for _, k := range e.Keys() {
		_, _, ok := reg.Match(ns, k)
		if !strings.HasSuffix(k, ":presence") {
			assert.True(t, ok, "%s is registered (redschema audit finds no stray)", k)
		}
	}

	// The backend's own assignment flow on an admin it manages: a second
	// admin set online by the backend takes the next conversation.
	require.NoError(t, e.Client.Do(ctx, "SET", p+"admin:789:presence", "online").Err())
	require.NoError(t, c.AddAdmin(ctx, "789", 0))
	a, err = c.Open(ctx, "457", Normal)
	require.NoError(t, err)
	assert.Equal(t, "789", a.Admin, "least loaded")
	// Availability set by the library: the backend reads the word, with
	// the TTL the backend meant.
	require.NoError(t, c.Availability().Set(ctx, "789", "away"))
	assert.Equal(t, "away", e.Client.Get(ctx, p+"admin:789:presence").Val())
	left := e.Client.TTL(ctx, p+"admin:789:presence").Val()
	assert.True(t, left > 0 && left <= 1800*time.Second)
}

// TestSeedBackendsDashboardAndUnreadQueue: the backend's own dashboard
// cache (its four fields, no computed_at) is computed again and replaced,
// not reported as corrupt; and a conversation the backend queued as
// unread with its weight + Date.now() score (no state in the package) is
// skipped by Unread, not misread as a low-priority conversation queued
// in the next century.
func TestSeedBackendsDashboardAndUnreadQueue(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("WithoutTag is standalone-only: TestSeedWithoutTagRefusals proves the cluster's refusal")
	}
	ctx := e.Ctx()
	ns := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
	c, err := New(e.Client, WithNamespace(ns), WithoutTag())
	require.NoError(t, err)
	p := e.NS.Prefix
	require.NoError(t, c.Availability().Set(ctx, "123", "online"))
	require.NoError(t, c.AddAdmin(ctx, "123", 0))
	_, err = c.Open(ctx, "100", Normal)
	require.NoError(t, err)
	_, err = c.Append(ctx, "100", Message{Content: "hi", SenderRole: User})
	require.NoError(t, err)

	// The backend's code (seed 000 §5, node-redis's object form of zAdd).
	now := e.Now().UnixMilli()
	require.NoError(t, e.Client.SAdd(ctx, p+"admin:123:assignments", "456").Err())
	require.NoError(t, e.Client.ZAdd(ctx, p+"chat:conversations:active", redis.Z{Score: float64(now), Member: "456"}).Err())
	require.NoError(t, e.Client.ZAdd(ctx, p+"chat:conversations:unread", redis.Z{Score: float64(100 + now), Member: "456"}).Err())
	require.NoError(t, e.Client.HSet(ctx, p+"chat:admin:dashboard:123",
		"total_active", "45", "assigned_to_me", "12", "unread_count", "5", "avg_response_time", "4.2").Err())

	u, err := c.Unread(ctx, 10)
	require.NoError(t, err)
	require.Len(t, u, 1, "the backend's conversation has no state: skipped")
	assert.Equal(t, "100", u[0].Conversation)

	d, err := c.Dashboard(ctx, "123")
	require.NoError(t, err, "the backend's cache is not corrupt: it is computed again")
	assert.False(t, d.Cached)
	assert.NotEqual(t, 45, d.TotalActive, "computed from the keys, not the backend's numbers")
	h, err := e.Client.HGetAll(ctx, p+"chat:admin:dashboard:123").Result()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(d.TotalActive), h["total_active"], "the backend's HGETALL reads the package's cache")
	assert.NotEmpty(t, h["computed_at"])
	d2, err := c.Dashboard(ctx, "123")
	require.NoError(t, err)
	assert.True(t, d2.Cached, "the package's cache is then served")
}
