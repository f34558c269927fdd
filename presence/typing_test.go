package presence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

func newTyping(t *testing.T, e *harness.Env, opts ...presence.Option) *presence.Typing {
	t.Helper()
	ty, err := typingOf(presence.New(e.Client, append([]presence.Option{presence.WithNamespace(e.NS)}, opts...)...))
	require.NoError(t, err)
	return ty
}

func TestTyping(t *testing.T) {
	e := harness.New(t)
	typing := newTyping(t, e, presence.WithProfile(short)) // typing 900 ms, throttle 600 ms
	ctx := e.Ctx()
	ok, err := typing.Start(ctx, "conv-456", "user-123", "john_doe")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = typing.Start(ctx, "conv-456", "user-123", "john_doe")
	require.NoError(t, err)
	assert.False(t, ok, "throttled")
	ok, err = typing.Start(ctx, "conv-456", "user-7", `ann "the" \ one`)
	require.NoError(t, err)
	assert.True(t, ok, "the throttle is per user")

	raw, err := e.Client.Get(ctx, key(t, e, "typing:{conversation_id}:{user_id}", "conv-456", "user-123")).Result()
	require.NoError(t, err)
	assert.Equal(t, `{"userId":"user-123","username":"john_doe","timestamp":N}`, msRe.ReplaceAllString(raw, "N"))

	ty, err := typing.Typers(ctx, "conv-456")
	require.NoError(t, err)
	require.Len(t, ty, 2)
	names := map[string]string{ty[0].UserID: ty[0].Username, ty[1].UserID: ty[1].Username}
	assert.Equal(t, map[string]string{"user-123": "john_doe", "user-7": `ann "the" \ one`}, names)
	assert.WithinDuration(t, e.Now(), ty[0].At, 2*time.Second)

	ok, err = typing.Stop(ctx, "conv-456", "user-7")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = typing.Stop(ctx, "conv-456", "user-7")
	require.NoError(t, err)
	assert.False(t, ok)
	ty, err = typing.Typers(ctx, "conv-456")
	require.NoError(t, err)
	require.Len(t, ty, 1)
	assert.Equal(t, "user-123", ty[0].UserID)

	e.Advance(650 * time.Millisecond) // throttle over, indicator still alive
	ok, err = typing.Start(ctx, "conv-456", "user-123", "john_doe")
	require.NoError(t, err)
	assert.True(t, ok, "throttle released")
	ty, err = typing.Typers(ctx, "conv-456")
	require.NoError(t, err)
	assert.Len(t, ty, 1, "a refresh replaces the user's entry")

	e.Advance(950 * time.Millisecond) // indicator expired
	ty, err = typing.Typers(ctx, "conv-456")
	require.NoError(t, err)
	assert.Empty(t, ty)
	assert.Empty(t, dataKeys(e), "typing keys all expire")

	ty, err = typing.Typers(ctx, "other")
	require.NoError(t, err)
	assert.Empty(t, ty)
}

func TestTypingSeedThrottle(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(4 * time.Second)
	typing := newTyping(t, e) // 3 s TTL, 2 s throttle
	ctx := e.Ctx()
	start := func() bool {
		t.Helper()
		ok, err := typing.Start(ctx, "c", "u", "n")
		require.NoError(t, err)
		return ok
	}
	typers := func() []presence.Typer {
		t.Helper()
		ty, err := typing.Typers(ctx, "c")
		require.NoError(t, err)
		return ty
	}
	ok := start()
	assert.True(t, ok)
	e.Advance(1900 * time.Millisecond)
	ok = start()
	assert.False(t, ok, "within 2 s")
	e.Advance(200 * time.Millisecond)
	ok = start()
	assert.True(t, ok, "after 2 s")
	e.Advance(2900 * time.Millisecond)
	ty := typers()
	assert.Len(t, ty, 1, "3 s TTL from the last accepted write")
	e.Advance(200 * time.Millisecond)
	ty = typers()
	assert.Empty(t, ty)
}

// Without a throttle every Start writes.
func TestTypingNoThrottle(t *testing.T) {
	e := harness.New(t)
	p := short
	p.TypingThrottle = 0
	typing := newTyping(t, e, presence.WithProfile(p))
	ctx := e.Ctx()
	for i := 0; i < 3; i++ {
		ok, err := typing.Start(ctx, "c", "u", "n")
		require.NoError(t, err)
		assert.True(t, ok)
	}
	ty, err := typing.Typers(ctx, "c")
	require.NoError(t, err)
	assert.Len(t, ty, 1)
}

// TestTypersOnePerUser: a typing key deleted around the package (a bare
// DEL on typing:stop, or an LRU eviction) leaves its index entry until it
// expires; a new Start then must not list the user twice.
func TestTypersOnePerUser(t *testing.T) {
	e := harness.New(t)
	typing := newTyping(t, e, presence.WithProfile(short)) // typing 900 ms, throttle 600 ms
	ctx := e.Ctx()
	ok, err := typing.Start(ctx, "c", "u", "old name")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, e.Client.Del(ctx, key(t, e, "typing:{conversation_id}:{user_id}", "c", "u")).Err())
	e.Advance(650 * time.Millisecond)
	ok, err = typing.Start(ctx, "c", "u", "new name")
	require.NoError(t, err)
	require.True(t, ok)
	ty, err := typing.Typers(ctx, "c")
	require.NoError(t, err)
	require.Len(t, ty, 1)
	assert.Equal(t, "new name", ty[0].Username, "the latest entry wins")
}

func TestTypingBadInput(t *testing.T) {
	e := harness.New(t)
	typing := newTyping(t, e)
	ctx := e.Ctx()
	_, err := typing.Start(ctx, "", "u", "n")
	assert.ErrorIs(t, err, keys.ErrInvalid)
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = typing.Start(ctx, "c", "", "n")
	assert.ErrorIs(t, err, keys.ErrInvalid)
	_, err = typing.Start(ctx, "c", "u", string(make([]byte, presence.MaxUsernameLen+1)))
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = typing.Start(ctx, "c", "u", "\xff")
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = typing.Stop(ctx, "c", "")
	assert.ErrorIs(t, err, keys.ErrInvalid)
	_, err = typing.Typers(ctx, "")
	assert.ErrorIs(t, err, keys.ErrInvalid)
	assert.Empty(t, e.Keys())
}
