package presence_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

func TestNewValidates(t *testing.T) {
	e := harness.New(t)
	ok := func(p presence.Profile) presence.Profile { return p }
	base := presence.Profile{TTL: time.Second, Heartbeat: time.Millisecond, TypingTTL: time.Second}
	with := func(f func(p *presence.Profile)) presence.Profile { p := base; f(&p); return p }
	cases := map[string][]presence.Option{
		"zero TTL":            {presence.WithProfile(with(func(p *presence.Profile) { p.TTL = 0 }))},
		"TTL over max":        {presence.WithProfile(with(func(p *presence.Profile) { p.TTL, p.Heartbeat = presence.MaxTTL+1, time.Second }))},
		"heartbeat = TTL":     {presence.WithProfile(with(func(p *presence.Profile) { p.Heartbeat = time.Second }))},
		"zero heartbeat":      {presence.WithProfile(with(func(p *presence.Profile) { p.Heartbeat = 0 }))},
		"negative retention":  {presence.WithProfile(with(func(p *presence.Profile) { p.Retention = -1 }))},
		"sub-ms retention":    {presence.WithProfile(with(func(p *presence.Profile) { p.Retention = time.Microsecond }))},
		"retention over max":  {presence.WithProfile(with(func(p *presence.Profile) { p.Retention = presence.MaxRetention + 1 }))},
		"zero typing TTL":     {presence.WithProfile(with(func(p *presence.Profile) { p.TypingTTL = 0 }))},
		"typing TTL over max": {presence.WithProfile(with(func(p *presence.Profile) { p.TypingTTL = presence.MaxTypingTTL + 1 }))},
		"negative throttle":   {presence.WithProfile(with(func(p *presence.Profile) { p.TypingThrottle = -1 }))},
		"sub-ms throttle":     {presence.WithProfile(with(func(p *presence.Profile) { p.TypingThrottle = time.Microsecond }))},
		"throttle over max":   {presence.WithProfile(with(func(p *presence.Profile) { p.TypingThrottle = presence.MaxTypingTTL + 1 }))},
		"unknown format":      {presence.WithProfile(with(func(p *presence.Profile) { p.Format = 7 }))},
		"zero profile":        {presence.WithProfile(presence.Profile{})},
		"negative conns":      {presence.WithMaxConnections(-1)},
		"too many conns":      {presence.WithMaxConnections(presence.MaxConnections + 1)},
		"unknown layout":      {presence.WithLayout(7)},
		"metadata 1":          {presence.WithMaxMetadata(1)},
		"metadata over max":   {presence.WithMaxMetadata(presence.MaxMetadata + 1)},
		"negative pipelining": {presence.WithPipelining(-1)},
		"pipelining over max": {presence.WithPipelining(presence.MaxPipelines + 1)},
		"bad tag":             {presence.WithAvailabilityTag(strings.Repeat("t", 1025))},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := presence.New(e.Client, opts...)
			assert.ErrorIs(t, err, presence.ErrInvalid)
			_, err = typingOf(presence.New(e.Client, opts...))
			assert.ErrorIs(t, err, presence.ErrInvalid)
			_, err = availabilityOf(presence.New(e.Client, opts...))
			assert.ErrorIs(t, err, presence.ErrInvalid)
		})
	}
	for _, c := range []redis.UniversalClient{nil, (*redis.Client)(nil), redis.NewClient(&redis.Options{Addr: e.Addr})} {
		_, err := presence.New(c)
		assert.ErrorIs(t, err, presence.ErrInvalid, "nil, or no ContextTimeoutEnabled")
	}
	_, err := presence.New(e.Client, presence.WithNamespace(keys.Namespace{Prefix: "a{b"}))
	assert.ErrorIs(t, err, keys.ErrInvalid)
	assert.ErrorIs(t, err, presence.ErrInvalid)

	// Zero values are the defaults; bounds are accepted.
	for _, opts := range [][]presence.Option{
		{presence.WithMaxConnections(0), presence.WithMaxMetadata(0), presence.WithPipelining(0)},
		{presence.WithMaxConnections(presence.MaxConnections), presence.WithMaxMetadata(presence.MaxMetadata), presence.WithPipelining(presence.MaxPipelines)},
		{presence.WithProfile(ok(presence.Profile{TTL: presence.MaxTTL, Heartbeat: time.Hour, Retention: presence.MaxRetention, TypingTTL: presence.MaxTypingTTL, TypingThrottle: presence.MaxTypingTTL}))},
	} {
		_, err := presence.New(e.Client, opts...)
		assert.NoError(t, err)
	}
	tr, err := presence.New(e.Client, presence.WithNamespace(keys.Namespace{Prefix: "ha:"}))
	require.NoError(t, err)
	assert.Equal(t, "ha:presence:events", tr.Channel())
	assert.Equal(t, presence.DetailedProfile(), tr.Profile())
	assert.Equal(t, presence.LayoutHash, tr.Layout())

	// Durations are whole milliseconds, rounded up.
	tr, err = presence.New(e.Client, presence.WithProfile(presence.Profile{TTL: 1500 * time.Microsecond, Heartbeat: time.Millisecond, Retention: 1001 * time.Microsecond, TypingTTL: time.Millisecond}))
	require.NoError(t, err)
	assert.Equal(t, 2*time.Millisecond, tr.Profile().TTL)
	assert.Equal(t, 2*time.Millisecond, tr.Profile().Retention)
}

func TestBadInputWritesNothing(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithMaxMetadata(200), presence.WithMaxConnections(2))
		ctx := e.Ctx()
		cases := []struct {
			name string
			err  error
			run  func() error
		}{
			{"empty user", keys.ErrInvalid, func() error { _, err := tr.Connect(ctx, "", presence.Conn{ID: "c"}); return err }},
			{"long user", keys.ErrInvalid, func() error {
				_, err := tr.Connect(ctx, strings.Repeat("u", 1025), presence.Conn{ID: "c"})
				return err
			}},
			{"empty conn", presence.ErrInvalid, func() error { _, err := tr.Connect(ctx, "u", presence.Conn{}); return err }},
			{"long conn", presence.ErrInvalid, func() error {
				_, err := tr.Connect(ctx, "u", presence.Conn{ID: strings.Repeat("c", presence.MaxConnIDLen+1)})
				return err
			}},
			{"bad utf8 conn", presence.ErrInvalid, func() error { _, err := tr.Connect(ctx, "u", presence.Conn{ID: "\xff"}); return err }},
			{"oversized metadata", presence.ErrInvalid, func() error {
				_, err := tr.Connect(ctx, "u", presence.Conn{ID: "c", Metadata: presence.Metadata{UserAgent: strings.Repeat("M", 190)}})
				return err
			}},
			{"heartbeat empty user", keys.ErrInvalid, func() error { _, err := tr.Heartbeat(ctx, "", "c"); return err }},
			{"heartbeat empty conn", presence.ErrInvalid, func() error { _, err := tr.Heartbeat(ctx, "u", ""); return err }},
			{"disconnect empty conn", presence.ErrInvalid, func() error { _, err := tr.Disconnect(ctx, "u", ""); return err }},
			{"status empty user", keys.ErrInvalid, func() error { _, err := tr.SetStatus(ctx, "", presence.Away); return err }},
			{"empty activity", presence.ErrInvalid, func() error { return tr.SetActivity(ctx, "u", "") }},
			{"get empty", keys.ErrInvalid, func() error { _, err := tr.Get(ctx, ""); return err }},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { assert.ErrorIs(t, c.run(), c.err) })
		}
		assert.Empty(t, e.Keys(), "nothing written")

		// Heartbeat of an unknown connection errors and registers nothing.
		_, err := tr.Heartbeat(ctx, "u", "c")
		assert.ErrorIs(t, err, presence.ErrUnknownConnection)
		assert.Empty(t, e.Keys())

		// The connection limit bounds the hash.
		for _, c := range []string{"a", "b"} {
			_, err := tr.Connect(ctx, "u", presence.Conn{ID: c})
			require.NoError(t, err)
		}
		r, err := tr.Connect(ctx, "u", presence.Conn{ID: "c"})
		assert.ErrorIs(t, err, presence.ErrTooManyConnections)
		assert.Equal(t, 2, r.Connections)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a"}) // replacing is fine
		require.NoError(t, err)
		assert.Len(t, l.conns(t, e, "u"), 2)
	})
}

func TestCorruptData(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		pk := key(t, e, "presence:{user_id}", "u")
		for _, bad := range []string{"not json", `{"status":"dancing"}`, `{"lastSeen":1}`, `[1]`} {
			require.NoError(t, e.Client.Set(ctx, pk, bad, time.Minute).Err())
			_, err := tr.Get(ctx, "u")
			assert.ErrorIs(t, err, keys.ErrCorrupt, bad)
			assert.Contains(t, err.Error(), pk)
			_, err = tr.GetMany(ctx, []string{"x", "u"})
			assert.ErrorIs(t, err, keys.ErrCorrupt, bad)
			_, err = tr.Connect(ctx, "u", presence.Conn{ID: "c"})
			assert.ErrorIs(t, err, keys.ErrCorrupt, bad)
			assert.Contains(t, err.Error(), pk)
		}
		require.NoError(t, e.Client.Del(ctx, pk).Err())

		ck := l.plantConn(t, e, "v", "c", "garbage")
		_, err := tr.Heartbeat(ctx, "v", "c")
		assert.ErrorIs(t, err, keys.ErrCorrupt)
		assert.Contains(t, err.Error(), ck)
		assert.Contains(t, err.Error(), `"c"`)
	})
}

// TestSeedWrittenValues: values written by seed code (JSON with spaces, as
// seed 002's shell examples show) are read and refreshed.
func TestSeedWrittenValues(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		now := e.Now().UnixMilli()
		pk, ck := key(t, e, "presence:{user_id}", "12345"), key(t, e, "connections:{user_id}", "12345")
		pv := `{"status": "online", "lastSeen": 1698000000000, "activeConnections": 1, "metadata": {"device": "web", "userAgent": "Mozilla/5.0...", "lastActivity": "typing"}}`
		cv := `{"connectedAt": 1698000000000, "lastSeen": ` + itoa(now) + `, "metadata": {"device": "web"}}`
		if l.single() { // hand-written, spaced like the seed's examples
			pv = strings.TrimSuffix(pv, "}") + `, "connections": {"conn_123": [1698000000000, ` + itoa(now) + `, {"device": "web"}]}}`
		} else {
			require.NoError(t, e.Client.HSet(ctx, ck, "conn_123", cv).Err())
			require.NoError(t, e.Client.Expire(ctx, ck, time.Minute).Err())
		}
		require.NoError(t, e.Client.Set(ctx, pk, pv, time.Minute).Err())
		p, err := tr.Get(ctx, "12345")
		require.NoError(t, err)
		assert.Equal(t, presence.Presence{UserID: "12345", Status: presence.Online, LastSeen: time.UnixMilli(1698000000000), Connections: 1, Device: "web", Activity: "typing"}, p)
		r, err := tr.Heartbeat(ctx, "12345", "conn_123")
		require.NoError(t, err)
		assert.Equal(t, 1, r.Connections)
		// The hash layout keeps the seed's bytes, spacing included; the
		// single-key layout rewrites the whole value.
		l.equalConn(t, `{"connectedAt": N, "lastSeen": N, "metadata": {"device": "web"}}`, l.conns(t, e, "12345")["conn_123"])
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
