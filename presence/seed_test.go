package presence_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// The reference systems' own code, transcribed command for command as
// their clients send it, with the bytes they write: the home-automation
// backend's admin availability (seed 000 §5, node-redis 4) and the chat
// app's typing indicators (seed 004 §2, ioredis). Their keys are the
// test's prefix plus the seed's key.

// seedNS is the seeds' namespace: the test's prefix without hash tags,
// except on a cluster, where WithOtherWriters needs the tags (New refuses
// it without them: TestSeedOtherWritersClusterNeedsTags), so the flows
// there run on the tagged keys with the seeds' commands and values.
func seedNS(e *harness.Env) keys.Namespace {
	return keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: e.Backend != harness.Cluster}
}

// seedKeys is the chat app's KEYS pattern (every master of a cluster).
func seedKeys(t *testing.T, e *harness.Env, pattern string) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	require.NoError(t, keys.ForEachNode(e.Ctx(), e.Client, func(ctx context.Context, n redis.UniversalClient) error {
		ks, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	}))
	slices.Sort(out)
	return out
}

func TestSeedOtherWritersClusterNeedsTags(t *testing.T) {
	e := harness.New(t)
	_, err := presence.New(e.Client, presence.WithOtherWriters(), presence.WithNamespace(keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}))
	if e.Backend == harness.Cluster {
		require.ErrorIs(t, err, presence.ErrInvalid)
		assert.Contains(t, err.Error(), "hash tags")
	} else {
		require.NoError(t, err)
	}
}

// TestSeedAvailabilityWithoutTTL: the backend's
// client.set('ha:admin:123:presence', 'online', 'EX', 1800) through
// node-redis 4 sends SET key online (the positional EX is dropped), so the
// key has no TTL. With WithOtherWriters Get reads the word; Set gives the
// key its TTL back, and the backend's GET reads Set's word.
func TestSeedAvailabilityWithoutTTL(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := seedNS(e)
	tr, err := presence.New(e.Client, presence.WithNamespace(ns), presence.WithOtherWriters())
	require.NoError(t, err)
	av := tr.Availability()
	k, err := av.Key("123")
	require.NoError(t, err)
	if ns.NoHashTags {
		require.Equal(t, e.NS.Prefix+"admin:123:presence", k, "the seed's key, byte for byte")
	}

	// Node: await client.set(k, 'online', 'EX', 1800)
	require.NoError(t, e.Client.Do(ctx, "SET", k, "online").Err())
	require.Equal(t, time.Duration(-1), e.Client.PTTL(ctx, k).Val(), "node-redis stored no TTL")
	s, err := av.Get(ctx, "123")
	require.NoError(t, err, "another writer's key, not corrupt")
	assert.Equal(t, presence.Online, s)

	// Without the option the same key is corrupt (it would never go
	// offline): the strict default.
	strict, err := presence.New(e.Client, presence.WithNamespace(ns))
	require.NoError(t, err)
	_, err = strict.Availability().Get(ctx, "123")
	require.ErrorIs(t, err, keys.ErrCorrupt)

	// The library's next write applies its TTL; the backend reads it.
	require.NoError(t, av.Set(ctx, "123", presence.Away))
	left := e.Client.PTTL(ctx, k).Val()
	assert.True(t, left > 0 && left <= av.TTL(), "TTL %v", left)
	isOnline, err := e.Client.Get(ctx, k).Result()
	require.NoError(t, err)
	assert.Equal(t, "away", isOnline)
	require.NoError(t, av.Set(ctx, "123", presence.Online))
	isOnline, _ = e.Client.Get(ctx, k).Result()
	assert.Equal(t, "online", isOnline, "the backend's isOnline === 'online'")
	s, err = strict.Availability().Get(ctx, "123")
	require.NoError(t, err, "with its TTL back, the strict reader agrees")
	assert.Equal(t, presence.Online, s)
	e.RequireTTLs(nil)
}

// seedTyping is the chat app's "Start typing": SETEX typing:<c>:<u> 3 JSON.
func seedTyping(ctx context.Context, c redis.UniversalClient, k, user, username string, now time.Time) error {
	v, err := json.Marshal(struct {
		UserID    string `json:"userId"`
		Username  string `json:"username"`
		Timestamp int64  `json:"timestamp"`
	}{user, username, now.UnixMilli()})
	if err != nil {
		return err
	}
	return c.SetEx(ctx, k, v, 3*time.Second).Err()
}

// seedTypers is the chat app's "Get all typing users in a conversation":
// KEYS typing:<c>:*, MGET, JSON.parse.
func seedTypers(t *testing.T, e *harness.Env, pattern string) []string {
	t.Helper()
	var users []string
	for _, k := range seedKeys(t, e, pattern) {
		v, err := e.Client.Get(e.Ctx(), k).Result()
		require.NoError(t, err)
		var w struct {
			UserID    string `json:"userId"`
			Username  string `json:"username"`
			Timestamp int64  `json:"timestamp"`
		}
		require.NoError(t, json.Unmarshal([]byte(v), &w), "%s holds the seed's JSON", k)
		require.NotZero(t, w.Timestamp)
		users = append(users, w.UserID+"/"+w.Username)
	}
	return users
}

// TestSeedTypingBothWays: with WithOtherWriters Typers lists an indicator
// the chat app SETEXes and drops one it DELs at once; the app's KEYS and
// MGET read the indicators Start writes; and typing:* holds one key per
// typer, so the app's monitoring (KEYS typing:* | wc -l) counts each once.
func TestSeedTypingBothWays(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := seedNS(e)
	tr, err := presence.New(e.Client, presence.WithNamespace(ns), presence.WithOtherWriters())
	require.NoError(t, err)
	ty := tr.Typing()
	tk := func(c, u string) string {
		tm, ok := harness.Registry(t, presence.Schema()).Lookup("typing:{conversation_id}:{user_id}")
		require.True(t, ok)
		k, err := tm.Key(ns, c, u)
		require.NoError(t, err)
		return k
	}
	k := tk("conv-456", "user-123")
	if ns.NoHashTags {
		require.Equal(t, e.NS.Prefix+"typing:conv-456:user-123", k, "the seed's key, byte for byte")
	}
	convPattern := k[:len(k)-len("user-123")] + "*"

	// Node writes, Go reads.
	at := e.Now()
	require.NoError(t, seedTyping(ctx, e.Client, k, "user-123", "john_doe", at))
	got, err := ty.Typers(ctx, "conv-456")
	require.NoError(t, err)
	require.Len(t, got, 1, "a Node SETEX is listed")
	assert.Equal(t, "user-123", got[0].UserID)
	assert.Equal(t, "john_doe", got[0].Username)
	assert.Equal(t, at.UnixMilli(), got[0].At.UnixMilli())
	require.NoError(t, e.Client.Del(ctx, k).Err())
	got, err = ty.Typers(ctx, "conv-456")
	require.NoError(t, err)
	assert.Empty(t, got, "a Node DEL is not listed")

	// Go writes, Node reads.
	ok, err := ty.Start(ctx, "conv-456", "user-9", "ann")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, seedTyping(ctx, e.Client, k, "user-123", "john_doe", e.Now()))
	assert.Equal(t, []string{"user-123/john_doe", "user-9/ann"}, seedTypers(t, e, convPattern))
	left := e.Client.PTTL(ctx, tk("conv-456", "user-9")).Val()
	assert.True(t, left > 0 && left <= 3*time.Second, "the seed's 3 s TTL: %v", left)
	assert.Len(t, seedKeys(t, e, e.NS.Prefix+"typing:*"), 2, "monitoring counts each typer once")
	got, err = ty.Typers(ctx, "conv-456")
	require.NoError(t, err)
	assert.Len(t, got, 2)

	// The library's Stop clears the Node indicator for Node too.
	stopped, err := ty.Stop(ctx, "conv-456", "user-123")
	require.NoError(t, err)
	assert.True(t, stopped)
	assert.Equal(t, []string{"user-9/ann"}, seedTypers(t, e, convPattern))
	e.RequireTTLs(nil)

	// Without the option the throttle marker sits under typing: (and the
	// index is read): the divergence the option removes.
	plain, err := presence.New(e.Client, presence.WithNamespace(ns))
	require.NoError(t, err)
	_, err = plain.Typing().Start(ctx, "conv-7", "user-1", "bo")
	require.NoError(t, err)
	var inConv7 int
	for _, k := range seedKeys(t, e, e.NS.Prefix+"typing:*") {
		if k != tk("conv-456", "user-9") {
			inConv7++
		}
	}
	assert.Equal(t, 2, inConv7, "typing:conv-7:user-1 and typing:throttle:conv-7:user-1")
}
