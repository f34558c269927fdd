package presence

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Issue 33: the request memos of this package kept the first outcomes of
// the last 8 requests of their entity (a user; a user in a channel; a
// user in a conversation; an online-index shard's sweeps), so a request
// that go-redis resent after more than 8 other requests hit the entity
// ran again. In each test below a client reaches Redis through a proxy
// that loses a request's reply after the server ran it, and go-redis's
// resend is held (harness.ResendGate) until other writers have made more
// than 8 requests on the same entity and another instance has undone
// what the request did; then it is released. The resend must report the
// first run's outcome and change nothing.

// resent runs call (a request whose reply the proxy will lose) in a
// goroutine and, once its first run is done and its resend held, runs
// between; it then releases the resend and returns call's result.
func resent[T any](t *testing.T, gate *harness.ResendGate, call func() (T, error), between func()) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	go func() {
		v, err := call()
		res <- result{v, err}
	}()
	gate.Between(t, between)
	r := <-res
	return r.v, r.err
}

// loadAll loads ops' scripts on every master, so that their calls go out
// as EVALSHA and the proxy can match the SHA of the one whose reply it
// loses.
func loadAll(t *testing.T, e *harness.Env, ops ...*call.Op) {
	t.Helper()
	for _, op := range ops {
		require.NoError(t, op.Load(e.Ctx(), e.Client))
	}
}

// eventsUntil returns the events of s as "user:previous->status", up to
// and including the first one last accepts.
func eventsUntil(t *testing.T, s *Subscription, last func(Event) bool) []string {
	t.Helper()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ev, err := s.Next(ctx)
		cancel()
		require.NoError(t, err, "after %v", out)
		out = append(out, fmt.Sprintf("%s:%s->%s", ev.UserID, ev.Previous, ev.Status))
		if last(ev) {
			return out
		}
	}
}

// A user's Disconnect, SetStatus and Connect resent after 24 other
// requests on the user (three more devices connecting and disconnecting)
// and a change by another instance that undoes it (the device reconnects,
// the user sets their status back, the new device disconnects) report
// their first outcome and change nothing: the user keeps exactly the
// connections and the status the others left, and each status change is
// published once. Before the fix the resends ran again, on every backend:
// a live device was disconnected, a status was set a second time (and
// announced twice), a closed connection was registered again.
func TestResendRecognisedUnderConcurrentWriters(t *testing.T) {
	eachLayoutInternal(t, func(t *testing.T, layout Layout) {
		const pairs = 12 // connect + disconnect of the others before each resend: 24 requests
		e := harness.New(t)
		ctx := e.Ctx()
		pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
		gate := harness.HoldResends(t, pc, p)
		opts := []Option{WithNamespace(e.NS), WithLayout(layout)}
		mine, err := New(pc, opts...)
		require.NoError(t, err)
		obs, err := New(e.Client, opts...)
		require.NoError(t, err)
		sub, err := obs.Subscribe(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Close() })
		loadAll(t, e, connectOp, disconnectOp, setStatusOp)
		for _, id := range []string{"base", "m"} {
			_, err := obs.Connect(ctx, "u", Conn{ID: id})
			require.NoError(t, err)
		}

		tr := harness.NewTraffic(t)
		for w := 1; w <= 3; w++ {
			dev := fmt.Sprintf("w%d", w)
			tr.Writer(func(int) error {
				if _, err := obs.Connect(ctx, "u", Conn{ID: dev}); err != nil {
					return err
				}
				_, err := obs.Disconnect(ctx, "u", dev)
				return err
			})
		}

		rounds := []struct {
			name  string
			op    *call.Op
			run   func() (Result, error)
			first Result       // what the first run does, with "base" and "m" connected
			undo  func() error // by another instance, after the others, before the resend
		}{
			{"disconnect", disconnectOp,
				func() (Result, error) { return mine.Disconnect(ctx, "u", "m") },
				Result{Connections: 1, Status: Online},
				func() error { _, err := obs.Connect(ctx, "u", Conn{ID: "m"}); return err }},
			{"set status", setStatusOp,
				func() (Result, error) { return mine.SetStatus(ctx, "u", Away) },
				Result{Connections: 2, Changed: true, Status: Away},
				func() error { _, err := obs.SetStatus(ctx, "u", Online); return err }},
			{"connect", connectOp,
				func() (Result, error) { return mine.Connect(ctx, "u", Conn{ID: "m2"}) },
				Result{Connections: 3, Status: Online},
				func() error { _, err := obs.Disconnect(ctx, "u", "m2"); return err }},
		}
		want := []string{"u:offline->online"}
		for i := range 2 {
			for _, r := range rounds {
				p.LoseReply(r.op.Script().Hash())
				got, err := resent(t, gate, r.run, func() {
					tr.Run(pairs)
					require.NoError(t, r.undo())
				})
				require.NoError(t, err, "%s %d", r.name, i)
				assert.Equal(t, r.first, got, "%s %d: the first run's outcome", r.name, i)
				if r.op == setStatusOp {
					want = append(want, "u:online->away", "u:away->online")
				}
			}
		}
		tr.Drain()
		require.EqualValues(t, 2*len(rounds), p.Lost(), "every reply lost once, and each resend answered")

		cs, err := obs.Connections(ctx, "u")
		require.NoError(t, err)
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		sort.Strings(ids)
		assert.Equal(t, []string{"base", "m"}, ids, "the connections the others left, no more, no fewer")
		pr, err := obs.Get(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, Online, pr.Status, "the status the others left")
		assert.Equal(t, 2, pr.Connections)
		// The last event, published from the user's slot as every earlier
		// one: they all came before it.
		_, err = obs.SetStatus(ctx, "u", Busy)
		require.NoError(t, err)
		want = append(want, "u:online->busy")
		assert.Equal(t, want, eventsUntil(t, sub, func(ev Event) bool { return ev.Status == Busy }), "each change published once")
	})
}

// A channel's Leave and Join resent after 24 other requests of the user
// in the channel (three more devices joining and leaving) and a change by
// another instance that undoes them (the device joins again, leaves
// again) report their first outcome and change nothing: the members are
// those the others left, and there are exactly as many join and leave
// events as Join and Leave calls that reported a change. Before the fix
// the resends ran again, on every backend: a member who had come back was
// made to leave, with a second leave event, and one who had gone was made
// to join, with a second join event.
func TestChannelResendRecognisedUnderConcurrentWriters(t *testing.T) {
	const pairs = 12 // join + leave of the others before each resend: 24 requests
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
	gate := harness.HoldResends(t, pc, p)
	opts := []Option{WithNamespace(e.NS), WithOccupancyInterval(0)}
	mine, err := NewChannels[string](pc, opts...)
	require.NoError(t, err)
	obs, err := NewChannels[string](e.Client, opts...)
	require.NoError(t, err)
	sub, err := obs.Subscribe(ctx, "room")
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	loadAll(t, e, chanJoinOp, chanLeaveOp)

	// Calls that reported a join or a leave, each counted once.
	var joins, leaves atomic.Int64
	join := func(c *Channels[string], user, dev string) (JoinResult, error) {
		r, err := c.Join(ctx, "room", user, dev, "same data")
		if err == nil && r.Changed {
			joins.Add(1)
		}
		return r, err
	}
	leave := func(c *Channels[string], user, dev string) (JoinResult, error) {
		r, err := c.Leave(ctx, "room", user, dev)
		if err == nil && r.Changed {
			leaves.Add(1)
		}
		return r, err
	}
	_, err = join(obs, "v", "v1") // another member, always there
	require.NoError(t, err)

	tr := harness.NewTraffic(t)
	for w := 1; w <= 3; w++ {
		dev := fmt.Sprintf("d%d", w)
		tr.Writer(func(int) error {
			if _, err := join(obs, "u", dev); err != nil {
				return err
			}
			_, err := leave(obs, "u", dev)
			return err
		})
	}

	rounds := []struct {
		name   string
		op     *call.Op
		before func() error // the state the request finds
		run    func() (JoinResult, error)
		first  JoinResult
		undo   func() error // by another instance, after the others, before the resend
	}{
		{"leave", chanLeaveOp,
			func() error { _, err := join(obs, "u", "m"); return err },
			func() (JoinResult, error) { return leave(mine, "u", "m") },
			JoinResult{Changed: true, Devices: 0, Members: 1},
			func() error { _, err := join(obs, "u", "m"); return err }},
		{"join", chanJoinOp,
			func() error { _, err := leave(obs, "u", "m"); return err },
			func() (JoinResult, error) { return join(mine, "u", "m") },
			JoinResult{Changed: true, Devices: 1, Members: 2},
			func() error { _, err := leave(obs, "u", "m"); return err }},
	}
	for i := range 2 {
		for _, r := range rounds {
			require.NoError(t, r.before())
			p.LoseReply(r.op.Script().Hash())
			got, err := resent(t, gate, r.run, func() {
				tr.Run(pairs)
				require.NoError(t, r.undo())
			})
			require.NoError(t, err, "%s %d", r.name, i)
			assert.Equal(t, r.first, got, "%s %d: the first run's outcome", r.name, i)
		}
	}
	tr.Drain()
	require.EqualValues(t, 2*len(rounds), p.Lost(), "every reply lost once, and each resend answered")

	ms, err := obs.Members(ctx, "room")
	require.NoError(t, err)
	assert.Equal(t, []Member[string]{{UserID: "v", Devices: 1, Data: "same data"}}, ms, "the members the others left")
	// The last event, published from the channel's slot as every earlier
	// one: they all came before it.
	_, err = obs.Join(ctx, "room", "zz", "z1", "same data")
	require.NoError(t, err)
	var gotJoins, gotLeaves int64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ev, err := sub.Next(ctx)
		cancel()
		require.NoError(t, err)
		if ev.UserID == "zz" {
			break
		}
		switch ev.Type {
		case Joined:
			gotJoins++
		case Left:
			gotLeaves++
		default:
			t.Errorf("unexpected %s event for %s", ev.Type, ev.UserID)
		}
	}
	assert.Equal(t, joins.Load(), gotJoins, "one join event per Join that joined")
	assert.Equal(t, leaves.Load(), gotLeaves, "one leave event per Leave that left")
}

// A Typing.Stop resent after 24 other Stops of the user in the
// conversation (from their other devices) and a Start by another
// instance reports that it cleared the indicator and leaves the later
// Start's indicator in place. Before the fix the resend cleared it, on
// every backend.
func TestTypingResendRecognisedUnderConcurrentWriters(t *testing.T) {
	const interleaved = 24
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
	gate := harness.HoldResends(t, pc, p)
	prof := DetailedProfile()
	prof.TypingTTL, prof.TypingThrottle = time.Minute, 0 // every Start writes, and lasts the test
	opts := []Option{WithNamespace(e.NS), WithProfile(prof)}
	mine, err := typingOf(New(pc, opts...))
	require.NoError(t, err)
	obs, err := typingOf(New(e.Client, opts...))
	require.NoError(t, err)
	loadAll(t, e, typingStopOp)

	tr := harness.NewTraffic(t)
	for range 3 {
		tr.Writer(func(int) error {
			_, err := obs.Stop(ctx, "c", "u")
			return err
		})
	}
	start := func() {
		ok, err := obs.Start(ctx, "c", "u", "ann")
		require.NoError(t, err)
		require.True(t, ok)
	}
	for i := range 3 {
		start()
		p.LoseReply(typingStopOp.Script().Hash())
		stopped, err := resent(t, gate, func() (bool, error) { return mine.Stop(ctx, "c", "u") }, func() {
			tr.Run(interleaved)
			start() // the user types again, seen by another instance
		})
		require.NoError(t, err)
		assert.True(t, stopped, "%d: the first run cleared the indicator", i)
		ty, err := obs.Typers(ctx, "c")
		require.NoError(t, err)
		assert.Len(t, ty, 1, "%d: the later Start's indicator stays", i)
	}
	tr.Drain()
	require.EqualValues(t, 3, p.Lost())
}

// sameSlot returns n user IDs whose presence keys hash to one cluster
// slot (one online-index shard), and that slot.
func sameSlot(t *testing.T, ns keys.Namespace, n int) ([]string, int) {
	t.Helper()
	var out []string
	slot := -1
	for i := 0; len(out) < n; i++ {
		u := fmt.Sprintf("s%d", i)
		k, err := presenceKey.Key(ns, u)
		require.NoError(t, err)
		if s := keys.Slot(k); slot < 0 || s == slot {
			slot = s
			out = append(out, u)
		}
	}
	return out, slot
}

// A Sweep resent after 12 sweeps of the same shard by other instances,
// each announcing a silent offline, reports the count of its first run
// and announces nobody twice. Before the fix the resend ran again and
// reported 0 (the users it had announced were marked announced), on every
// backend.
func TestSweepResendRecognisedUnderConcurrentSweeps(t *testing.T) {
	const others = 12
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
	gate := harness.HoldResends(t, pc, p)
	mine, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	obs, err := New(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	sub, err := obs.Subscribe(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	loadAll(t, e, sweepOp)
	users, slot := sameSlot(t, e.NS, others+2)
	shard, err := onlineKey.Key(e.NS, keys.SlotTag(slot))
	require.NoError(t, err)
	// expire leaves user in the shard as a presence that expired a second
	// ago and that nobody announced yet.
	expire := func(user string) {
		at := e.Now().Add(-time.Second).UnixMilli()
		require.NoError(t, e.Client.ZAdd(ctx, shard, redis.Z{Score: float64(at), Member: user}).Err())
		require.NoError(t, e.Client.PExpire(ctx, shard, time.Minute).Err())
	}

	expire(users[0])
	p.LoseReply(sweepOp.Script().Hash())
	n, err := resent(t, gate, func() (int, error) { return mine.Sweep(ctx, slot, 1) }, func() {
		for _, u := range users[1 : others+1] {
			expire(u)
			n, err := obs.Sweep(ctx, slot, 1) // another instance's sweeper
			require.NoError(t, err)
			require.Equal(t, 1, n, "%s announced", u)
		}
	})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the first run's count")
	assert.EqualValues(t, 1, p.Lost())

	// The last event, published from the shard's slot as every earlier
	// one: they all came before it.
	last := users[others+1]
	_, err = obs.Connect(ctx, last, Conn{ID: "c"})
	require.NoError(t, err)
	var want []string
	for _, u := range users[:others+1] {
		want = append(want, u+":online->offline")
	}
	want = append(want, last+":offline->online")
	assert.Equal(t, want, eventsUntil(t, sub, func(ev Event) bool { return ev.UserID == last }), "each silent offline announced once")
}

// A user's request memo keeps every request of the last replayWindow,
// however many, and only those: a resend whose ID is 2,000 requests deep
// is answered with its recorded reply and registers nothing, and the next
// write drops the requests older than the window (and keeps the memo for
// the window).
func TestRequestMemoKeepsTheWindow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	tr, err := New(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	k, err := tr.userKeys("test", "u")
	require.NoError(t, err)
	rk := k[3]
	now := e.Now().UnixMilli()
	window := replayWindow.Milliseconds()
	record := func(req string, at int64, reply string) []redis.Z {
		return []redis.Z{{Score: float64(at), Member: req}, {Score: float64(at), Member: req + "=" + reply}}
	}
	old := "ffffffffffffffff"
	zs := record(old, now-window-1000, "ok,1,1,online") // older than the window
	first := "0000000000000000"
	zs = append(zs, record(first, now-window+20_000, "ok,7,1,away")...) // 20 s inside it
	for i := 1; i < 2000; i++ {
		zs = append(zs, record(fmt.Sprintf("%016x", i), now-window+20_000+int64(i), "ok,1,0,online")...)
	}
	require.NoError(t, e.Client.ZAdd(ctx, rk, zs...).Err())

	connect := func(req string) (Result, error) {
		return result(tr.run.Run(ctx, connectOp, k[:], tr.args("u", "c", req, "{}", "online", "", 32)...))
	}
	r, err := connect(first)
	require.NoError(t, err)
	assert.Equal(t, Result{Connections: 7, Changed: true, Status: Away}, r, "the recorded reply")
	cs, err := tr.Connections(ctx, "u")
	require.NoError(t, err)
	assert.Empty(t, cs, "a resend registers nothing")

	r, err = connect(newRequestID())
	require.NoError(t, err)
	assert.Equal(t, Result{Connections: 1, Changed: true, Status: Online}, r)
	card, err := e.Client.ZCard(ctx, rk).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2*2000+2, card, "the 2,000 requests of the window and the new one")
	_, err = e.Client.ZScore(ctx, rk, old).Result()
	assert.ErrorIs(t, err, redis.Nil, "older than the window: dropped")
	ttl, err := e.Client.PTTL(ctx, rk).Result()
	require.NoError(t, err)
	assert.True(t, ttl > replayWindow-10*time.Second && ttl <= replayWindow, "TTL %v", ttl)
}

// A memo entry this package did not write (a request ID without its
// reply, or with a reply that does not parse) is corrupt data naming the
// memo, on a resend of that ID, in each of the four memos, and the
// request changes nothing.
func TestRequestMemoWithoutReplyIsCorrupt(t *testing.T) {
	type target struct {
		memo    string
		run     func(req string) error
		changed func() bool
	}
	cases := map[string]func(t *testing.T, e *harness.Env) target{
		"user": func(t *testing.T, e *harness.Env) target {
			tr, err := New(e.Client, WithNamespace(e.NS))
			require.NoError(t, err)
			k, err := tr.userKeys("test", "u")
			require.NoError(t, err)
			return target{k[3],
				func(req string) error {
					_, err := tr.run.Run(e.Ctx(), connectOp, k[:], tr.args("u", "c", req, "{}", "online", "", 32)...)
					return err
				},
				func() bool { return e.Client.Exists(e.Ctx(), k[0]).Val() > 0 }}
		},
		"sweep": func(t *testing.T, e *harness.Env) target {
			tr, err := New(e.Client, WithNamespace(e.NS))
			require.NoError(t, err)
			tag := keys.SlotTag(7)
			shard, err := onlineKey.Key(e.NS, tag)
			require.NoError(t, err)
			memo, err := sweepsKey.Key(e.NS, tag)
			require.NoError(t, err)
			at := float64(e.Now().Add(-time.Second).UnixMilli())
			require.NoError(t, e.Client.ZAdd(e.Ctx(), shard, redis.Z{Score: at, Member: "x"}).Err())
			return target{memo,
				func(req string) error {
					_, err := tr.run.Run(e.Ctx(), sweepOp, []string{shard, memo}, tr.args("", "", req, sweepLimit)...)
					return err
				},
				func() bool { return e.Client.ZScore(e.Ctx(), shard, "x").Val() != at }}
		},
		"typing": func(t *testing.T, e *harness.Env) target {
			ty, err := typingOf(New(e.Client, WithNamespace(e.NS)))
			require.NoError(t, err)
			typing, typers, _, memo, err := ty.keysOf("test", "c", "u")
			require.NoError(t, err)
			require.NoError(t, e.Client.Set(e.Ctx(), typing, "x", time.Minute).Err())
			return target{memo,
				func(req string) error {
					_, err := ty.run.Run(e.Ctx(), typingStopOp, []string{typing, typers, memo}, req, replayMs)
					return err
				},
				func() bool { return e.Client.Exists(e.Ctx(), typing).Val() == 0 }}
		},
		"channel": func(t *testing.T, e *harness.Env) target {
			c, err := NewChannels[string](e.Client, WithNamespace(e.NS))
			require.NoError(t, err)
			k, ev, err := c.keysOf("test", "room", "u")
			require.NoError(t, err)
			return target{k[4],
				func(req string) error {
					_, err := c.run.Run(e.Ctx(), chanJoinOp, k, c.args("room", ev, "u", "d", req, `"x"`, 32)...)
					return err
				},
				func() bool { return e.Client.Exists(e.Ctx(), k[0]).Val() > 0 }}
		},
	}
	for name, mk := range cases {
		for what, members := range map[string][]string{
			"no reply":  {"%s"},
			"bad reply": {"%s", "%s=ok,1 2"},
		} {
			t.Run(name+"/"+what, func(t *testing.T) {
				e := harness.New(t)
				tg := mk(t, e)
				req := newRequestID()
				for _, f := range members {
					m := redis.Z{Score: float64(e.Now().UnixMilli()), Member: fmt.Sprintf(f, req)}
					require.NoError(t, e.Client.ZAdd(e.Ctx(), tg.memo, m).Err())
				}
				err := tg.run(req)
				assert.ErrorIs(t, err, keys.ErrCorrupt)
				assert.ErrorContains(t, err, tg.memo)
				assert.False(t, tg.changed(), "nothing written")
			})
		}
	}
}
