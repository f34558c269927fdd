package presence_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

const ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)"

var web = presence.Metadata{Device: "web", UserAgent: ua, IP: "192.168.1.1", SocketID: "socket_abc123"}

// short is a profile whose lifetimes fit real-time tests on real servers.
var short = presence.Profile{Format: presence.FormatDetailed, TTL: time.Second, Heartbeat: 400 * time.Millisecond, Retention: 1500 * time.Millisecond, TypingTTL: 900 * time.Millisecond, TypingThrottle: 600 * time.Millisecond}

func newTracker(t *testing.T, e *harness.Env, opts ...presence.Option) *presence.Tracker {
	t.Helper()
	tr, err := presence.New(e.Client, append([]presence.Option{presence.WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return tr
}

func key(t *testing.T, e *harness.Env, tmpl string, args ...string) string {
	t.Helper()
	tm, ok := harness.Registry(t, presence.Schema()).Lookup(tmpl)
	require.True(t, ok, tmpl)
	k, err := tm.Key(e.NS, args...)
	require.NoError(t, err)
	return k
}

var msRe = regexp.MustCompile(`\d{13}`)

// layout is one storage layout under test: every tracker test runs once per
// layout through eachLayout, with l.opt() among its tracker's options, and
// reads or plants stored connections through l.
type layout struct{ presence.Layout }

func eachLayout(t *testing.T, f func(t *testing.T, l layout)) {
	for _, l := range []presence.Layout{presence.LayoutHash, presence.LayoutSingleKey} {
		t.Run(l.String(), func(t *testing.T) { f(t, layout{l}) })
	}
}

func (l layout) opt() presence.Option { return presence.WithLayout(l.Layout) }

func (l layout) single() bool { return l.Layout == presence.LayoutSingleKey }

// connsKey is the key that holds user's connections.
func (l layout) connsKey(t *testing.T, e *harness.Env, user string) string {
	if l.single() {
		return key(t, e, "presence:{user_id}", user)
	}
	return key(t, e, "connections:{user_id}", user)
}

// storedConns decodes the connections of a stored value, in the hash
// layout's form: raw is the presence JSON (single-key) and hash the
// connections hash (hash layout).
func (l layout) storedConns(raw string, hash map[string]string) (map[string]string, error) {
	if !l.single() {
		return hash, nil
	}
	out := map[string]string{}
	if raw == "" {
		return out, nil
	}
	var v struct {
		Connections map[string]json.RawMessage `json:"connections"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, err
	}
	for id, c := range v.Connections {
		// [connectedAt, lastSeen, metadata] in the hash layout's form
		var a []json.RawMessage
		if err := json.Unmarshal(c, &a); err != nil || len(a) != 3 {
			return nil, fmt.Errorf("connection %q: %s is not [connectedAt, lastSeen, metadata]", id, c)
		}
		out[id] = fmt.Sprintf(`{"connectedAt":%s,"lastSeen":%s,"metadata":%s}`, a[0], a[1], a[2])
	}
	return out, nil
}

// conns reads user's stored connections: connection ID -> JSON in the hash
// layout's form.
func (l layout) conns(t *testing.T, e *harness.Env, user string) map[string]string {
	t.Helper()
	ctx := e.Ctx()
	var raw string
	var hash map[string]string
	if l.single() {
		raw = e.Client.Get(ctx, key(t, e, "presence:{user_id}", user)).Val()
	} else {
		hash = e.Client.HGetAll(ctx, key(t, e, "connections:{user_id}", user)).Val()
	}
	cs, err := l.storedConns(raw, hash)
	require.NoError(t, err)
	return cs
}

// equalConn asserts a stored connection JSON (timestamps masked as N)
// equals want: byte for byte with the hash layout, whose values are seed
// 002's; as JSON with the single-key layout, which leaves member order to
// cjson.
func (l layout) equalConn(t *testing.T, want, got string) {
	t.Helper()
	got = msRe.ReplaceAllString(got, "N")
	if !l.single() {
		assert.Equal(t, want, got)
		return
	}
	q := regexp.MustCompile(`\bN\b`)
	assert.JSONEq(t, q.ReplaceAllString(want, "0"), q.ReplaceAllString(got, "0"))
}

// ids lists the keys of cs in order.
func ids(cs map[string]string) []string {
	out := make([]string, 0, len(cs))
	for id := range cs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// presencePart returns a stored presence value as seed readers see it: with
// the single-key layout it checks the "connections" member is last and
// strips it.
func (l layout) presencePart(t *testing.T, raw string) string {
	t.Helper()
	if !l.single() || raw == "" {
		return raw
	}
	i := strings.Index(raw, `,"connections":{`)
	if i < 0 {
		return raw // offline: no connections member
	}
	require.True(t, json.Valid([]byte("{"+raw[i+1:])), "connections is the last member: %s", raw)
	require.True(t, json.Valid([]byte(raw)), raw)
	return raw[:i] + "}"
}

// plantConn stores connection id of an online user as value v (JSON, or
// any text, stored as a JSON string by the single-key layout) with a minute
// of TTL, and returns the key that holds it.
func (l layout) plantConn(t *testing.T, e *harness.Env, user, id, v string) string {
	t.Helper()
	ctx := e.Ctx()
	k := l.connsKey(t, e, user)
	if !l.single() {
		require.NoError(t, e.Client.HSet(ctx, k, id, v).Err())
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
		return k
	}
	if !json.Valid([]byte(v)) {
		b, _ := json.Marshal(v)
		v = string(b)
	}
	idJSON, _ := json.Marshal(id)
	raw := `{"status":"online","lastSeen":` + fmt.Sprint(e.Now().UnixMilli()) + `,"activeConnections":1,"connections":{` + string(idJSON) + `:` + v + `}}`
	require.NoError(t, e.Client.Set(ctx, k, raw, time.Minute).Err())
	return k
}

// dataKeys returns the keys under the test's namespace but the request
// memos (which outlive the data by up to presence.ReplayWindow).
func dataKeys(e *harness.Env) []string {
	var out []string
	for _, k := range e.Keys() {
		if !strings.Contains(k, "presence:requests:") && !strings.Contains(k, "presence:sweeps:") && !strings.Contains(k, "typing:requests:") {
			out = append(out, k)
		}
	}
	return out
}

func TestDocTable(t *testing.T) { harness.CheckDocTable(t, presence.Schema()) }

func TestKeysShareSlot(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		users := []string{"42", "user-123", "a:b{c}", "ünï \"q\"", strings.Repeat("x", 1000)}
		for _, u := range users {
			p := key(t, e, "presence:{user_id}", u)
			c := key(t, e, "connections:{user_id}", u)
			_, err := tr.Connect(ctx, u, presence.Conn{ID: "c1"})
			require.NoError(t, err)
			// The index shard is the one in the slot of the presence key.
			var shard string
			for _, k := range e.Keys() {
				if strings.Contains(k, "presence:online:") && keys.SameSlot(k, p) {
					shard = k
				}
			}
			require.NotEmpty(t, shard, "no index shard in the slot of %s", p)
			assert.True(t, keys.SameSlot(p, c, shard), u)
		}
		all, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, users, all, "IDs come back from the index unchanged")
		ty := key(t, e, "typing:{conversation_id}:{user_id}", "conv-456", "user-123")
		assert.True(t, keys.SameSlot(ty, key(t, e, "typers:{conversation_id}", "conv-456"), key(t, e, "typing:throttle:{conversation_id}:{user_id}", "conv-456", "user-123")))
	})
}

func TestLifecycleSeed002(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()

		r, err := tr.Connect(ctx, "12345", presence.Conn{ID: "conn_123", Metadata: web, Activity: "active"})
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 1, Changed: true, Status: presence.Online}, r)
		r, err = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_456", Metadata: presence.Metadata{Device: "mobile"}})
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 2, Changed: false, Status: presence.Online}, r)

		pk, ck := key(t, e, "presence:{user_id}", "12345"), key(t, e, "connections:{user_id}", "12345")
		raw, err := e.Client.Get(ctx, pk).Result()
		require.NoError(t, err)
		assert.Equal(t, `{"status":"online","lastSeen":N,"activeConnections":2,"metadata":{"device":"mobile","lastActivity":"active"}}`, msRe.ReplaceAllString(l.presencePart(t, raw), "N"))
		assert.NotContains(t, raw, `\/`, "user agents keep their slashes unescaped")
		if l.single() {
			assert.JSONEq(t, `{"status":"online","lastSeen":0,"activeConnections":2,"metadata":{"device":"mobile","lastActivity":"active"},"connections":{
				"conn_123":[0,0,{"device":"web","userAgent":"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)","ip":"192.168.1.1","socketId":"socket_abc123"}],
				"conn_456":[0,0,{"device":"mobile"}]}}`, msRe.ReplaceAllString(raw, "0"))
		}
		cs := l.conns(t, e, "12345")
		assert.Equal(t, []string{"conn_123", "conn_456"}, ids(cs))
		l.equalConn(t, `{"connectedAt":N,"lastSeen":N,"metadata":{"device":"web","userAgent":"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)","ip":"192.168.1.1","socketId":"socket_abc123"}}`, cs["conn_123"])
		l.equalConn(t, `{"connectedAt":N,"lastSeen":N,"metadata":{"device":"mobile"}}`, cs["conn_456"])
		if !e.Real() {
			assert.Contains(t, raw, fmt.Sprint(e.Now().UnixMilli()))
		}
		ttlKeys := []string{pk, ck}
		if l.single() {
			ttlKeys = ttlKeys[:1]
			assert.Zero(t, e.Client.Exists(ctx, ck).Val(), "no connections hash")
		}
		for _, k := range ttlKeys {
			ttl := e.Client.PTTL(ctx, k).Val()
			assert.True(t, ttl > 55*time.Second && ttl <= 60*time.Second, "%s ttl %v", k, ttl)
		}

		p, err := tr.Get(ctx, "12345")
		require.NoError(t, err)
		assert.Equal(t, presence.Online, p.Status)
		assert.Equal(t, 2, p.Connections)
		assert.Equal(t, "mobile", p.Device)
		assert.Equal(t, "active", p.Activity)
		assert.WithinDuration(t, e.Now(), p.LastSeen, 2*time.Second)

		r, err = tr.Heartbeat(ctx, "12345", "conn_123")
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 2, Status: presence.Online}, r)

		r, err = tr.Disconnect(ctx, "12345", "conn_123")
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 1, Status: presence.Online}, r)
		r, err = tr.Disconnect(ctx, "12345", "conn_123") // unknown: not an error
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 1, Status: presence.Online}, r)
		r, err = tr.Disconnect(ctx, "12345", "conn_456")
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 0, Changed: true, Status: presence.Offline}, r)

		raw, err = e.Client.Get(ctx, pk).Result()
		require.NoError(t, err)
		assert.Equal(t, `{"status":"offline","lastSeen":N,"activeConnections":0,"metadata":{"device":"mobile"}}`, msRe.ReplaceAllString(raw, "N"))
		ttl := e.Client.PTTL(ctx, pk).Val()
		assert.True(t, ttl > 590*time.Second && ttl <= 600*time.Second, "retention ttl %v", ttl)
		assert.Zero(t, e.Client.Exists(ctx, ck).Val(), "connections hash removed")
		p, err = tr.Get(ctx, "12345")
		require.NoError(t, err)
		assert.Equal(t, presence.Offline, p.Status)
		assert.False(t, p.LastSeen.IsZero())
		e.RequireTTLs(nil)
	})
}

func TestSeed004Format(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(presence.CompactProfile()))
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "user-123", presence.Conn{ID: "s1", Metadata: web})
		require.NoError(t, err)
		_, err = tr.Connect(ctx, "user-123", presence.Conn{ID: "s2"})
		require.NoError(t, err)
		pk := key(t, e, "presence:{user_id}", "user-123")
		raw, err := e.Client.Get(ctx, pk).Result()
		require.NoError(t, err)
		assert.Equal(t, `{"userId":"user-123","status":"online","lastSeen":N}`, msRe.ReplaceAllString(l.presencePart(t, raw), "N"))
		assert.Equal(t, []string{"s1", "s2"}, ids(l.conns(t, e, "user-123")))
		ttl := e.Client.PTTL(ctx, pk).Val()
		assert.True(t, ttl > 295*time.Second && ttl <= 300*time.Second, "ttl %v", ttl)
		p, err := tr.Get(ctx, "user-123")
		require.NoError(t, err)
		assert.True(t, p.Online())

		// One tab closing does not take the user offline (seed 004 would DEL).
		r, err := tr.Disconnect(ctx, "user-123", "s1")
		require.NoError(t, err)
		assert.False(t, r.Changed)
		assert.Equal(t, int64(1), e.Client.Exists(ctx, pk).Val())
		r, err = tr.Disconnect(ctx, "user-123", "s2")
		require.NoError(t, err)
		assert.True(t, r.Changed)
		assert.Zero(t, e.Client.Exists(ctx, pk).Val(), "seed 004 deletes the key on going offline")
	})
}

func TestNoHashTagsIsSeedBytes(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		if e.Backend == harness.Cluster {
			t.Skip("untagged keys are for a standalone server")
		}
		ns := e.NS
		ns.NoHashTags = true
		tr, err := presence.New(e.Client, presence.WithNamespace(ns), l.opt())
		require.NoError(t, err)
		ctx := e.Ctx()
		_, err = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_123"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), e.Client.Exists(ctx, ns.Prefix+"presence:12345").Val())
		hashes := int64(1)
		if l.single() {
			hashes = 0
		}
		assert.Equal(t, hashes, e.Client.Exists(ctx, ns.Prefix+"connections:12345").Val())
		typing, err := typingOf(presence.New(e.Client, presence.WithNamespace(ns)))
		require.NoError(t, err)
		_, err = typing.Start(ctx, "conv-456", "user-123", "john_doe")
		require.NoError(t, err)
		raw, err := e.Client.Get(ctx, ns.Prefix+"typing:conv-456:user-123").Result()
		require.NoError(t, err)
		assert.Equal(t, `{"userId":"user-123","username":"john_doe","timestamp":N}`, msRe.ReplaceAllString(raw, "N"))
	})
}

// TestStaleConnectionPruned: a device that stops heartbeating drops out
// while the other device keeps the hash alive.
func TestStaleConnectionPruned(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(short))
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "u", presence.Conn{ID: "phone"})
		require.NoError(t, err)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "laptop"})
		require.NoError(t, err)
		for i := 0; i < 3; i++ { // laptop beats for 1.5 s; phone is silent
			e.Advance(500 * time.Millisecond)
			_, err = tr.Heartbeat(ctx, "u", "laptop")
			require.NoError(t, err)
		}
		p, err := tr.Get(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, 1, p.Connections, "the silent phone is pruned")
		assert.Equal(t, []string{"laptop"}, ids(l.conns(t, e, "u")))
		r, err := tr.Heartbeat(ctx, "u", "phone")
		assert.ErrorIs(t, err, presence.ErrUnknownConnection)
		assert.Equal(t, presence.Result{Connections: 1, Status: presence.Online}, r)
	})
}

// TestSilentDeath: when every device stops heartbeating, the user goes
// offline at the TTL after the freshest heartbeat, like seed 002 (the keys
// expire together), the last seen time stays readable for the retention,
// and the dead connection is unknown afterwards.
func TestSilentDeath(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(short))
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		connected := e.Now()
		e.Advance(600 * time.Millisecond)
		require.NoError(t, tr.SetActivity(ctx, "u", "idle")) // not a heartbeat
		e.Advance(500 * time.Millisecond)
		p, err := tr.Get(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, presence.Offline, p.Status)
		assert.WithinDuration(t, connected, p.LastSeen, 200*time.Millisecond, "last seen kept by the index")
		ps, err := tr.GetMany(ctx, []string{"u"})
		require.NoError(t, err)
		assert.Equal(t, p, ps[0])
		assert.Zero(t, e.Client.Exists(ctx, key(t, e, "presence:{user_id}", "u")).Val(), "the seed's key expired on time")
		_, err = tr.Heartbeat(ctx, "u", "a")
		require.ErrorIs(t, err, presence.ErrUnknownConnection)
		n, err := tr.OnlineCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		e.Advance(1600 * time.Millisecond) // past the retention
		p, err = tr.Get(ctx, "u")
		require.NoError(t, err)
		assert.True(t, p.LastSeen.IsZero())
		assert.Empty(t, dataKeys(e))
	})
}

func TestRetention(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(short))
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		e.Advance(300 * time.Millisecond)
		r, err := tr.Disconnect(ctx, "u", "a")
		require.NoError(t, err)
		require.True(t, r.Changed)
		off := e.Now()
		e.Advance(1200 * time.Millisecond) // past the online TTL, within retention
		p, err := tr.Get(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, presence.Offline, p.Status)
		assert.WithinDuration(t, off, p.LastSeen, time.Second)
		e.Advance(400 * time.Millisecond) // past retention
		p, err = tr.Get(ctx, "u")
		require.NoError(t, err)
		assert.True(t, p.LastSeen.IsZero(), "last seen gone after retention")
		e.RequireTTLs(nil)
	})
}

func TestSeed002RetentionFastForward(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		e.RequireShortWaits(601 * time.Second)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		get := func() presence.Presence {
			t.Helper()
			p, err := tr.Get(ctx, "u")
			require.NoError(t, err)
			return p
		}
		_, err := tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		e.Advance(30 * time.Second)
		_, err = tr.Heartbeat(ctx, "u", "a")
		require.NoError(t, err)
		e.Advance(59 * time.Second)
		p := get()
		assert.True(t, p.Online(), "heartbeat every 30 s keeps the user online")
		_, err = tr.Disconnect(ctx, "u", "a")
		require.NoError(t, err)
		e.Advance(599 * time.Second)
		p = get()
		assert.False(t, p.LastSeen.IsZero())
		e.Advance(2 * time.Second)
		p = get()
		assert.True(t, p.LastSeen.IsZero())
		assert.Empty(t, dataKeys(e))
	})
}

func TestConnections(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(short))
		ctx := e.Ctx()
		cs, err := tr.Connections(ctx, "u")
		require.NoError(t, err)
		assert.Empty(t, cs)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "b", Metadata: web})
		require.NoError(t, err)
		e.Advance(600 * time.Millisecond)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a", Metadata: presence.Metadata{Device: "mobile"}})
		require.NoError(t, err)
		cs, err = tr.Connections(ctx, "u")
		require.NoError(t, err)
		require.Len(t, cs, 2)
		assert.Equal(t, "a", cs[0].ID)
		assert.Equal(t, presence.Metadata{Device: "mobile"}, cs[0].Metadata)
		assert.Equal(t, web, cs[1].Metadata)
		assert.True(t, cs[1].ConnectedAt.Before(cs[0].ConnectedAt))
		e.Advance(500 * time.Millisecond) // b is stale, not yet pruned
		cs, err = tr.Connections(ctx, "u")
		require.NoError(t, err)
		require.Len(t, cs, 1)
		assert.Equal(t, "a", cs[0].ID)
		_, err = tr.Connections(ctx, "")
		assert.ErrorIs(t, err, keys.ErrInvalid)

		// IDs and metadata that need escaping, and no metadata at all.
		odd := "x\"y\\/ü\x01 1"
		_, err = tr.Connect(ctx, "w", presence.Conn{ID: odd, Metadata: presence.Metadata{UserAgent: `a/"b"\c`}})
		require.NoError(t, err)
		_, err = tr.Connect(ctx, "w", presence.Conn{ID: "2"})
		require.NoError(t, err)
		_, err = tr.Heartbeat(ctx, "w", odd)
		require.NoError(t, err)
		cs, err = tr.Connections(ctx, "w")
		require.NoError(t, err)
		require.Len(t, cs, 2)
		assert.Equal(t, []string{"2", odd}, []string{cs[0].ID, cs[1].ID})
		assert.Equal(t, presence.Metadata{}, cs[0].Metadata)
		assert.Equal(t, presence.Metadata{UserAgent: `a/"b"\c`}, cs[1].Metadata)

		ck := l.plantConn(t, e, "v", "x", "{bad")
		_, err = tr.Connections(ctx, "v")
		assert.ErrorIs(t, err, keys.ErrCorrupt)
		assert.Contains(t, err.Error(), ck)
	})
}

// typingOf and availabilityOf return the Typing and the Availability of
// the Tracker New built: typingOf(presence.New(rdb, opts...)).
func typingOf(t *presence.Tracker, err error) (*presence.Typing, error) {
	if err != nil {
		return nil, err
	}
	return t.Typing(), nil
}

func availabilityOf(t *presence.Tracker, err error) (*presence.Availability, error) {
	if err != nil {
		return nil, err
	}
	return t.Availability(), nil
}
