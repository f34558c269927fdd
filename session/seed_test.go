package session

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// The home-automation backend's own user code (seed 000, "Example Usage"),
// transcribed command for command as node-redis sends it, with the bytes it
// writes. Its key is REDIS_KEY_PREFIX + "user:" + id; the prefix here is
// the test's namespace.

// seedLogin is the seed's "Create user session on login".
func seedLogin(ctx context.Context, c redis.UniversalClient, key string, now time.Time) error {
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	if err := c.HSet(ctx, key, "device_id", "iPhone_12_ABC123", "login_time", ms, "last_seen", ms,
		"active", "true", "ip_address", "192.168.1.100").Err(); err != nil {
		return err
	}
	return c.Expire(ctx, key, 604800*time.Second).Err()
}

// seedValidate is the seed's "Validate user on API request": what its
// service answers ("" lets the request through), after its last_seen
// update for a request it lets through.
func seedValidate(t *testing.T, ctx context.Context, c redis.UniversalClient, key string) string {
	t.Helper()
	user, err := c.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	if user["device_id"] == "" {
		return "Session expired"
	}
	if user["active"] != "true" {
		return "User disabled"
	}
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "last_seen", strconv.FormatInt(time.Now().UnixMilli(), 10))
		p.Expire(ctx, key, 604800*time.Second)
		return nil
	})
	require.NoError(t, err)
	return ""
}

// seedNS is the seed's namespace: the test's prefix without hash tags, as
// the seed writes its keys, except on a cluster, where Login and Unblock
// touch the user record with a request key and need the tags (the fields,
// which this file is about, are the same bytes).
func seedNS(e *harness.Env) keys.Namespace {
	return keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: e.Backend != harness.Cluster}
}

func seedUsers(t *testing.T, opts ...Option) (*harness.Env, *Users, string) {
	t.Helper()
	e := harness.New(t)
	ns := seedNS(e)
	u, err := NewUsers(e.Client, append([]Option{WithNamespace(ns)}, opts...)...)
	require.NoError(t, err)
	key, err := userKey.Key(ns, "123")
	require.NoError(t, err)
	if ns.NoHashTags {
		require.Equal(t, e.NS.Prefix+"user:123", key, "the seed's key, byte for byte")
	}
	return e, u, key
}

// TestSeedUserWrittenByNodeReadByUsers: a record the seed's code wrote
// (active, no status) validates as a login; the seed's "disable" blocks it
// for Users too, Users.Unblock lets the seed's validator through again,
// and the seed's logout is a logout.
func TestSeedUserWrittenByNodeReadByUsers(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithActiveField()}} {
		e, u, key := seedUsers(t, opts...)
		ctx := e.Ctx()
		require.NoError(t, seedLogin(ctx, e.Client, key, e.Now()))

		got, err := u.Validate(ctx, "123")
		require.NoError(t, err, "active 'true' and no status is a login")
		assert.Equal(t, StatusLogin, got.Status)
		assert.True(t, got.CanWrite())
		assert.Equal(t, "iPhone_12_ABC123", got.DeviceID)
		assert.Equal(t, "192.168.1.100", got.IPAddress)
		raw, err := e.Client.HGetAll(ctx, key).Result()
		require.NoError(t, err)
		usr, err := parseUser("123", flatten(raw))
		require.NoError(t, err, "the inspector's decoder reads it too")
		assert.Equal(t, StatusLogin, usr.Status)
		assert.Equal(t, "", seedValidate(t, ctx, e.Client, key), "Validate left the seed's fields as they were")

		// "Disable user instantly".
		require.NoError(t, e.Client.HSet(ctx, key, "active", "false").Err())
		_, err = u.Validate(ctx, "123")
		require.ErrorIs(t, err, ErrBlocked)
		_, err = u.Login(ctx, "123", LoginInfo{DeviceID: "d"})
		require.ErrorIs(t, err, ErrBlocked, "a disabled user cannot log in again")
		require.NoError(t, u.Logout(ctx, "123"))
		assert.Equal(t, "User disabled", seedValidate(t, ctx, e.Client, key), "logout never lifts a block")

		require.NoError(t, u.Unblock(ctx, "123"))
		assert.Equal(t, "", seedValidate(t, ctx, e.Client, key), "Unblock sets active 'true'")
		got, err = u.Validate(ctx, "123")
		require.NoError(t, err)
		assert.Equal(t, StatusLogin, got.Status)

		// Users.Block of a record the seed wrote: both sides refuse, and
		// Unblock brings back the login for both.
		require.NoError(t, u.Block(ctx, "123"))
		assert.Equal(t, "User disabled", seedValidate(t, ctx, e.Client, key))
		_, err = u.Validate(ctx, "123")
		require.ErrorIs(t, err, ErrBlocked)
		require.NoError(t, u.Unblock(ctx, "123"))
		assert.Equal(t, "", seedValidate(t, ctx, e.Client, key))
		got, err = u.Validate(ctx, "123")
		require.NoError(t, err)
		assert.Equal(t, StatusLogin, got.Status)

		// "Logout user (delete session)".
		require.NoError(t, e.Client.Del(ctx, key).Err())
		_, err = u.Validate(ctx, "123")
		require.ErrorIs(t, err, ErrNotFound)
		e.RequireTTLs(nil)
	}
}

// TestSeedUserWrittenByUsersReadByNode: with WithActiveField the seed's
// validator answers for every record Users writes as Users does; without
// it, a login Users wrote is "User disabled" to the seed.
func TestSeedUserWrittenByUsersReadByNode(t *testing.T) {
	e, u, key := seedUsers(t, WithActiveField())
	ctx := e.Ctx()
	for _, anon := range []bool{false, true} {
		_, err := u.Login(ctx, "123", LoginInfo{DeviceID: "iPhone_12_ABC123", Anonymous: anon})
		require.NoError(t, err)
		assert.Equal(t, "", seedValidate(t, ctx, e.Client, key), "anonymous=%v", anon)
		got, err := u.Validate(ctx, "123")
		require.NoError(t, err, "the seed's last_seen is Unix ms, as Users writes it")
		assert.Equal(t, anon, got.Status == StatusAnonymous)

		require.NoError(t, u.Block(ctx, "123"))
		assert.Equal(t, "User disabled", seedValidate(t, ctx, e.Client, key))
		require.NoError(t, u.Unblock(ctx, "123"))
		assert.Equal(t, "", seedValidate(t, ctx, e.Client, key))
		got, err = u.Validate(ctx, "123")
		require.NoError(t, err)
		assert.Equal(t, anon, got.Status == StatusAnonymous, "the status before the block is back")
	}
	require.NoError(t, u.Logout(ctx, "123"))
	assert.Equal(t, "Session expired", seedValidate(t, ctx, e.Client, key))

	// A block of a user without a record: refused by both, until Unblock.
	require.NoError(t, u.Block(ctx, "123"))
	assert.Equal(t, "Session expired", seedValidate(t, ctx, e.Client, key), "no device_id: the seed refuses too")
	raw, err := e.Client.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"status": "blocked", "active": "false"}, raw)
	require.NoError(t, u.Unblock(ctx, "123"))
	assert.Zero(t, e.Client.Exists(ctx, key).Val())

	// Without the option Users writes no flag, and the seed's validator
	// refuses what Users admits: the divergence the option removes.
	plain, err := NewUsers(e.Client, WithNamespace(seedNS(e)))
	require.NoError(t, err)
	_, err = plain.Login(ctx, "123", LoginInfo{DeviceID: "d"})
	require.NoError(t, err)
	assert.Equal(t, "User disabled", seedValidate(t, ctx, e.Client, key))
	e.RequireTTLs(nil)
}

// TestUserStateTable holds the script's user_state and the decoders'
// parseUser to one rule: blocked when status is blocked or active is
// 'false'; else the status; else login for active 'true' alone.
func TestUserStateTable(t *testing.T) {
	e, u, key := seedUsers(t)
	ctx := e.Ctx()
	for _, st := range []string{"", "login", "anonymous", "blocked"} {
		for _, active := range []string{"", "true", "false"} {
			require.NoError(t, e.Client.Del(ctx, key).Err())
			fields := []any{"device_id", "d"}
			if st != "" {
				fields = append(fields, "status", st)
			}
			if active != "" {
				fields = append(fields, "active", active)
			}
			require.NoError(t, e.Client.HSet(ctx, key, fields...).Err())
			var want Status
			switch {
			case st == "blocked" || active == "false":
				want = StatusBlocked
			case st != "":
				want = Status(st)
			case active == "true":
				want = StatusLogin
			}
			raw, err := e.Client.HGetAll(ctx, key).Result()
			require.NoError(t, err)
			dec, decErr := parseUser("123", flatten(raw))
			got, err := u.Validate(ctx, "123")
			name := "status=" + st + " active=" + active
			switch want {
			case "":
				require.ErrorIs(t, err, keys.ErrCorrupt, name)
				require.Error(t, decErr, name)
			case StatusBlocked:
				require.ErrorIs(t, err, ErrBlocked, name)
				require.NoError(t, decErr, name)
				assert.Equal(t, want, dec.Status, name)
			default:
				require.NoError(t, err, name)
				require.NoError(t, decErr, name)
				assert.Equal(t, want, got.Status, name)
				assert.Equal(t, want, dec.Status, name)
			}
		}
	}
}
