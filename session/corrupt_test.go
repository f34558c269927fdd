package session

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// corruptFixture is one user with a live session, a user record, a
// blacklisted token and the keys of all of them.
type corruptFixture struct {
	e                              *harness.Env
	s                              *Store
	u                              *Users
	uid, sid, refresh, jti         string
	sess, idx, user, black, reqKey string
	events, due, rot               string
}

// staleToken is the rotated-away refresh token the "rotate stale" row
// presents: a rotation key's record read by a retry names it.
const staleToken = "stale-refresh-token"

// keyOf names the key a row corrupts.
func (f *corruptFixture) keyOf(pattern string) string {
	return map[string]string{"session": f.sess, "index": f.idx, "user": f.user, "blacklist": f.black, "request": f.reqKey, "events": f.events, "due": f.due, "rotation": f.rot}[pattern]
}

// corruptOps are the operations a row runs: each must fail with
// keys.ErrCorrupt naming the row's key.
var corruptOps = map[string]func(ctx context.Context, f *corruptFixture) error{
	"get": func(ctx context.Context, f *corruptFixture) error { _, err := f.s.Get(ctx, f.uid, f.sid); return err },
	"update": func(ctx context.Context, f *corruptFixture) error {
		return f.s.Update(ctx, f.uid, f.sid, Changes{Set: map[string]string{"k": "v"}})
	},
	"verify": func(ctx context.Context, f *corruptFixture) error {
		return f.s.VerifyRefresh(ctx, f.uid, f.sid, f.refresh)
	},
	"rotate": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.RotateRefresh(ctx, f.uid, f.sid, f.refresh)
		return err
	},
	"rotate stale": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.RotateRefresh(ctx, f.uid, f.sid, staleToken)
		return err
	},
	"authenticate": func(ctx context.Context, f *corruptFixture) error {
		_, _, err := f.s.Authenticate(ctx, f.u, f.uid, f.sid)
		return err
	},
	"list": func(ctx context.Context, f *corruptFixture) error { _, err := f.s.List(ctx, f.uid); return err },
	"create": func(ctx context.Context, f *corruptFixture) error {
		_, _, err := f.s.Create(ctx, Info{UserID: f.uid})
		return err
	},
	"revoke": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.Revoke(ctx, f.uid, f.sid)
		return err
	},
	"revoke all": func(ctx context.Context, f *corruptFixture) error { _, err := f.s.RevokeAll(ctx, f.uid); return err },
	"sweep": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.Sweep(ctx, keys.Slot(f.idx), 1)
		return err
	},
	"validate": func(ctx context.Context, f *corruptFixture) error { _, err := f.u.Validate(ctx, f.uid); return err },
	"login": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.u.Login(ctx, f.uid, LoginInfo{DeviceID: "d"})
		return err
	},
	"block":      func(ctx context.Context, f *corruptFixture) error { return f.u.Block(ctx, f.uid) },
	"unblock":    func(ctx context.Context, f *corruptFixture) error { return f.u.Unblock(ctx, f.uid) },
	"is revoked": func(ctx context.Context, f *corruptFixture) error { _, err := f.s.IsRevoked(ctx, f.jti); return err },
	"revoke token": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.RevokeToken(ctx, f.jti, time.Now().Add(time.Hour))
		return err
	},
	// The calls that read a request key, sent with the fixture's key as if
	// resent after a lost reply.
	"resent revoke": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.run.Run(ctx, revokeOp, []string{f.sess, f.idx, f.reqKey}, f.sid, unit.MsFloor(replayWindow))
		return err
	},
	"resent revoke all": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.s.run.Run(ctx, revokeAllOp, []string{f.idx, f.reqKey}, "", unit.MsFloor(replayWindow))
		return err
	},
	"resent login": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.u.run.Run(ctx, userLoginOp, []string{f.user, f.reqKey}, unit.MsFloor(time.Hour), "login", "d", "", unit.MsFloor(replayWindow))
		return err
	},
	"resent unblock": func(ctx context.Context, f *corruptFixture) error {
		_, err := f.u.run.Run(ctx, userUnblockOp, []string{f.user, f.reqKey}, unit.MsFloor(replayWindow))
		return err
	},
}

// TestCorruptionTable puts a wrong type, garbage and out-of-range values at
// each of the package's key patterns; every operation that reads the key
// fails with keys.ErrCorrupt naming that exact key (never another key of
// the call), and none panics or reports a business outcome.
func TestCorruptionTable(t *testing.T) {
	e, plain := newStore(t)
	withEvents, err := New(e.Client, WithNamespace(e.NS), WithEvents(100))
	require.NoError(t, err)
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	now := e.Now()
	ahead := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	sessionOps := []string{"get", "update", "verify", "rotate", "authenticate", "revoke"}
	rows := []struct {
		pattern, name string
		set           func(c redis.Pipeliner, f *corruptFixture)
		ops           []string
	}{
		{"session", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.Del(ctx, f.sess)
			c.Set(ctx, f.sess, "x", time.Hour)
		}, sessionOps},
		{"session", "absolute_expiry garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fAbsoluteExp, "soon")
		}, sessionOps},
		{"session", "absolute_expiry in year 287168", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fAbsoluteExp, "9000000000000000")
		}, sessionOps},
		{"session", "absolute_expiry beyond the longest lifetime", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fAbsoluteExp, ahead(maxLifetime+48*time.Hour))
		}, sessionOps},
		{"session", "no absolute_expiry", func(c redis.Pipeliner, f *corruptFixture) {
			c.HDel(ctx, f.sess, fAbsoluteExp)
		}, sessionOps},
		{"session", "created_at garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fCreatedAt, "yesterday")
		}, []string{"get", "authenticate"}},
		{"session", "created_at after absolute_expiry", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fCreatedAt, "2999-01-01T00:00:00Z")
		}, []string{"get", "authenticate"}},
		{"session", "another user's", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fUserID, "someone-else")
		}, []string{"get", "authenticate"}},
		{"session", "refresh_token_hash garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fRefreshHash, "not-a-digest")
		}, []string{"verify", "rotate"}},
		{"session", "refresh_token_used garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.sess, fRefreshUsed, "zz yy")
		}, []string{"rotate"}},
		{"rotation", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.rot, "x", "y")
			c.PExpire(ctx, f.rot, time.Hour)
		}, []string{"rotate stale"}},
		{"rotation", "garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.rot, "not a record", time.Hour)
		}, []string{"rotate stale"}},
		{"rotation", "a sealed token that does not open", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.rot, hashToken(staleToken)+" "+hashToken(f.refresh)+" "+strings.Repeat("ab", 71), time.Hour)
		}, []string{"rotate stale"}},
		{"index", "wrong type (seed 001's set)", func(c redis.Pipeliner, f *corruptFixture) {
			c.Del(ctx, f.idx)
			c.SAdd(ctx, f.idx, f.sid)
		}, append([]string{"list", "create", "revoke all"}, sessionOps...)},
		{"index", "wrong type (string)", func(c redis.Pipeliner, f *corruptFixture) {
			c.Del(ctx, f.idx)
			c.Set(ctx, f.idx, "x", time.Hour)
		}, append([]string{"list", "create", "revoke all"}, sessionOps...)},
		{"index", "foreign member expiring in year 287168", func(c redis.Pipeliner, f *corruptFixture) {
			c.ZAdd(ctx, f.idx, redis.Z{Score: 9e15, Member: "intruder"})
		}, append([]string{"list", "create", "revoke all"}, sessionOps...)},
		{"index", "foreign member with a plausible expiry", func(c redis.Pipeliner, f *corruptFixture) {
			c.ZAdd(ctx, f.idx, redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: "a-bearer-token-of-another-app"})
		}, []string{"list"}},
		{"index", "fractional score", func(c redis.Pipeliner, f *corruptFixture) {
			c.ZAdd(ctx, f.idx, redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()) + 0.5, Member: "AAAAAAAAAAAAAAAAAAAAAA"})
		}, []string{"list"}},
		{"user", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.Del(ctx, f.user)
			c.LPush(ctx, f.user, "x")
		}, []string{"validate", "login", "block", "unblock", "authenticate"}},
		{"user", "status garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.user, "status", "superuser")
		}, []string{"validate", "login", "unblock", "authenticate"}},
		{"user", "neither status nor active", func(c redis.Pipeliner, f *corruptFixture) {
			c.HDel(ctx, f.user, "status")
		}, []string{"validate", "login", "unblock", "authenticate"}},
		{"user", "active garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.user, "active", "yes")
		}, []string{"validate", "login", "unblock", "authenticate"}},
		{"user", "login_time garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.user, "login_time", "yesterday")
		}, []string{"validate", "authenticate"}},
		{"user", "last_seen negative", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.user, "last_seen", "-5")
		}, []string{"validate", "authenticate"}},
		{"user", "last_seen beyond year 9999", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.user, "login_time", "999999999999999")
		}, []string{"validate", "authenticate"}},
		{"user", "status_before_block garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.user, "status", "blocked", "status_before_block", "root")
		}, []string{"unblock"}},
		{"blacklist", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.Del(ctx, f.black)
			c.HSet(ctx, f.black, "x", "1")
		}, []string{"is revoked", "revoke token"}},
		{"blacklist", "garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.black, "yes", time.Hour)
		}, []string{"is revoked", "revoke token"}},
		{"events", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.events, "x", time.Hour)
		}, []string{"create", "revoke", "revoke all"}},
		{"due", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.due, "x", time.Hour)
		}, []string{"create", "sweep"}},
		{"request", "wrong type", func(c redis.Pipeliner, f *corruptFixture) {
			c.HSet(ctx, f.reqKey, "x", "1")
		}, []string{"resent revoke", "resent revoke all", "resent login", "resent unblock"}},
		{"request", "garbage", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.reqKey, "done", time.Minute)
		}, []string{"resent revoke", "resent revoke all", "resent login", "resent unblock"}},
		{"request", "negative", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.reqKey, "-1", time.Minute)
		}, []string{"resent revoke", "resent revoke all", "resent login", "resent unblock"}},
		{"request", "out of range for a yes/no outcome", func(c redis.Pipeliner, f *corruptFixture) {
			c.Set(ctx, f.reqKey, "7", time.Minute)
		}, []string{"resent revoke", "resent unblock"}},
	}
	seen := map[string]bool{}
	checked := 0
	// Each row runs on a Store without events and on one with them; the
	// rows of the events keys only on the latter.
	for j, s := range []*Store{plain, withEvents} {
		for i, row := range rows {
			if s == plain && (row.pattern == "events" || row.pattern == "due") {
				continue
			}
			seen[row.pattern] = true
			t.Run(fmt.Sprint(j)+"/"+row.pattern+"/"+row.name, func(t *testing.T) {
				f := &corruptFixture{e: e, s: s, u: users, uid: fmt.Sprint("c", i, "-", j), jti: fmt.Sprint("j", i, "-", j)}
				sess, tok, err := s.Create(ctx, Info{UserID: f.uid})
				require.NoError(t, err)
				f.sid, f.refresh = sess.ID, tok.Refresh
				_, err = users.Login(ctx, f.uid, LoginInfo{DeviceID: "d"})
				require.NoError(t, err)
				_, err = s.RevokeToken(ctx, f.jti, now.Add(time.Hour))
				require.NoError(t, err)
				f.sess, f.idx = sessKey(t, e, f.uid, f.sid), idxKey(t, e, f.uid)
				f.user, _ = userKey.Key(e.NS, f.uid)
				f.black, _ = blacklistKey.Key(e.NS, f.jti)
				f.reqKey, _ = requestKey.Key(e.NS, f.uid, "r1")
				f.rot, _ = rotationKey.Key(e.NS, f.uid, f.sid)
				f.events, f.due, err = withEvents.slotKeys("test", keys.Slot(f.idx))
				require.NoError(t, err)
				// The pipeline is split per slot on a cluster: the keys of one
				// user share a slot, the blacklist entry has its own.
				_, err = e.Client.Pipelined(ctx, func(p redis.Pipeliner) error { row.set(p, f); return nil })
				require.NoError(t, err)
				want := f.keyOf(row.pattern)
				for _, name := range row.ops {
					err := corruptOps[name](ctx, f)
					require.ErrorIs(t, err, keys.ErrCorrupt, "%s: %v", name, err)
					var ce *keys.CorruptError
					require.True(t, errors.As(err, &ce), name)
					assert.Equal(t, want, ce.Key, "%s names the corrupt key", name)
					var ke *call.Error
					require.True(t, errors.As(err, &ke), name)
					assert.Equal(t, want, ke.Key, "%s: the error's key", name)
					for _, other := range []error{ErrNotFound, ErrBlocked, ErrInvalidToken, ErrTokenReused, ErrInvalid} {
						assert.NotErrorIs(t, err, other, "%s: corruption is not a business outcome", name)
					}
					checked++
				}
			})
		}
	}
	labels := map[*keys.Template]string{sessionKey: "session", indexKey: "index", userKey: "user", blacklistKey: "blacklist", requestKey: "request", rotationKey: "rotation", eventsKey: "events", dueKey: "due"}
	for _, tm := range harness.Registry(t, Schema()).Owned("session") {
		assert.True(t, seen[labels[tm]], "no corruption row for %s", tm)
	}
	t.Logf("%s: %d rows, %d operations each failed with ErrCorrupt naming the key", e.Backend, len(rows), checked)
}

// The year-287168 member of issue 12: never listed as a live session.
func TestForeignIndexMemberNotListed(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	mustCreate(t, e, s, "u1")
	idx := idxKey(t, e, "u1")
	require.NoError(t, e.Client.ZAdd(ctx, idx, redis.Z{Score: 9e15, Member: "intruder"}).Err())
	list, err := s.List(ctx, "u1")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Empty(t, list)
	assert.Contains(t, err.Error(), idx)
	assert.NotContains(t, err.Error(), "intruder", "a foreign member is not quoted")
	assert.Positive(t, pttl(t, e, idx))
	assert.LessOrEqual(t, pttl(t, e, idx), defaultIdleTimeout, "the index TTL did not follow the foreign score")
}

// The Lua bound on deadlines is the Go one plus a day.
func TestMaxAheadMatchesLimit(t *testing.T) {
	m := regexp.MustCompile(`local MAX_AHEAD_MS = (\d+) \* 86400000`).FindStringSubmatch(libSrc)
	require.NotNil(t, m)
	days, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.Equal(t, maxLifetime+24*time.Hour, time.Duration(days)*24*time.Hour)
}
