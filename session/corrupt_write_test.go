package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// The house rule these tests hold the scripts to: a call that fails
// (keys.ErrCorrupt naming the key, or a refusal) writes nothing. Each
// corrupts one key, snapshots every key under the test's namespace, runs
// the call, requires the error and the snapshot (harness's Snapshot: every
// key under e.NS.Prefix, its type, value and whether it has a TTL)
// unchanged.

// requireCorrupt requires err to match keys.ErrCorrupt naming key k.
func requireCorrupt(t *testing.T, err error, k, what string) {
	t.Helper()
	require.ErrorIs(t, err, keys.ErrCorrupt, "%s: %v", what, err)
	var ce *keys.CorruptError
	require.True(t, errors.As(err, &ce), "%s: %v", what, err)
	assert.Equal(t, k, ce.Key, "%s names the corrupt key", what)
}

// storeWith returns a Store on e's namespace, with events when ev.
func storeWith(t *testing.T, e *harness.Env, ev bool) *Store {
	t.Helper()
	opts := []Option{WithNamespace(e.NS)}
	if ev {
		opts = append(opts, WithEvents(100))
	}
	s, err := New(e.Client, opts...)
	require.NoError(t, err)
	return s
}

// expireInIndex moves sid's index entry into the past: the next prune of
// idx drops it (and, with events, announces it).
func expireInIndex(t *testing.T, e *harness.Env, idx, sid string) {
	t.Helper()
	past := float64(e.Now().Add(-time.Minute).UnixMilli())
	require.NoError(t, e.Client.ZAdd(e.Ctx(), idx, redis.Z{Score: past, Member: sid}).Err())
}

// TestCreateCorruptScheduleWritesNothing: with events, a sweep schedule
// this package did not write (a string) fails Create naming it before
// anything is written: no "created" event for a session that does not
// exist, no hash, no index entry.
func TestCreateCorruptScheduleWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	s := storeWith(t, e, true)
	sess, _ := mustCreate(t, e, s, "u1")
	_, due, err := s.slotKeys("test", keys.Slot(idxKey(t, e, "u1")))
	require.NoError(t, err)
	require.NoError(t, e.Client.Del(ctx, due).Err())
	require.NoError(t, e.Client.Set(ctx, due, "x", time.Hour).Err())
	expireInIndex(t, e, idxKey(t, e, "u1"), sess.ID)
	before := e.Snapshot()
	_, _, err = s.Create(ctx, Info{UserID: "u1"})
	requireCorrupt(t, err, due, "create")
	assert.Equal(t, before, e.Snapshot(), "nothing written")
}

// TestLiveCorruptHashPrunesNothing: a session hash whose absolute_expiry
// is not a deadline fails every call that checks it with lib.lua's live()
// naming the hash, before the index is pruned: another session's expired
// entry stays listed and, with events, no "expired" event is emitted.
func TestLiveCorruptHashPrunesNothing(t *testing.T) {
	e := harness.New(t)
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	ops := map[string]func(ctx context.Context, s *Store, uid, sid, refresh string) error{
		"get": func(ctx context.Context, s *Store, uid, sid, _ string) error {
			_, err := s.Get(ctx, uid, sid)
			return err
		},
		"authenticate": func(ctx context.Context, s *Store, uid, sid, _ string) error {
			_, _, err := s.Authenticate(ctx, users, uid, sid)
			return err
		},
		"renew": func(ctx context.Context, s *Store, uid, sid, _ string) error {
			_, _, err := s.Renew(ctx, uid, sid)
			return err
		},
		"rotate": func(ctx context.Context, s *Store, uid, sid, refresh string) error {
			_, err := s.RotateRefresh(ctx, uid, sid, refresh)
			return err
		},
		"verify": func(ctx context.Context, s *Store, uid, sid, refresh string) error {
			return s.VerifyRefresh(ctx, uid, sid, refresh)
		},
		"revoke": func(ctx context.Context, s *Store, uid, sid, _ string) error {
			_, err := s.Revoke(ctx, uid, sid)
			return err
		},
		"update": func(ctx context.Context, s *Store, uid, sid, _ string) error {
			return s.Update(ctx, uid, sid, Changes{Set: map[string]string{"k": "v"}})
		},
	}
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, ev := range []bool{false, true} {
		s := storeWith(t, e, ev)
		for i, name := range names {
			t.Run(fmt.Sprintf("events=%v/%s", ev, name), func(t *testing.T) {
				ctx := e.Ctx()
				uid := fmt.Sprint("p", i, "-", ev)
				s1, _ := mustCreate(t, e, s, uid)
				s2, refresh := mustCreate(t, e, s, uid)
				_, err := users.Login(ctx, uid, LoginInfo{DeviceID: "d"})
				require.NoError(t, err)
				idx, k2 := idxKey(t, e, uid), sessKey(t, e, uid, s2.ID)
				expireInIndex(t, e, idx, s1.ID)
				require.NoError(t, e.Client.HSet(ctx, k2, fAbsoluteExp, "soon").Err())
				before := e.Snapshot()
				requireCorrupt(t, ops[name](ctx, s, uid, s2.ID, refresh), k2, name)
				assert.Equal(t, before, e.Snapshot(), "%s: nothing written", name)
			})
		}
	}
}

// TestCreateCorruptIndexPrunesNothing: an index entry that expires in
// year 287168 fails Create naming the index before the index is pruned:
// another session's expired entry stays listed and, with events, no
// "expired" event is emitted.
func TestCreateCorruptIndexPrunesNothing(t *testing.T) {
	e := harness.New(t)
	for _, ev := range []bool{false, true} {
		t.Run(fmt.Sprintf("events=%v", ev), func(t *testing.T) {
			ctx := e.Ctx()
			s := storeWith(t, e, ev)
			uid := fmt.Sprint("c-", ev)
			s1, _ := mustCreate(t, e, s, uid)
			// a second in the past at least: Create prunes to the second
			idx := idxKey(t, e, uid)
			expireInIndex(t, e, idx, s1.ID)
			require.NoError(t, e.Client.ZAdd(ctx, idx, redis.Z{Score: 9e15, Member: "intruder"}).Err())
			before := e.Snapshot()
			_, _, err := s.Create(ctx, Info{UserID: uid})
			requireCorrupt(t, err, idx, "create")
			assert.Equal(t, before, e.Snapshot(), "nothing written")
		})
	}
}

// TestUpdateRefusalPrunesNothing: an Update that would leave a session
// with more than maxExtraFields caller extras is ErrInvalid with nothing
// written: not even the prune of another session's expired index entry
// (nor, with events, its "expired" event).
func TestUpdateRefusalPrunesNothing(t *testing.T) {
	e := harness.New(t)
	for _, ev := range []bool{false, true} {
		t.Run(fmt.Sprintf("events=%v", ev), func(t *testing.T) {
			ctx := e.Ctx()
			s := storeWith(t, e, ev)
			uid := fmt.Sprint("x-", ev)
			s1, _ := mustCreate(t, e, s, uid)
			extra := map[string]string{}
			for i := range maxExtraFields {
				extra["f"+strconv.Itoa(i)] = "v"
			}
			s2, _, err := s.Create(ctx, Info{UserID: uid, Extra: extra})
			require.NoError(t, err)
			expireInIndex(t, e, idxKey(t, e, uid), s1.ID)
			before := e.Snapshot()
			err = s.Update(ctx, uid, s2.ID, Changes{Set: map[string]string{"one_more": "v"}})
			require.ErrorIs(t, err, ErrInvalid)
			assert.Equal(t, before, e.Snapshot(), "nothing written")
		})
	}
}

// TestGetCorruptCreatedAtWritesNothing: a live session whose hash the Go
// side would refuse (created_at not an RFC 3339 time, or after the
// absolute expiry; another user's user_id; an idle_timeout past the
// longest lifetime) fails Get and Authenticate naming the hash before the
// session is slid: last_activity, the index score and the TTLs are as
// they were, and the user record is not touched.
func TestGetCorruptCreatedAtWritesNothing(t *testing.T) {
	e := harness.New(t)
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	rows := map[string][2]string{
		"created_at garbage":               {fCreatedAt, "yesterday"},
		"created_at after absolute_expiry": {fCreatedAt, "2999-01-01T00:00:00Z"},
		"created_at on February 30":        {fCreatedAt, "2026-02-30T00:00:00Z"},
		"another user's":                   {fUserID, "someone-else"},
		"idle_timeout past the lifetime":   {fIdleTimeout, strconv.FormatInt((maxLifetime + time.Hour).Milliseconds(), 10)},
	}
	for _, ev := range []bool{false, true} {
		s := storeWith(t, e, ev)
		i := 0
		for name, row := range rows {
			for _, op := range []string{"get", "authenticate"} {
				i++
				t.Run(fmt.Sprintf("events=%v/%s/%s", ev, name, op), func(t *testing.T) {
					ctx := e.Ctx()
					uid := fmt.Sprint("g", i, "-", ev)
					sess, _ := mustCreate(t, e, s, uid)
					_, err := users.Login(ctx, uid, LoginInfo{DeviceID: "d"})
					require.NoError(t, err)
					k, idx := sessKey(t, e, uid, sess.ID), idxKey(t, e, uid)
					// A session last active a while ago, due in a minute: a
					// slide would move both.
					now := e.Now()
					require.NoError(t, e.Client.HSet(ctx, k, fLastActivity, now.Add(-time.Hour).UTC().Format(time.RFC3339)).Err())
					require.NoError(t, e.Client.ZAdd(ctx, idx, redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: sess.ID}).Err())
					require.NoError(t, e.Client.HSet(ctx, k, row[0], row[1]).Err())
					before := e.Snapshot()
					if op == "get" {
						_, err = s.Get(ctx, uid, sess.ID)
					} else {
						_, _, err = s.Authenticate(ctx, users, uid, sess.ID)
					}
					requireCorrupt(t, err, k, op)
					assert.Equal(t, before, e.Snapshot(), "%s: nothing written", op)
				})
			}
		}
	}
}

// TestCheckedBeforePruneWritesNothing: the checks that Renew, Verify,
// RotateRefresh and List make past lib.lua's live() or prune (refresh
// digests, a rotation record, the hash that Renew returns, the index's
// live entries) fail the call naming the key before the index is pruned:
// another session's expired entry stays listed and, with events, no
// "expired" event is emitted.
func TestCheckedBeforePruneWritesNothing(t *testing.T) {
	e := harness.New(t)
	type fixture struct {
		s                 *Store
		uid, sid, refresh string
		sess, idx         string
	}
	rows := []struct {
		name  string
		plant func(ctx context.Context, f *fixture) string
		call  func(ctx context.Context, f *fixture) error
	}{
		{"verify: refresh_token_hash garbage", func(ctx context.Context, f *fixture) string {
			require.NoError(t, e.Client.HSet(ctx, f.sess, fRefreshHash, "not-a-digest").Err())
			return f.sess
		}, func(ctx context.Context, f *fixture) error { return f.s.VerifyRefresh(ctx, f.uid, f.sid, f.refresh) }},
		{"rotate: refresh_token_used garbage", func(ctx context.Context, f *fixture) string {
			require.NoError(t, e.Client.HSet(ctx, f.sess, fRefreshUsed, "zz yy").Err())
			return f.sess
		}, func(ctx context.Context, f *fixture) error {
			_, err := f.s.RotateRefresh(ctx, f.uid, f.sid, "stale")
			return err
		}},
		{"rotate: rotation record garbage", func(ctx context.Context, f *fixture) string {
			rot, err := rotationKey.Key(e.NS, f.uid, f.sid)
			require.NoError(t, err)
			require.NoError(t, e.Client.Set(ctx, rot, "not a record", time.Hour).Err())
			return rot
		}, func(ctx context.Context, f *fixture) error {
			_, err := f.s.RotateRefresh(ctx, f.uid, f.sid, "stale")
			return err
		}},
		{"renew: created_at garbage", func(ctx context.Context, f *fixture) string {
			require.NoError(t, e.Client.HSet(ctx, f.sess, fCreatedAt, "yesterday").Err())
			return f.sess
		}, func(ctx context.Context, f *fixture) error { _, _, err := f.s.Renew(ctx, f.uid, f.sid); return err }},
		{"renew: another user's", func(ctx context.Context, f *fixture) string {
			require.NoError(t, e.Client.HSet(ctx, f.sess, fUserID, "someone-else").Err())
			return f.sess
		}, func(ctx context.Context, f *fixture) error { _, _, err := f.s.Renew(ctx, f.uid, f.sid); return err }},
		{"list: a member that is not a session ID", func(ctx context.Context, f *fixture) string {
			require.NoError(t, e.Client.ZAdd(ctx, f.idx, redis.Z{Score: float64(e.Now().Add(time.Minute).UnixMilli()), Member: "a-bearer-token-of-another-app"}).Err())
			return f.idx
		}, func(ctx context.Context, f *fixture) error { _, err := f.s.List(ctx, f.uid); return err }},
	}
	for _, ev := range []bool{false, true} {
		s := storeWith(t, e, ev)
		for i, row := range rows {
			t.Run(fmt.Sprintf("events=%v/%s", ev, row.name), func(t *testing.T) {
				ctx := e.Ctx()
				f := &fixture{s: s, uid: fmt.Sprint("r", i, "-", ev)}
				s1, _ := mustCreate(t, e, s, f.uid)
				s2, refresh := mustCreate(t, e, s, f.uid)
				f.sid, f.refresh = s2.ID, refresh
				f.sess, f.idx = sessKey(t, e, f.uid, f.sid), idxKey(t, e, f.uid)
				expireInIndex(t, e, f.idx, s1.ID)
				k := row.plant(ctx, f)
				before := e.Snapshot()
				requireCorrupt(t, row.call(ctx, f), k, row.name)
				assert.Equal(t, before, e.Snapshot(), "%s: nothing written", row.name)
			})
		}
	}
}

// TestUserCorruptLoginTimeWritesNothing: a user record whose login_time
// is an integer past year 9999 (which parseUser refuses) fails
// Authenticate and Validate naming the record before anything is
// written: the session is not slid, the index not pruned, last_seen and
// the record's TTL not touched.
func TestUserCorruptLoginTimeWritesNothing(t *testing.T) {
	e := harness.New(t)
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	for _, ev := range []bool{false, true} {
		s := storeWith(t, e, ev)
		for _, op := range []string{"authenticate", "validate"} {
			t.Run(fmt.Sprintf("events=%v/%s", ev, op), func(t *testing.T) {
				ctx := e.Ctx()
				uid := fmt.Sprint("u-", op, "-", ev)
				s1, _ := mustCreate(t, e, s, uid)
				s2, _ := mustCreate(t, e, s, uid)
				_, err := users.Login(ctx, uid, LoginInfo{DeviceID: "d"})
				require.NoError(t, err)
				expireInIndex(t, e, idxKey(t, e, uid), s1.ID)
				ukey, err := userKey.Key(e.NS, uid)
				require.NoError(t, err)
				require.NoError(t, e.Client.HSet(ctx, ukey, "login_time", "9000000000000000").Err())
				e.Advance(5 * time.Millisecond) // a touch would write a last_seen of its own
				before := e.Snapshot()
				if op == "authenticate" {
					_, _, err = s.Authenticate(ctx, users, uid, s2.ID)
				} else {
					_, err = users.Validate(ctx, uid)
				}
				requireCorrupt(t, err, ukey, op)
				assert.Equal(t, before, e.Snapshot(), "%s: nothing written", op)
			})
		}
	}
}
