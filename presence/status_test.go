package presence_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	isub "github.com/redschema/redschema/internal/sub"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

func TestStatusesAndEvents(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		sub, err := tr.Subscribe(ctx)
		require.NoError(t, err)
		defer sub.Close()
		next := func() presence.Event {
			t.Helper()
			ev, err := sub.Next(ctx)
			require.NoError(t, err)
			return ev
		}

		_, err = tr.SetStatus(ctx, "u", presence.Away)
		assert.ErrorIs(t, err, presence.ErrOffline)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		ev := next()
		assert.Equal(t, "u", ev.UserID)
		assert.Equal(t, presence.Online, ev.Status)
		assert.Equal(t, presence.Offline, ev.Previous)
		assert.WithinDuration(t, e.Now(), ev.At, 2*time.Second)

		r, err := tr.SetStatus(ctx, "u", presence.Busy)
		require.NoError(t, err)
		assert.Equal(t, presence.Result{Connections: 1, Changed: true, Status: presence.Busy}, r)
		ev = next()
		assert.Equal(t, [2]presence.Status{presence.Online, presence.Busy}, [2]presence.Status{ev.Previous, ev.Status})

		// A second device keeps the chosen status.
		r, err = tr.Connect(ctx, "u", presence.Conn{ID: "b", Status: presence.Away})
		require.NoError(t, err)
		assert.Equal(t, presence.Busy, r.Status)

		_, err = tr.SetStatus(ctx, "u", presence.Invisible)
		require.NoError(t, err)
		ev = next()
		assert.Equal(t, [2]presence.Status{presence.Busy, presence.Offline}, [2]presence.Status{ev.Previous, ev.Status}, "invisible is published as offline")

		p, err := tr.Get(ctx, "u")
		require.NoError(t, err)
		assert.True(t, p.Online(), "invisible is online for the system")
		assert.Equal(t, presence.Invisible, p.Status)
		assert.Equal(t, presence.Offline, p.Public().Status)
		assert.Zero(t, p.Public().Connections)
		assert.False(t, p.LastSeen.IsZero(), "the system sees the last heartbeat")
		assert.Equal(t, presence.Presence{UserID: "u", Status: presence.Offline}, p.Public(), "others see no device, activity or fresh last seen")
		on, err := tr.Online(ctx, []string{"u", "nobody"})
		require.NoError(t, err)
		assert.Equal(t, []string{"u"}, on)
		all, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		assert.Empty(t, all, "invisible users are not listed")

		// Going offline while invisible publishes nothing; the next event is
		// the visible user v.
		_, err = tr.Disconnect(ctx, "u", "a")
		require.NoError(t, err)
		r, err = tr.Disconnect(ctx, "u", "b")
		require.NoError(t, err)
		assert.True(t, r.Changed)
		_, err = tr.Connect(ctx, "v", presence.Conn{ID: "x", Status: presence.Away})
		require.NoError(t, err)
		ev = next()
		assert.Equal(t, "v", ev.UserID)
		assert.Equal(t, presence.Away, ev.Status)

		// Invisible from the first connection: no event, not listed.
		r, err = tr.Connect(ctx, "w", presence.Conn{ID: "x", Status: presence.Invisible})
		require.NoError(t, err)
		assert.Equal(t, presence.Invisible, r.Status)
		_, err = tr.Disconnect(ctx, "v", "x")
		require.NoError(t, err)
		ev = next()
		assert.Equal(t, [3]any{"v", presence.Away, presence.Offline}, [3]any{ev.UserID, ev.Previous, ev.Status})

		_, err = tr.SetStatus(ctx, "w", presence.Offline)
		assert.ErrorIs(t, err, presence.ErrInvalid)
		_, err = tr.SetStatus(ctx, "w", "sleepy")
		assert.ErrorIs(t, err, presence.ErrInvalid)
		_, err = tr.Connect(ctx, "w", presence.Conn{ID: "y", Status: presence.Offline})
		assert.ErrorIs(t, err, presence.ErrInvalid)
	})
}

func TestCorruptEvent(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		sub, err := tr.Subscribe(ctx)
		require.NoError(t, err)
		defer sub.Close()
		require.NoError(t, isub.Publish(ctx, e.Client, tr.Channel(), "{not json").Err())
		_, err = sub.Next(ctx)
		assert.ErrorIs(t, err, keys.ErrCorrupt)
		_, err = tr.Connect(ctx, "u", presence.Conn{ID: "a"})
		require.NoError(t, err)
		ev, err := sub.Next(ctx)
		require.NoError(t, err, "the subscription survives a bad message")
		assert.Equal(t, "u", ev.UserID)

		odd := "we\"ird\\ü\x01:{x}"
		_, err = tr.Connect(ctx, odd, presence.Conn{ID: "a"})
		require.NoError(t, err)
		ev, err = sub.Next(ctx)
		require.NoError(t, err)
		assert.Equal(t, odd, ev.UserID, "user IDs are escaped in the event JSON")
	})
}

// TestNextHonoursContext: Next returns on a cancelled context without a
// deadline (go-redis's ReceiveMessage would not), the subscription stays
// usable, and Close ends a blocked Next.
func TestNextHonoursContext(t *testing.T) {
	e := harness.New(t)
	tr := newTracker(t, e)
	sub, err := tr.Subscribe(e.Ctx())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() { _, err := sub.Next(ctx); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Next ignored the cancellation")
	}

	_, err = tr.Connect(e.Ctx(), "u", presence.Conn{ID: "a"})
	require.NoError(t, err)
	ev, err := sub.Next(e.Ctx())
	require.NoError(t, err, "usable after a cancelled Next")
	assert.Equal(t, "u", ev.UserID)

	go func() { _, err := sub.Next(e.Ctx()); done <- err }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, sub.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, redis.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a blocked Next")
	}
}

func TestGetManyAndOnlineIndex(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt())
		ctx := e.Ctx()
		var users, want []string
		for i := 0; i < 60; i++ {
			u := fmt.Sprintf("user-%d", i)
			users = append(users, u)
			if i%3 == 0 {
				continue
			}
			want = append(want, u)
			_, err := tr.Connect(ctx, u, presence.Conn{ID: "c", Metadata: presence.Metadata{Device: "web"}})
			require.NoError(t, err)
		}
		_, err := tr.Connect(ctx, "ghost", presence.Conn{ID: "c", Status: presence.Invisible})
		require.NoError(t, err)
		ps, err := tr.GetMany(ctx, users)
		require.NoError(t, err)
		require.Len(t, ps, len(users))
		for i, p := range ps {
			assert.Equal(t, users[i], p.UserID)
			assert.Equal(t, i%3 != 0, p.Online(), users[i])
		}
		on, err := tr.Online(ctx, users)
		require.NoError(t, err)
		assert.Equal(t, want, on)

		all, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		sort.Strings(all)
		sorted := append([]string(nil), want...)
		sort.Strings(sorted)
		assert.Equal(t, sorted, all)
		n, err := tr.OnlineCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, len(want), n)

		for _, u := range want[:10] {
			_, err := tr.Disconnect(ctx, u, "c")
			require.NoError(t, err)
		}
		n, err = tr.OnlineCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, len(want)-10, n, "the index is updated by the same script")

		ps, err = tr.GetMany(ctx, nil)
		require.NoError(t, err)
		assert.Empty(t, ps)
		_, err = tr.GetMany(ctx, []string{"a", ""})
		assert.ErrorIs(t, err, keys.ErrInvalid)
		e.RequireTTLs(nil)
	})
}

func TestOnlineIndexExpires(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		// 2 s TTL: the margins below stay wide when a 16384-shard read
		// takes a few hundred ms on a loaded machine
		p := short
		p.TTL, p.Retention = 2*time.Second, 500*time.Millisecond
		tr := newTracker(t, e, l.opt(), presence.WithProfile(p))
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "a", presence.Conn{ID: "c"})
		require.NoError(t, err)
		e.Advance(time.Second)
		_, err = tr.Connect(ctx, "b", presence.Conn{ID: "c"})
		require.NoError(t, err)
		e.Advance(1200 * time.Millisecond) // a's entry expired, b's not
		all, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"b"}, all)
		e.Advance(time.Second)
		all, err = tr.OnlineNow(ctx)
		require.NoError(t, err)
		assert.Empty(t, all)
		if !e.Real() { // on a real server the 16384-shard reads above take part of the retention
			assert.NotEmpty(t, e.Keys(), "members are kept for the retention")
		}
		e.Advance(400 * time.Millisecond)
		assert.Empty(t, dataKeys(e), "index shards expire with their members + retention")
	})
}

func TestAvailability(t *testing.T) {
	e := harness.New(t)
	av, err := availabilityOf(presence.New(e.Client, presence.WithNamespace(e.NS)))
	require.NoError(t, err)
	ctx := e.Ctx()
	s, err := av.Get(ctx, "123")
	require.NoError(t, err)
	assert.Equal(t, presence.Offline, s)
	require.NoError(t, av.Set(ctx, "123", presence.Busy))
	k := key(t, e, "admin:{admin_id}:presence", "123")
	got, err := av.Key("123")
	require.NoError(t, err)
	assert.Equal(t, k, got)
	assert.Equal(t, "busy", e.Client.Get(ctx, k).Val(), "the bare word, as chat scripts read it")
	ttl := e.Client.TTL(ctx, k).Val()
	assert.True(t, ttl > 29*time.Minute && ttl <= 30*time.Minute, "ttl %v", ttl)
	s, err = av.Get(ctx, "123")
	require.NoError(t, err)
	assert.Equal(t, presence.Busy, s)
	for _, st := range []presence.Status{presence.Online, presence.Away, presence.Offline} {
		require.NoError(t, av.Set(ctx, "123", st))
		s, err = av.Get(ctx, "123")
		require.NoError(t, err)
		assert.Equal(t, st, s)
	}
	assert.ErrorIs(t, av.Set(ctx, "123", presence.Invisible), presence.ErrInvalid)
	assert.ErrorIs(t, av.Set(ctx, "123", "napping"), presence.ErrInvalid)
	err = av.Set(ctx, "", presence.Online)
	assert.ErrorIs(t, err, keys.ErrInvalid)
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = av.Key("")
	assert.ErrorIs(t, err, presence.ErrInvalid)
}

// With a deployment-wide tag every admin's availability is in one slot,
// the tag's, beside the other keys a chat script carries it on.
func TestAvailabilityTag(t *testing.T) {
	e := harness.New(t)
	av, err := availabilityOf(presence.New(e.Client, presence.WithNamespace(e.NS), presence.WithAvailabilityTag("support")))
	require.NoError(t, err)
	ctx := e.Ctx()
	var ks []string
	for _, admin := range []string{"1", "2", "anna", "b:c{d}"} {
		require.NoError(t, av.Set(ctx, admin, presence.Online))
		k, err := av.Key(admin)
		require.NoError(t, err)
		assert.Equal(t, key(t, e, "admin:{tag}:{admin_id}:presence", "support", admin), k)
		ks = append(ks, k)
		s, err := av.Get(ctx, admin)
		require.NoError(t, err)
		assert.Equal(t, presence.Online, s)
	}
	assert.True(t, keys.SameSlot(append(ks, e.NS.Prefix+"chat:{support}:x")...))
	// A chat script reads them in one call on the cluster.
	n, err := e.Client.Eval(ctx, `local n = 0 for i = 1, #KEYS do if redis.call('GET', KEYS[i]) == 'online' then n = n + 1 end end return n`, ks).Int()
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	_, err = availabilityOf(presence.New(e.Client, presence.WithAvailabilityTag("\xff")))
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = availabilityOf(presence.New(e.Client, presence.WithAvailabilityTag(strings.Repeat("t", 1025))))
	assert.ErrorIs(t, err, presence.ErrInvalid)
}

func TestWithoutOnlineIndex(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithoutOnlineIndex())
		ctx := e.Ctx()
		_, err := tr.Connect(ctx, "u", presence.Conn{ID: "c"})
		require.NoError(t, err)
		_, err = tr.OnlineNow(ctx)
		assert.ErrorIs(t, err, presence.ErrNoIndex)
		_, err = tr.OnlineCount(ctx)
		assert.ErrorIs(t, err, presence.ErrNoIndex)
		if l.single() {
			assert.Len(t, dataKeys(e), 1, "presence only")
		} else {
			assert.Len(t, dataKeys(e), 2, "presence and connections only")
		}
		on, err := tr.Online(ctx, []string{"u"})
		require.NoError(t, err)
		assert.Equal(t, []string{"u"}, on)
	})
}

// Events delivers events on a channel, reports a malformed message to its
// callback and skips it, and closes the channel (and the subscription)
// when its context ends.
func TestSubscriptionEvents(t *testing.T) {
	e := harness.New(t)
	tr := newTracker(t, e)
	sub, err := tr.Subscribe(e.Ctx())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(e.Ctx())
	defer cancel()
	malformed := make(chan error, 4)
	evs := sub.Events(ctx, func(err error) { malformed <- err })
	require.NoError(t, isub.Publish(e.Ctx(), e.Client, tr.Channel(), `{"userId":"x","status":"dancing"}`).Err())
	_, err = tr.Connect(e.Ctx(), "u", presence.Conn{ID: "a"})
	require.NoError(t, err)
	select {
	case ev := <-evs:
		assert.Equal(t, "u", ev.UserID)
		assert.Equal(t, presence.Online, ev.Status)
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	select {
	case err := <-malformed:
		assert.ErrorIs(t, err, keys.ErrCorrupt)
		assert.Contains(t, err.Error(), tr.Channel())
	case <-time.After(5 * time.Second):
		t.Fatal("the malformed message was not reported")
	}
	cancel()
	select {
	case _, open := <-evs:
		assert.False(t, open, "closed with the context")
	case <-time.After(5 * time.Second):
		t.Fatal("Events did not end with its context")
	}
	_, err = sub.Next(e.Ctx())
	assert.ErrorIs(t, err, redis.ErrClosed, "the subscription is closed too")
}
