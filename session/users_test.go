package session

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func newUsers(t *testing.T, opts ...Option) (*harness.Env, *Users) {
	t.Helper()
	e := harness.New(t)
	u, err := NewUsers(e.Client, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return e, u
}

func TestUsersLoginValidateSeedLayout(t *testing.T) {
	e, u := newUsers(t)
	ctx := e.Ctx()
	usr, err := u.Login(ctx, "123", LoginInfo{DeviceID: "iPhone_12_ABC123", IPAddress: "192.168.1.100"})
	require.NoError(t, err)
	assert.Equal(t, StatusLogin, usr.Status)
	assert.True(t, usr.CanWrite())

	key, err := userKey.Key(e.NS, "123")
	require.NoError(t, err)
	raw, err := e.Client.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, "iPhone_12_ABC123", raw["device_id"])
	assert.Equal(t, "login", raw["status"])
	assert.Equal(t, "192.168.1.100", raw["ip_address"])
	assert.Regexp(t, `^\d{13}$`, raw["login_time"], "seed 000: Unix ms string")
	assert.Equal(t, raw["login_time"], raw["last_seen"])
	assert.NotContains(t, raw, "active")
	if !e.Real() {
		assert.Equal(t, strconv.FormatInt(e.Now().UnixMilli(), 10), raw["login_time"])
	}
	ttl := pttl(t, e, key)
	assert.True(t, ttl > defaultUserTTL-5*time.Second && ttl <= defaultUserTTL)

	e.Advance(20 * time.Millisecond)
	require.NoError(t, e.Client.PExpire(ctx, key, time.Minute).Err())
	got, err := u.Validate(ctx, "123")
	require.NoError(t, err)
	assert.True(t, got.LastSeen.After(got.LoginTime), "last_seen moved")
	assert.Equal(t, "iPhone_12_ABC123", got.DeviceID)
	assert.True(t, pttl(t, e, key) > defaultUserTTL-5*time.Second, "TTL refreshed")

	_, err = u.Validate(ctx, "nobody")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = u.Validate(ctx, "")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = u.Login(ctx, "x", LoginInfo{})
	require.ErrorIs(t, err, ErrInvalid)

	require.NoError(t, u.Logout(ctx, "123"))
	_, err = u.Validate(ctx, "123")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, u.Logout(ctx, "123"), "idempotent")
}

func TestUsersAnonymousReadOnly(t *testing.T) {
	e, u := newUsers(t)
	ctx := e.Ctx()
	_, err := u.Login(ctx, "7", LoginInfo{DeviceID: "d", Anonymous: true})
	require.NoError(t, err)
	got, err := u.Validate(ctx, "7")
	require.NoError(t, err)
	assert.Equal(t, StatusAnonymous, got.Status)
	assert.False(t, got.CanWrite())
	assert.False(t, StatusBlocked.CanWrite())
	assert.True(t, StatusLogin.CanWrite())
	var nilUser *User
	assert.False(t, nilUser.CanWrite())
}

func TestUsersBlockUnblock(t *testing.T) {
	e, u := newUsers(t, WithUserTTL(time.Hour))
	ctx := e.Ctx()
	_, err := u.Login(ctx, "9", LoginInfo{DeviceID: "d", Anonymous: true})
	require.NoError(t, err)
	require.NoError(t, u.Block(ctx, "9"))
	require.NoError(t, u.Block(ctx, "9"), "idempotent")
	_, err = u.Validate(ctx, "9")
	require.ErrorIs(t, err, ErrBlocked)
	_, err = u.Login(ctx, "9", LoginInfo{DeviceID: "d"})
	require.ErrorIs(t, err, ErrBlocked, "login cannot lift a block")
	require.NoError(t, u.Logout(ctx, "9"))
	_, err = u.Validate(ctx, "9")
	require.ErrorIs(t, err, ErrBlocked, "logout cannot lift a block")

	require.NoError(t, u.Unblock(ctx, "9"))
	got, err := u.Validate(ctx, "9")
	require.NoError(t, err)
	assert.Equal(t, StatusAnonymous, got.Status, "previous status restored")
	require.NoError(t, u.Unblock(ctx, "9"), "not blocked: no-op")

	// Blocking a user without a record refuses their next login.
	require.NoError(t, u.Block(ctx, "10"))
	key, _ := userKey.Key(e.NS, "10")
	assert.True(t, pttl(t, e, key) > 0)
	_, err = u.Login(ctx, "10", LoginInfo{DeviceID: "d"})
	require.ErrorIs(t, err, ErrBlocked)
	require.NoError(t, u.Unblock(ctx, "10"))
	_, err = u.Validate(ctx, "10")
	require.ErrorIs(t, err, ErrNotFound, "the placeholder record is gone")
	require.ErrorIs(t, u.Unblock(ctx, "10"), ErrNotFound)
	e.RequireTTLs(nil)
}

func TestUsersCorrupt(t *testing.T) {
	e, u := newUsers(t)
	ctx := e.Ctx()
	key, _ := userKey.Key(e.NS, "5")
	// Neither a status nor the seed's active flag.
	require.NoError(t, e.Client.HSet(ctx, key, "device_id", "d").Err())
	_, err := u.Validate(ctx, "5")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	var ce *keys.CorruptError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, key, ce.Key)
	require.ErrorIs(t, u.Unblock(ctx, "5"), keys.ErrCorrupt)

	require.NoError(t, e.Client.HSet(ctx, key, "status", "login", "login_time", "yesterday").Err())
	_, err = u.Validate(ctx, "5")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.NoError(t, e.Client.HSet(ctx, key, "status", "superuser").Err())
	_, err = u.Validate(ctx, "5")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.NoError(t, e.Client.HSet(ctx, key, "status", "login", "login_time", "1", "active", "1").Err())
	_, err = u.Validate(ctx, "5")
	require.ErrorIs(t, err, keys.ErrCorrupt, "active is 'true' or 'false'")
}

// A user's record that another writer blocked (the backend's own code:
// status blocked, no status_before_block) comes back as a logged-in user
// on Unblock, its other fields kept; one with a status this package does
// not read, which Block overwrote, is still deleted.
func TestUnblockOfAForeignBlock(t *testing.T) {
	e, u := newUsers(t, WithUserTTL(time.Hour))
	ctx := e.Ctx()
	key, _ := userKey.Key(e.NS, "42")
	now := fmt.Sprint(time.Now().UnixMilli())
	require.NoError(t, e.Client.HSet(ctx, key, "device_id", "d", "login_time", now, "status", "blocked").Err())
	require.NoError(t, e.Client.Expire(ctx, key, time.Hour).Err())
	require.NoError(t, u.Unblock(ctx, "42"))
	got, err := u.Validate(ctx, "42")
	require.NoError(t, err)
	assert.Equal(t, StatusLogin, got.Status)
	assert.Equal(t, "d", e.Client.HGet(ctx, key, "device_id").Val(), "the record kept")

	other, _ := userKey.Key(e.NS, "43")
	require.NoError(t, e.Client.HSet(ctx, other, "device_id", "d", "status", "superuser").Err())
	require.NoError(t, e.Client.Expire(ctx, other, time.Hour).Err())
	require.NoError(t, u.Block(ctx, "43"))
	require.NoError(t, u.Unblock(ctx, "43"))
	_, err = u.Validate(ctx, "43")
	require.ErrorIs(t, err, ErrNotFound, "overwritten by Block: deleted by Unblock")
}
