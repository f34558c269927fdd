package session

import (
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
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var rfc3339Seconds = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

func TestDocTable(t *testing.T) { harness.CheckDocTable(t, Schema()) }

func TestKeysShareSlot(t *testing.T) {
	ns := keys.Namespace{Prefix: "ha:"}
	for _, uid := range []string{"42", "user:with:colons", "{tag}", "ü"} {
		k, err := sessionKey.Key(ns, uid, "AAAAAAAAAAAAAAAAAAAAAA")
		require.NoError(t, err)
		idx, err := indexKey.Key(ns, uid)
		require.NoError(t, err)
		u, err := userKey.Key(ns, uid)
		require.NoError(t, err)
		assert.True(t, keys.SameSlot(k, idx, u), "%s %s %s", k, idx, u)
	}
	k, _ := sessionKey.Key(keys.Namespace{}, "42", "abc")
	idx, _ := indexKey.Key(keys.Namespace{}, "42")
	assert.Equal(t, "session:user:{42}:abc", k)
	assert.Equal(t, "session:index:{42}", idx)
	k, _ = sessionKey.Key(keys.Namespace{NoHashTags: true}, "42", "abc")
	assert.Equal(t, "session:user:42:abc", k, "byte-identical to seed 001 without tags")
}

func TestNewRejectsBadOptions(t *testing.T) {
	e := harness.New(t)
	cases := map[string][]Option{
		"zero idle":           {WithIdleTimeout(0)},
		"negative idle":       {WithIdleTimeout(-time.Second)},
		"zero lifetime":       {WithMaxLifetime(0)},
		"idle above cap":      {WithIdleTimeout(2 * time.Hour), WithMaxLifetime(time.Hour)},
		"negative max":        {WithMaxSessions(-1)},
		"history":             {WithRefreshHistory(0)},
		"user ttl":            {WithUserTTL(0)},
		"sub-millisecond":     {WithIdleTimeout(time.Microsecond)},
		"history above 64":    {WithRefreshHistory(65)},
		"lifetime above max":  {WithMaxLifetime(maxLifetime + time.Millisecond)},
		"idle above max":      {WithIdleTimeout(maxLifetime + time.Hour), WithMaxLifetime(maxLifetime)},
		"user ttl above max":  {WithUserTTL(maxUserTTL + time.Millisecond)},
		"sessions above max":  {WithMaxSessions(maxSessions + 1)},
		"negative pipelines":  {WithPipelining(-1)},
		"pipelines above max": {WithPipelining(call.MaxLanes + 1)},
		"bad namespace (ok)":  nil,
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			if opts == nil {
				_, err := New(e.Client, WithNamespace(keys.Namespace{Prefix: "a{b"}))
				require.ErrorIs(t, err, keys.ErrInvalid)
				require.ErrorIs(t, err, ErrInvalid)
				return
			}
			_, err := New(e.Client, opts...)
			require.ErrorIs(t, err, ErrInvalid)
			_, err = NewUsers(e.Client, opts...)
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
	_, err := New(e.Client, WithMaxLifetime(maxLifetime), WithIdleTimeout(maxLifetime),
		WithUserTTL(maxUserTTL), WithMaxSessions(maxSessions), WithRefreshHistory(maxRefreshHistory), WithPipelining(call.MaxLanes))
	require.NoError(t, err, "every bound is allowed")
	_, err = New(nil)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(redis.NewClient(&redis.Options{Addr: e.Addr}))
	require.ErrorIs(t, err, ErrInvalid, "a client that ignores deadlines")
	_, err = NewUsers(nil)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestCreateGetSeedLayout(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, tok, err := s.Create(ctx, Info{
		UserID: "42", Email: "admin@zentoria.local", IPAddress: "192.168.1.100",
		UserAgent: "Mozilla/5.0", DeviceFingerprint: "hash", Extra: map[string]string{"role": "admin"},
	})
	require.NoError(t, err)
	require.NotEmpty(t, tok.Refresh)
	require.NotEmpty(t, tok.Handle)
	assert.Len(t, sess.ID, idLen)
	uid, sid, err := ParseHandle(tok.Handle)
	require.NoError(t, err)
	assert.Equal(t, "42", uid)
	assert.Equal(t, sess.ID, sid, "the handle names the session by its digest")
	assert.True(t, sess.AbsoluteExpiry.Sub(sess.CreatedAt) >= defaultLifetime, "absolute expiry = creation + max lifetime")
	assert.True(t, sess.ExpiresAt.Before(sess.AbsoluteExpiry))

	key := sessKey(t, e, "42", sess.ID)
	raw, err := e.Client.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	for _, f := range []string{"user_id", "email", "created_at", "last_activity", "ip_address", "user_agent", "device_fingerprint", "refresh_token_hash", "absolute_expiry", "role"} {
		assert.Contains(t, raw, f)
	}
	assert.Len(t, raw, 10)
	assert.Regexp(t, rfc3339Seconds, raw["created_at"])
	assert.Equal(t, raw["created_at"], raw["last_activity"])
	assert.Regexp(t, `^[0-9a-f]{64}$`, raw["refresh_token_hash"])
	if !e.Real() {
		assert.Equal(t, e.Now().UTC().Format("2006-01-02T15:04:05Z"), raw["created_at"])
	}
	ttl := pttl(t, e, key)
	assert.True(t, ttl > defaultIdleTimeout-5*time.Second && ttl <= defaultIdleTimeout, "ttl %v", ttl)

	got, err := s.Get(ctx, "42", sess.ID)
	require.NoError(t, err)
	assert.Equal(t, sess.ID, got.ID)
	assert.Equal(t, "admin@zentoria.local", got.Email)
	assert.Equal(t, "192.168.1.100", got.IPAddress)
	assert.Equal(t, "Mozilla/5.0", got.UserAgent)
	assert.Equal(t, "hash", got.DeviceFingerprint)
	assert.Equal(t, map[string]string{"role": "admin"}, got.Extra)
	assert.True(t, got.CreatedAt.Equal(sess.CreatedAt), "%v %v", got.CreatedAt, sess.CreatedAt)
	assert.True(t, got.AbsoluteExpiry.Equal(sess.AbsoluteExpiry))

	_, err = s.Get(ctx, "43", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Get(ctx, "42", "nope")
	require.ErrorIs(t, err, ErrNotFound)
	e.RequireTTLs(nil)
}

func TestSlidingAndAbsoluteExpiry(t *testing.T) {
	t.Parallel()
	e, s := newStore(t, WithIdleTimeout(time.Second), WithMaxLifetime(2*time.Second))
	e.RequireShortWaits(2200 * time.Millisecond)
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	key := sessKey(t, e, "u1", sess.ID)

	e.Advance(600 * time.Millisecond)
	got, err := s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err, "slid before the idle timeout")
	assert.True(t, got.ExpiresAt.Before(got.AbsoluteExpiry))
	ttl := pttl(t, e, key)
	assert.True(t, ttl > 500*time.Millisecond && ttl <= time.Second, "slid ttl %v", ttl)

	e.Advance(600 * time.Millisecond) // 1.2s: past the first idle deadline
	got, err = s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err)
	assert.True(t, got.ExpiresAt.Equal(got.AbsoluteExpiry), "capped: %v vs %v", got.ExpiresAt, got.AbsoluteExpiry)
	assert.True(t, pttl(t, e, key) <= 800*time.Millisecond, "TTL never past the cap")
	assert.True(t, pttl(t, e, idxKey(t, e, "u1")) <= 800*time.Millisecond, "index TTL follows")

	e.Advance(900 * time.Millisecond) // 2.1s: past the absolute cap
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"x": "y"}}), ErrNotFound)
	assert.Empty(t, dataKeys(t, e), "nothing brought back")
}

func TestIdleExpiry(t *testing.T) {
	t.Parallel()
	e, s := newStore(t, WithIdleTimeout(time.Second), WithMaxLifetime(time.Hour))
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	e.Advance(1100 * time.Millisecond)
	_, err := s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.Empty(t, dataKeys(t, e))
}

func TestSlidingLongRun(t *testing.T) {
	// Seed defaults: a session used every 50 minutes lives until 24h, not
	// a second longer. Miniredis only (needs a day of fake time).
	e, s := newStore(t)
	e.RequireShortWaits(25 * time.Hour)
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	for i := 0; i < 28; i++ { // 28 * 50m = 23h20m
		e.Advance(50 * time.Minute)
		_, err := s.Get(ctx, "u1", sess.ID)
		require.NoError(t, err, "step %d", i)
	}
	e.Advance(41 * time.Minute) // 24h01m
	_, err := s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, dataKeys(t, e))
}

func TestUpdate(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, _, err := s.Create(ctx, Info{UserID: "u1", Extra: map[string]string{"a": "1", "b": "2"}})
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"email": "new@example.com", "c": "3"}, Delete: []string{"a"}}))
	got, err := s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err)
	assert.Equal(t, "new@example.com", got.Email)
	assert.Equal(t, map[string]string{"b": "2", "c": "3"}, got.Extra)

	for name, ch := range map[string]Changes{
		"user_id":            {Set: map[string]string{"user_id": "evil"}},
		"created_at":         {Set: map[string]string{"created_at": "x"}},
		"refresh_token_hash": {Set: map[string]string{"refresh_token_hash": "x"}},
		"absolute_expiry":    {Set: map[string]string{"absolute_expiry": "99999999999999"}},
		"delete seed field":  {Delete: []string{"email"}},
		"oversize":           {Set: map[string]string{"c": strings.Repeat("x", maxFieldLen+1)}},
		"empty name":         {Set: map[string]string{"": "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, s.Update(ctx, "u1", sess.ID, ch), ErrInvalid)
		})
	}
	require.ErrorIs(t, s.Update(ctx, "u1", "missing", Changes{Set: map[string]string{"c": "1"}}), ErrNotFound)
	assert.Len(t, dataKeys(t, e), 2, "no hash created for a missing session")
}

func TestCreateBadInput(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	big := strings.Repeat("x", maxFieldLen+1)
	many := map[string]string{}
	for i := 0; i <= maxExtraFields; i++ {
		many[fmt.Sprint("f", i)] = "v"
	}
	cases := map[string]Info{
		"empty user":     {},
		"oversize email": {UserID: "u", Email: big},
		"oversize ua":    {UserID: "u", UserAgent: big},
		"oversize user":  {UserID: strings.Repeat("u", 1025)},
		"reserved extra": {UserID: "u", Extra: map[string]string{"created_at": "x"}},
		"empty extra":    {UserID: "u", Extra: map[string]string{"": "x"}},
		"long extra":     {UserID: "u", Extra: map[string]string{strings.Repeat("n", maxFieldNameLen+1): "x"}},
		"oversize extra": {UserID: "u", Extra: map[string]string{"n": big}},
		"too many":       {UserID: "u", Extra: many},
		"bad utf8":       {UserID: "u", Email: "\xff"},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := s.Create(ctx, in)
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
	_, _, err := s.Create(ctx, Info{UserID: strings.Repeat("u", 1025)})
	require.ErrorIs(t, err, keys.ErrInvalid)
	_, err = s.Get(ctx, "", "x")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.List(ctx, "")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.RevokeAll(ctx, "")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.RevokeOthers(ctx, "u", "")
	require.ErrorIs(t, err, ErrInvalid)
	assert.Empty(t, dataKeys(t, e), "nothing written")
}

func TestRevoke(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	a, _ := mustCreate(t, e, s, "u1")
	b, _ := mustCreate(t, e, s, "u1")
	ok, err := s.Revoke(ctx, "u1", a.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.Revoke(ctx, "u1", a.ID)
	require.NoError(t, err)
	assert.False(t, ok, "second revoke finds nothing")
	_, err = s.Get(ctx, "u1", a.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Get(ctx, "u1", b.ID)
	require.NoError(t, err)
	n, err := e.Client.Exists(ctx, sessKey(t, e, "u1", a.ID)).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
	ok, err = s.Revoke(ctx, "u1", b.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, dataKeys(t, e), "the index goes with the last session")
}

func TestRevokeAllAndOthers(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	var ids []string
	for i := 0; i < 4; i++ {
		sess, _ := mustCreate(t, e, s, "u1")
		ids = append(ids, sess.ID)
	}
	other, _ := mustCreate(t, e, s, "u2")

	n, err := s.RevokeOthers(ctx, "u1", ids[0])
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, ids[0], list[0].ID)
	for _, id := range ids[1:] {
		_, err := s.Get(ctx, "u1", id)
		require.ErrorIs(t, err, ErrNotFound, "revoked by RevokeOthers")
		require.ErrorIs(t, s.Update(ctx, "u1", id, Changes{Set: map[string]string{"k": "v"}}), ErrNotFound)
	}
	_, err = s.Get(ctx, "u1", ids[0])
	require.NoError(t, err)
	assert.True(t, pttl(t, e, idxKey(t, e, "u1")) > 0)

	n, err = s.RevokeAll(ctx, "u1")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = s.Get(ctx, "u1", ids[0])
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Get(ctx, "u2", other.ID)
	require.NoError(t, err, "other users untouched")
	for _, k := range dataKeys(t, e) {
		assert.Contains(t, k, "{u2}", "u1 leftovers were deleted by the Gets that named them: %s", k)
	}
	n, err = s.RevokeAll(ctx, "nobody")
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestMaxSessionsEvictsLeastRecentlyActive(t *testing.T) {
	e, s := newStore(t, WithMaxSessions(2))
	ctx := e.Ctx()
	a, _ := mustCreate(t, e, s, "u1")
	e.Advance(20 * time.Millisecond)
	b, _ := mustCreate(t, e, s, "u1")
	e.Advance(20 * time.Millisecond)
	_, err := s.Get(ctx, "u1", a.ID) // a is now more recently active than b
	require.NoError(t, err)
	e.Advance(20 * time.Millisecond)
	c, _ := mustCreate(t, e, s, "u1")

	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	var got []string
	for _, en := range list {
		got = append(got, en.ID)
	}
	assert.ElementsMatch(t, []string{a.ID, c.ID}, got)
	_, err = s.Get(ctx, "u1", b.ID)
	require.ErrorIs(t, err, ErrNotFound, "b evicted")
	n, err := e.Client.Exists(ctx, sessKey(t, e, "u1", b.ID)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "its hash deleted on sight")
	for i := 0; i < 5; i++ {
		mustCreate(t, e, s, "u1")
	}
	list, err = s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Len(t, list, 2)
	e.RequireTTLs(nil)
}

func TestIndexPrunedAndBounded(t *testing.T) {
	t.Parallel()
	e, s := newStore(t, WithIdleTimeout(time.Second), WithMaxLifetime(time.Hour))
	ctx := e.Ctx()
	idx := idxKey(t, e, "u1")
	old1, _ := mustCreate(t, e, s, "u1")
	old2, _ := mustCreate(t, e, s, "u1")
	e.Advance(1100 * time.Millisecond)
	fresh, _ := mustCreate(t, e, s, "u1")
	members, err := e.Client.ZRange(ctx, idx, 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{fresh.ID}, members, "Create pruned %s and %s", old1.ID, old2.ID)
	ttl := pttl(t, e, idx)
	assert.True(t, ttl > 0 && ttl <= time.Second, "index TTL %v = its only session's", ttl)

	// The index TTL is never shorter than the longest-lived session.
	e2, s2 := newStore(t, WithIdleTimeout(time.Hour))
	a, _ := mustCreate(t, e2, s2, "u1")
	e2.Advance(200 * time.Millisecond)
	b, _ := mustCreate(t, e2, s2, "u1")
	ia := pttl(t, e2, sessKey(t, e2, "u1", a.ID))
	ib := pttl(t, e2, sessKey(t, e2, "u1", b.ID))
	ix := pttl(t, e2, idxKey(t, e2, "u1"))
	assert.True(t, ix >= ib-20*time.Millisecond && ib > ia, "index %v, sessions %v %v (read one after the other)", ix, ia, ib)
	_, err = s2.Revoke(ctx, "u1", b.ID)
	require.NoError(t, err)
	ix = pttl(t, e2, idxKey(t, e2, "u1"))
	assert.True(t, ix <= ia+10*time.Millisecond, "index shrinks to the remaining session: %v vs %v", ix, ia)
}

func TestListOrder(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	a, _ := mustCreate(t, e, s, "u1")
	e.Advance(20 * time.Millisecond)
	b, _ := mustCreate(t, e, s, "u1")
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, a.ID, list[0].ID)
	assert.Equal(t, b.ID, list[1].ID)
	assert.True(t, list[0].ExpiresAt.Equal(a.ExpiresAt))
	list, err = s.List(ctx, "none")
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestRFC3339MatchesGo(t *testing.T) {
	e := harness.New(t)
	body := "return rfc3339(tonumber(ARGV[1]))"
	sc := script.New(call.Prelude(), call.RFC3339.Source(), body)
	stamps := []int64{0, 999, 59000, 951782400000, 951868799999, 1672531199000, 1672531200000, 1709164800000, 1768557600000,
		4102444799000, 4107542400000, 253402300799000, 1709210096789}
	for i := int64(0); i < 300; i++ {
		stamps = append(stamps, i*123456789012+i*7, (i*12345678901%253402300799+i)*1000+i%1000)
	}
	for _, ms := range stamps {
		got, err := sc.Run(e.Ctx(), e.Client, []string{e.NS.Prefix + "x"}, ms).Text()
		require.NoError(t, err)
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05Z")
		require.Equal(t, want, got, "ms %s", strconv.FormatInt(ms, 10))
	}
}

// TestUpdateBoundsExtraFields: repeated Updates can never grow a session
// past maxExtraFields caller-defined fields; a rejected Update writes
// nothing.
func TestUpdateBoundsExtraFields(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, tok := mustCreate(t, e, s, "u1")
	_, err := s.RotateRefresh(ctx, "u1", sess.ID, tok) // adds refresh_token_used, not an extra
	require.NoError(t, err)
	for i := 0; i < maxExtraFields; i += 8 {
		set := map[string]string{}
		for j := i; j < i+8; j++ {
			set[fmt.Sprint("f", j)] = "v"
		}
		require.NoError(t, s.Update(ctx, "u1", sess.ID, Changes{Set: set}))
	}
	key := sessKey(t, e, "u1", sess.ID)
	before, err := e.Client.HGetAll(ctx, key).Result()
	require.NoError(t, err)

	err = s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"one-more": "v", "email": "x@example.com"}})
	require.ErrorIs(t, err, ErrInvalid)
	after, err := e.Client.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after, "a rejected Update writes nothing")

	// Overwriting, seed fields and swapping one extra for another stay legal.
	require.NoError(t, s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"f0": "w", "email": "x@example.com"}}))
	require.NoError(t, s.Update(ctx, "u1", sess.ID, Changes{Delete: []string{"f1", "f1"}, Set: map[string]string{"swap": "v"}}))
	got, err := s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err)
	assert.Len(t, got.Extra, maxExtraFields)
	assert.Equal(t, "w", got.Extra["f0"])
	assert.Equal(t, "x@example.com", got.Email)
}

// TestUpdateLuaKnowsReservedFields keeps update.lua's list of the
// package's own fields in step with fields.go.
func TestUpdateLuaKnowsReservedFields(t *testing.T) {
	n := 0
	for name := range reserved {
		assert.Contains(t, updateSrc, name+" = true", "update.lua must not count %s as an extra", name)
		n++
	}
	listed := regexp.MustCompile(`\b[a-z_]+ = true,`).FindAllString(updateSrc, -1)
	assert.Len(t, listed, n, "update.lua lists a field fields.go does not reserve: %v", listed)
}

// TestSlideAtTheDeadline is a regression test for Redis 7.0, where
// PEXPIREAT inside a script compares with the live clock while lookups use
// the script's start time: a session whose deadline passed while its Get
// ran was deleted by the slide itself, and Get reported the empty hash as
// corrupt. The script below holds the clock past the deadline before
// sliding; the hash must still be there for the HGETALL that follows.
func TestSlideAtTheDeadline(t *testing.T) {
	e, s := newStore(t)
	if !e.Real() {
		t.Skip("needs a server clock that moves while a script runs (miniredis TIME is fixed)")
	}
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	body := libSrc + `
local now = now_ms()
repeat until now_ms() >= now + 3
slide(KEYS[1], KEYS[2], ARGV[1], now, 1, now + 1)
return redis.call('HGETALL', KEYS[1])`
	sc := script.New(call.Prelude(), call.ExpireAt.Source(), call.RFC3339.Source(), call.ScoreMS.Source(), body)
	v, err := sc.Run(ctx, e.Client, []string{sessKey(t, e, "u1", sess.ID), idxKey(t, e, "u1")}, sess.ID).Result()
	require.NoError(t, err)
	flat, err := reply.Strings(v)
	require.NoError(t, err)
	assert.NotEmpty(t, flat, "slide deleted the hash it was extending")
}
