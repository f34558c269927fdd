package presence_test

import (
	"context"
	"fmt"
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

// world is everything a corruption case may call, over one namespace.
type world struct {
	e   *harness.Env
	l   layout
	tr  *presence.Tracker
	ty  *presence.Typing
	tyo *presence.Typing // WithOtherWriters
	av  *presence.Availability
	avt *presence.Availability // WithAvailabilityTag("support")
	ch  *presence.Channels[map[string]any]
	now int64 // server time, ms
}

// corruption is one foreign value at one key pattern: plant writes it (the
// key is returned), then every op must fail with keys.ErrCorrupt naming
// that key.
type corruption struct {
	name  string
	plant func(t *testing.T, w *world) string
	ops   []func(ctx context.Context, w *world) error
}

func set(t *testing.T, w *world, k, v string, ttl time.Duration) string {
	t.Helper()
	require.NoError(t, w.e.Client.Set(context.Background(), k, v, ttl).Err())
	return k
}

func hash(t *testing.T, w *world, k string) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, w.e.Client.HSet(ctx, k, "f", "v").Err())
	require.NoError(t, w.e.Client.Expire(ctx, k, time.Minute).Err())
	return k
}

func str(t *testing.T, w *world, k string) string { return set(t, w, k, "x", time.Minute) }

func zadd(t *testing.T, w *world, k string, score float64, member string) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, w.e.Client.ZAdd(ctx, k, redis.Z{Score: score, Member: member}).Err())
	require.NoError(t, w.e.Client.Expire(ctx, k, time.Minute).Err())
	return k
}

// Operations on user "u" (conversation "c", admin "a").
var (
	opConnect = func(ctx context.Context, w *world) error {
		_, err := w.tr.Connect(ctx, "u", presence.Conn{ID: "c1"})
		return err
	}
	opHeartbeat = func(ctx context.Context, w *world) error {
		_, err := w.tr.Heartbeat(ctx, "u", "c1")
		return err
	}
	opDisconnect = func(ctx context.Context, w *world) error {
		_, err := w.tr.Disconnect(ctx, "u", "c1")
		return err
	}
	opSetStatus = func(ctx context.Context, w *world) error {
		_, err := w.tr.SetStatus(ctx, "u", presence.Away)
		return err
	}
	opSetActivity = func(ctx context.Context, w *world) error { return w.tr.SetActivity(ctx, "u", "idle") }
	opGet         = func(ctx context.Context, w *world) error {
		_, err := w.tr.Get(ctx, "u")
		return err
	}
	opGetMany = func(ctx context.Context, w *world) error {
		_, err := w.tr.GetMany(ctx, []string{"x", "u"})
		return err
	}
	opOnline = func(ctx context.Context, w *world) error {
		_, err := w.tr.Online(ctx, []string{"u"})
		return err
	}
	opConnections = func(ctx context.Context, w *world) error {
		_, err := w.tr.Connections(ctx, "u")
		return err
	}
	opOnlineNow = func(ctx context.Context, w *world) error {
		_, err := w.tr.OnlineNow(ctx)
		return err
	}
	opSweep = func(ctx context.Context, w *world) error {
		_, err := w.tr.Sweep(ctx, keys.Slot(keyOf(w, "presence:{user_id}", "u")), 1)
		return err
	}
	opStart = func(ctx context.Context, w *world) error {
		_, err := w.ty.Start(ctx, "c", "u", "ann")
		return err
	}
	opStop = func(ctx context.Context, w *world) error {
		_, err := w.ty.Stop(ctx, "c", "u")
		return err
	}
	opStartOther = func(ctx context.Context, w *world) error {
		_, err := w.tyo.Start(ctx, "c", "u", "ann")
		return err
	}
	opStopOther = func(ctx context.Context, w *world) error {
		_, err := w.tyo.Stop(ctx, "c", "u")
		return err
	}
	opTypersOther = func(ctx context.Context, w *world) error {
		_, err := w.tyo.Typers(ctx, "c")
		return err
	}
	opTypers = func(ctx context.Context, w *world) error {
		_, err := w.ty.Typers(ctx, "c")
		return err
	}
	opAvailability = func(ctx context.Context, w *world) error {
		_, err := w.av.Get(ctx, "a")
		return err
	}
	opTaggedAvailability = func(ctx context.Context, w *world) error {
		_, err := w.avt.Get(ctx, "a")
		return err
	}
	userWrites = []func(ctx context.Context, w *world) error{opConnect, opHeartbeat, opDisconnect, opSetStatus, opSetActivity}
)

// schemaOnly is a registry of presence's own patterns.
var schemaOnly, _ = keys.Compose(presence.Schema())

func keyOf(w *world, tmpl string, args ...string) string {
	tm, ok := schemaOnly.Lookup(tmpl)
	if !ok {
		panic(tmpl)
	}
	k, err := tm.Key(w.e.NS, args...)
	if err != nil {
		panic(err)
	}
	return k
}

func ops(fs ...[]func(ctx context.Context, w *world) error) []func(ctx context.Context, w *world) error {
	var out []func(ctx context.Context, w *world) error
	for _, f := range fs {
		out = append(out, f...)
	}
	return out
}

func one(fs ...func(ctx context.Context, w *world) error) []func(ctx context.Context, w *world) error {
	return fs
}

// presenceValue plants a presence JSON for u.
func presenceValue(v string) func(t *testing.T, w *world) string {
	return func(t *testing.T, w *world) string {
		return set(t, w, keyOf(w, "presence:{user_id}", "u"), strings.ReplaceAll(v, "NOW", fmt.Sprint(w.now)), time.Minute)
	}
}

// connValue plants connection c1 of an online u with value v (NOW is
// replaced by the server time).
func connValue(v string) func(t *testing.T, w *world) string {
	return func(t *testing.T, w *world) string {
		return w.l.plantConn(t, w.e, "u", "c1", strings.ReplaceAll(v, "NOW", fmt.Sprint(w.now)))
	}
}

func corruptions(w *world) []corruption {
	presenceAll := ops(userWrites, one(opGet, opGetMany, opOnline))
	if w.l.single() {
		presenceAll = append(presenceAll, opConnections)
	}
	connOps := ops(userWrites, one(opConnections))
	future := w.now + (2 * time.Hour).Milliseconds()
	cs := []corruption{
		// presence:{user_id}
		{"presence: wrong type", func(t *testing.T, w *world) string { return hash(t, w, keyOf(w, "presence:{user_id}", "u")) }, presenceAll},
		{"presence: garbage", presenceValue(`not json`), presenceAll},
		{"presence: array", presenceValue(`[1]`), presenceAll},
		{"presence: unknown status", presenceValue(`{"status":"dancing","lastSeen":NOW}`), presenceAll},
		{"presence: no lastSeen", presenceValue(`{"status":"online"}`), presenceAll},
		{"presence: negative lastSeen", presenceValue(`{"status":"online","lastSeen":-5,"activeConnections":1}`), presenceAll},
		{"presence: fractional lastSeen", presenceValue(`{"status":"online","lastSeen":1.5}`), presenceAll},
		{"presence: lastSeen as a string", presenceValue(`{"status":"online","lastSeen":"1698000000000"}`), presenceAll},
		{"presence: lastSeen 2h ahead", presenceValue(fmt.Sprintf(`{"status":"online","lastSeen":%d}`, future)), presenceAll},
		{"presence: lastSeen huge", presenceValue(`{"status":"online","lastSeen":1e400}`), presenceAll},
		{"presence: negative activeConnections", presenceValue(`{"status":"online","lastSeen":NOW,"activeConnections":-1}`), one(opGet, opGetMany, opOnline)},
		// connections:{user_id} (or the single-key layout's member)
		{"connection: garbage", connValue(`garbage`), connOps},
		{"connection: no lastSeen", connValue(`{"connectedAt":NOW,"metadata":{}}`), connOps},
		{"connection: negative lastSeen", connValue(`{"connectedAt":NOW,"lastSeen":-1,"metadata":{}}`), connOps},
		{"connection: lastSeen 2h ahead", connValue(fmt.Sprintf(`{"connectedAt":NOW,"lastSeen":%d,"metadata":{}}`, future)), connOps},
		{"connection: fractional lastSeen", connValue(`{"connectedAt":NOW,"lastSeen":NOW.5,"metadata":{}}`), connOps},
		{"connection: negative connectedAt", connValue(`{"connectedAt":-1,"lastSeen":NOW,"metadata":{}}`), one(opConnections)},
		// presence:requests:{user_id} (a memo entry without its reply: resend_test.go)
		{"request memo: wrong type", func(t *testing.T, w *world) string { return hash(t, w, keyOf(w, "presence:requests:{user_id}", "u")) }, ops(one(opConnect, opDisconnect, opSetStatus, opSetActivity))},
		{"request memo: a string", func(t *testing.T, w *world) string { return str(t, w, keyOf(w, "presence:requests:{user_id}", "u")) }, ops(one(opConnect, opDisconnect, opSetStatus, opSetActivity))},
		// typing:{conversation_id}:{user_id}
		{"typing: wrong type", func(t *testing.T, w *world) string {
			return hash(t, w, keyOf(w, "typing:{conversation_id}:{user_id}", "c", "u"))
		}, one(opStart, opStop)},
		// typers:{conversation_id}
		{"typers: wrong type", func(t *testing.T, w *world) string { return str(t, w, keyOf(w, "typers:{conversation_id}", "c")) }, one(opTypers, opStart)},
		{"typers: garbage member", func(t *testing.T, w *world) string {
			return zadd(t, w, keyOf(w, "typers:{conversation_id}", "c"), float64(w.now+500), "garbage")
		}, one(opTypers)},
		{"typers: negative timestamp", func(t *testing.T, w *world) string {
			return zadd(t, w, keyOf(w, "typers:{conversation_id}", "c"), float64(w.now+500), `{"userId":"u","username":"n","timestamp":-1}`)
		}, one(opTypers)},
		{"typers: expiry 2h ahead", func(t *testing.T, w *world) string {
			return zadd(t, w, keyOf(w, "typers:{conversation_id}", "c"), float64(future), `{"userId":"u","username":"n","timestamp":1}`)
		}, one(opTypers)},
		// typing:throttle:{conversation_id}:{user_id}
		{"throttle: wrong type", func(t *testing.T, w *world) string {
			return hash(t, w, keyOf(w, "typing:throttle:{conversation_id}:{user_id}", "c", "u"))
		}, one(opStart)},
		{"throttle: no TTL", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "typing:throttle:{conversation_id}:{user_id}", "c", "u"), "1", 0)
		}, one(opStart)},
		{"throttle: TTL beyond the throttle", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "typing:throttle:{conversation_id}:{user_id}", "c", "u"), "1", time.Hour)
		}, one(opStart)},
		// typing:requests:{conversation_id}:{user_id}
		{"typing request memo: wrong type", func(t *testing.T, w *world) string {
			return hash(t, w, keyOf(w, "typing:requests:{conversation_id}:{user_id}", "c", "u"))
		}, one(opStop)},
		{"typing request memo: a string", func(t *testing.T, w *world) string {
			return str(t, w, keyOf(w, "typing:requests:{conversation_id}:{user_id}", "c", "u"))
		}, one(opStop)},
		// typers:throttle:{conversation_id}:{user_id} (WithOtherWriters)
		{"other writers' throttle: no TTL", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "typers:throttle:{conversation_id}:{user_id}", "c", "u"), "1", 0)
		}, one(opStartOther)},
		// typers:requests:{conversation_id}:{user_id} (WithOtherWriters)
		{"other writers' request memo: a string", func(t *testing.T, w *world) string {
			return str(t, w, keyOf(w, "typers:requests:{conversation_id}:{user_id}", "c", "u"))
		}, one(opStopOther)},
		// typing:{conversation_id}:{user_id} read by Typers (WithOtherWriters)
		{"typing value read by other writers' Typers: garbage", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "typing:{conversation_id}:{user_id}", "c", "u"), "garbage", time.Minute)
		}, one(opTypersOther)},
		{"typing value read by other writers' Typers: no userId", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "typing:{conversation_id}:{user_id}", "c", "u"), `{"username":"n","timestamp":1}`, time.Minute)
		}, one(opTypersOther)},
		// admin:{admin_id}:presence and its tagged twin
		{"availability: wrong type", func(t *testing.T, w *world) string { return hash(t, w, keyOf(w, "admin:{admin_id}:presence", "a")) }, one(opAvailability)},
		{"availability: garbage", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "admin:{admin_id}:presence", "a"), "napping", time.Minute)
		}, one(opAvailability)},
		{"availability: no TTL", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "admin:{admin_id}:presence", "a"), "online", 0)
		}, one(opAvailability)},
		{"availability: TTL beyond 30m", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "admin:{admin_id}:presence", "a"), "online", time.Hour)
		}, one(opAvailability)},
		{"tagged availability: garbage", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "admin:{tag}:{admin_id}:presence", "support", "a"), "napping", time.Minute)
		}, one(opTaggedAvailability)},
		{"tagged availability: no TTL", func(t *testing.T, w *world) string {
			return set(t, w, keyOf(w, "admin:{tag}:{admin_id}:presence", "support", "a"), "busy", 0)
		}, one(opTaggedAvailability)},
	}
	if !w.l.single() {
		cs = append(cs, corruption{"connections: wrong type", func(t *testing.T, w *world) string {
			return str(t, w, keyOf(w, "connections:{user_id}", "u"))
		}, connOps})
	}
	// presence:online:{slot}: the shard of "u"
	shard := func(w *world) string {
		return keyOf(w, "presence:online:{slot}", keys.SlotTag(keys.Slot(keyOf(w, "presence:{user_id}", "u"))))
	}
	sweepRec := func(w *world) string {
		return keyOf(w, "presence:sweeps:{slot}", keys.SlotTag(keys.Slot(keyOf(w, "presence:{user_id}", "u"))))
	}
	cs = append(cs,
		corruption{"index: wrong type", func(t *testing.T, w *world) string { return str(t, w, shard(w)) }, one(opConnect, opGet, opOnlineNow, opSweep)},
		corruption{"index: score 2h ahead", func(t *testing.T, w *world) string { return zadd(t, w, shard(w), float64(future), "u") }, one(opGet, opOnlineNow)},
		corruption{"index: score 2h behind zero", func(t *testing.T, w *world) string { return zadd(t, w, shard(w), -float64(future), "u") }, one(opGet, opOnlineNow)},
		corruption{"index: member not a user ID", func(t *testing.T, w *world) string {
			return zadd(t, w, shard(w), float64(w.now+30_000), "\xff")
		}, one(opOnlineNow)},
		corruption{"sweep memo: wrong type", func(t *testing.T, w *world) string { return hash(t, w, sweepRec(w)) }, one(opSweep)},
		corruption{"sweep memo: a string", func(t *testing.T, w *world) string { return str(t, w, sweepRec(w)) }, one(opSweep)},
	)
	return append(cs, channelCorruptions()...)
}

// Channel operations on channel "r", user "u", device "c1".
var (
	opJoin = func(ctx context.Context, w *world) error {
		_, err := w.ch.Join(ctx, "r", "u", "c1", map[string]any{"n": 1})
		return err
	}
	opLeave = func(ctx context.Context, w *world) error {
		_, err := w.ch.Leave(ctx, "r", "u", "c1")
		return err
	}
	opUpdate = func(ctx context.Context, w *world) error {
		_, err := w.ch.Update(ctx, "r", "u", map[string]any{"n": 2})
		return err
	}
	opMembers = func(ctx context.Context, w *world) error {
		_, err := w.ch.Members(ctx, "r")
		return err
	}
	opCount = func(ctx context.Context, w *world) error {
		_, err := w.ch.Count(ctx, "r")
		return err
	}
	opChanSweep = func(ctx context.Context, w *world) error {
		_, err := w.ch.Sweep(ctx, w.ch.Shard("r"), 1)
		return err
	}
	chanWrites = one(opJoin, opLeave, opUpdate)
)

// channelCorruptions are the cases of the channel patterns. A device
// member or an occupancy record that does not parse is repaired (dropped,
// or taken as no record), not refused.
func channelCorruptions() []corruption {
	members := func(w *world) string { return keyOf(w, "presence:channel:{channel}", "r") }
	devs := func(w *world) string { return keyOf(w, "presence:channel:devices:{channel}", "r") }
	occ := func(w *world) string { return keyOf(w, "presence:channel:occupancy:{channel}", "r") }
	due := func(w *world) string {
		return keyOf(w, "presence:channel:due:{slot}", keys.SlotTag(w.ch.Shard("r")))
	}
	rec := func(w *world) string { return keyOf(w, "presence:channel:requests:{channel}:{user_id}", "r", "u") }
	memberValue := func(v string) func(t *testing.T, w *world) string {
		return func(t *testing.T, w *world) string {
			ctx := context.Background()
			require.NoError(t, w.e.Client.HSet(ctx, members(w), "u", v).Err())
			require.NoError(t, w.e.Client.ZAdd(ctx, devs(w), redis.Z{Score: float64(w.now + 60_000), Member: "1:uc1"}).Err())
			return members(w)
		}
	}
	return []corruption{
		{"channel members: wrong type", func(t *testing.T, w *world) string { return str(t, w, members(w)) }, ops(chanWrites, one(opMembers, opCount))},
		{"channel member: no device count", memberValue(`{"n":1}`), ops(chanWrites, one(opMembers))},
		{"channel member: zero devices", memberValue(`0:{}`), ops(chanWrites, one(opMembers))},
		{"channel member: data not JSON", memberValue(`1:{`), one(opMembers)},
		{"channel devices: wrong type", func(t *testing.T, w *world) string { return str(t, w, devs(w)) }, chanWrites},
		{"channel occupancy: wrong type", func(t *testing.T, w *world) string { return hash(t, w, occ(w)) }, chanWrites},
		{"channel due shard: wrong type", func(t *testing.T, w *world) string { return str(t, w, due(w)) }, ops(chanWrites, one(opChanSweep))},
		{"channel request memo: wrong type", func(t *testing.T, w *world) string { return hash(t, w, rec(w)) }, chanWrites},
		{"channel request memo: a string", func(t *testing.T, w *world) string { return str(t, w, rec(w)) }, chanWrites},
	}
}

// TestCorruptionTable puts a wrong type, garbage and out-of-range values
// at each key pattern of the package: every operation that reads the key
// fails with keys.ErrCorrupt naming exactly that key, never a panic, a
// sentinel or a wrong answer.
func TestCorruptionTable(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		w := &world{e: e, l: l}
		mk := func(opts ...presence.Option) []presence.Option {
			return append([]presence.Option{presence.WithNamespace(e.NS), l.opt()}, opts...)
		}
		var err error
		w.tr, err = presence.New(e.Client, mk()...)
		require.NoError(t, err)
		w.ty, err = typingOf(presence.New(e.Client, mk()...))
		require.NoError(t, err)
		w.tyo, err = typingOf(presence.New(e.Client, mk(presence.WithOtherWriters())...))
		require.NoError(t, err)
		w.av, err = availabilityOf(presence.New(e.Client, mk()...))
		require.NoError(t, err)
		w.avt, err = availabilityOf(presence.New(e.Client, mk(presence.WithAvailabilityTag("support"))...))
		require.NoError(t, err)
		w.ch, err = presence.NewChannels[map[string]any](e.Client, mk()...)
		require.NoError(t, err)
		ctx := e.Ctx()
		w.now = e.Now().UnixMilli()
		checked := map[string]bool{}
		for _, c := range corruptions(w) {
			t.Run(c.name, func(t *testing.T) {
				for i, op := range c.ops {
					t.Cleanup(func() {
						for _, k := range e.Keys() {
							_ = e.Client.Del(context.Background(), k).Err()
						}
					})
					w.now = e.Now().UnixMilli()
					k := c.plant(t, w)
					err := op(ctx, w)
					require.Error(t, err, "op %d", i)
					assert.ErrorIs(t, err, keys.ErrCorrupt, "op %d: %v", i, err)
					assert.Contains(t, err.Error(), fmt.Sprintf("%q", k), "op %d names the key", i)
					for _, s := range []error{presence.ErrInvalid, presence.ErrOffline, presence.ErrUnknownConnection, presence.ErrTooManyConnections} {
						assert.NotErrorIs(t, err, s, "op %d", i)
					}
					if tm, _, ok := harness.Registry(t, presence.Schema()).Match(e.NS, k); ok {
						checked[tm.String()] = true
					}
					for _, k := range e.Keys() {
						require.NoError(t, e.Client.Del(ctx, k).Err())
					}
				}
			})
		}
		// every key pattern of the package has a case
		for _, tm := range harness.Registry(t, presence.Schema()).Owned("presence") {
			if !tm.IsChannel() && (tm.String() != "connections:{user_id}" || !l.single()) {
				assert.True(t, checked[tm.String()], "no corruption case for %s", tm)
			}
		}
	})
}

// Foreign values that this package repairs instead of refusing, as
// documented: a typing value is replaced by Start and deleted by Stop; an
// availability is replaced by Set; index members whose score no script
// writes are dropped by Sweep.
func TestCorruptionSelfRepair(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	w := &world{e: e}
	tr := newTracker(t, e)
	ty := newTyping(t, e)
	av, err := availabilityOf(presence.New(e.Client, presence.WithNamespace(e.NS)))
	require.NoError(t, err)

	tk := set(t, w, keyOf(w, "typing:{conversation_id}:{user_id}", "c", "u"), "garbage", 0)
	ok, err := ty.Start(ctx, "c", "u", "ann")
	require.NoError(t, err)
	assert.True(t, ok)
	v := e.Client.Get(ctx, tk).Val()
	assert.Contains(t, v, `"userId":"u"`)
	assert.Positive(t, e.Client.PTTL(ctx, tk).Val())
	set(t, w, tk, "garbage", 0)
	ok, err = ty.Stop(ctx, "c", "u")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, e.Client.Exists(ctx, tk).Val())

	ak := hash(t, w, keyOf(w, "admin:{admin_id}:presence", "a"))
	require.NoError(t, av.Set(ctx, "a", presence.Away))
	s, err := av.Get(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, presence.Away, s)
	assert.Equal(t, "away", e.Client.Get(ctx, ak).Val())

	now := e.Now().UnixMilli()
	slot := keys.Slot(keyOf(w, "presence:{user_id}", "u"))
	shard := keyOf(w, "presence:online:{slot}", keys.SlotTag(slot))
	zadd(t, w, shard, float64(now+(2*time.Hour).Milliseconds()), "ghost")
	_, err = tr.OnlineNow(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	_, err = tr.Sweep(ctx, slot, 1)
	require.NoError(t, err)
	on, err := tr.OnlineNow(ctx)
	require.NoError(t, err, "the sweep dropped the foreign member")
	assert.Empty(t, on)
	// and so does a write that recomputes the shard's TTL
	zadd(t, w, shard, float64(now+(2*time.Hour).Milliseconds()), "ghost")
	_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a"})
	require.NoError(t, err)
	_, err = tr.Disconnect(ctx, "u", "a")
	require.NoError(t, err)
	_, err = tr.OnlineNow(ctx)
	require.NoError(t, err)
	assert.Equal(t, redis.Nil, e.Client.ZScore(ctx, shard, "ghost").Err(), "dropped")
}

// A presence with a negative lastSeen used to read as offline while a
// connection was live; now every path names the key.
func TestNegativeLastSeenIsCorrupt(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		pk := key(t, e, "presence:{user_id}", "u")
		raw := e.Client.Get(ctx, pk).Val()
		bad := msRe.ReplaceAllStringFunc(raw, func(string) string { return "-1" })
		require.NoError(t, e.Client.Set(ctx, pk, bad, time.Minute).Err())
		_, err = tr.Get(ctx, "u")
		require.ErrorIs(t, err, keys.ErrCorrupt)
		assert.Contains(t, err.Error(), pk)
		_, err = tr.Heartbeat(ctx, "u", "a")
		require.ErrorIs(t, err, keys.ErrCorrupt)
		assert.Contains(t, err.Error(), pk)
	})
}
