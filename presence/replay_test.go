package presence

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// shortProfile has lifetimes that fit real-time tests on real servers.
var shortProfile = Profile{Format: FormatDetailed, TTL: time.Second, Heartbeat: 400 * time.Millisecond,
	Retention: 1500 * time.Millisecond, TypingTTL: 900 * time.Millisecond, TypingThrottle: 600 * time.Millisecond}

// lossy is a test's view of one namespace through a fault proxy: a Tracker,
// Typing and Availability whose client reaches Redis through p (go-redis
// defaults: a command whose connection breaks is sent again), and an
// observer subscribed to the events with the test's own client.
type lossy struct {
	e   *harness.Env
	c   redis.UniversalClient
	p   *harness.Proxy
	tr  *Tracker
	ty  *Typing
	av  *Availability
	sub *Subscription
}

func newLossy(t *testing.T, opts ...Option) *lossy {
	t.Helper()
	e := harness.New(t)
	c, p := e.ProxyClient(nil)
	opts = append([]Option{WithNamespace(e.NS)}, opts...)
	l := &lossy{e: e, c: c, p: p}
	var err error
	l.tr, err = New(c, opts...)
	require.NoError(t, err)
	l.ty, err = typingOf(New(c, opts...))
	require.NoError(t, err)
	l.av, err = availabilityOf(New(c, opts...))
	require.NoError(t, err)
	obs, err := New(e.Client, opts...)
	require.NoError(t, err)
	l.sub, err = obs.Subscribe(e.Ctx())
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.sub.Close() })
	return l
}

// lose arms the loss of the reply to the next run of op, loading its
// script first so that the reply lost is the run's, not a NOSCRIPT.
func (l *lossy) lose(t *testing.T, op *call.Op) {
	t.Helper()
	require.NoError(t, op.Load(l.e.Ctx(), l.e.Client))
	l.p.LoseReply(op.Script().Hash())
}

// lost checks that the armed loss happened, once.
func (l *lossy) lost(t *testing.T) {
	t.Helper()
	assert.Zero(t, l.p.Pending(), "the armed loss was used")
	assert.EqualValues(t, 1, l.p.Lost(), "one reply lost")
}

// events returns the events received within quiet, as "user:prev->status".
func (l *lossy) events(t *testing.T, quiet time.Duration) []string {
	t.Helper()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		ev, err := l.sub.Next(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return out
		}
		out = append(out, fmt.Sprintf("%s:%s->%s", ev.UserID, ev.Previous, ev.Status))
	}
}

func eachLayoutInternal(t *testing.T, f func(t *testing.T, l Layout)) {
	for _, l := range []Layout{LayoutHash, LayoutSingleKey} {
		t.Run(l.String(), func(t *testing.T) { f(t, l) })
	}
}

// Every write whose reply is lost after it ran, and which go-redis
// therefore sends again, reports the outcome of its first run, leaves the
// state as one run would, and publishes its event once.
func TestReplayReportsFirstOutcome(t *testing.T) {
	eachLayoutInternal(t, func(t *testing.T, layout Layout) {
		const quiet = 300 * time.Millisecond
		ctx := context.Background()

		t.Run("connect", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout))
			l.lose(t, connectOp)
			r, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			assert.Equal(t, Result{Connections: 1, Changed: true, Status: Online}, r, "came online, once")
			l.lost(t)
			assert.Equal(t, []string{"u:offline->online"}, l.events(t, quiet))
			cs, err := l.tr.Connections(ctx, "u")
			require.NoError(t, err)
			assert.Len(t, cs, 1)
		})

		t.Run("connect refused", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout), WithMaxConnections(1))
			_, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			l.lose(t, connectOp)
			r, err := l.tr.Connect(ctx, "u", Conn{ID: "b"})
			require.ErrorIs(t, err, ErrTooManyConnections)
			assert.Equal(t, Result{Connections: 1, Status: Online}, r)
			l.lost(t)
			cs, err := l.tr.Connections(ctx, "u")
			require.NoError(t, err)
			require.Len(t, cs, 1)
			assert.Equal(t, "a", cs[0].ID, "the refused connection is not registered")
		})

		t.Run("heartbeat", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout))
			_, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			l.lose(t, heartbeatOp)
			r, err := l.tr.Heartbeat(ctx, "u", "a")
			require.NoError(t, err)
			assert.Equal(t, Result{Connections: 1, Status: Online}, r)
			l.lost(t)
			assert.Equal(t, []string{"u:offline->online"}, l.events(t, quiet))
		})

		t.Run("heartbeat that takes the user offline", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout), WithProfile(shortProfile))
			plantStale(t, l.e, layout, "u", "old")
			l.lose(t, heartbeatOp)
			r, err := l.tr.Heartbeat(ctx, "u", "new")
			require.ErrorIs(t, err, ErrUnknownConnection)
			assert.Equal(t, Result{Connections: 0, Changed: true, Status: Offline}, r, "the prune's transition, reported once")
			l.lost(t)
			assert.Equal(t, []string{"u:online->offline"}, l.events(t, quiet))
		})

		t.Run("disconnect", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout))
			_, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			l.lose(t, disconnectOp)
			r, err := l.tr.Disconnect(ctx, "u", "a")
			require.NoError(t, err)
			assert.Equal(t, Result{Connections: 0, Changed: true, Status: Offline}, r, "went offline, once")
			l.lost(t)
			assert.Equal(t, []string{"u:offline->online", "u:online->offline"}, l.events(t, quiet))
		})

		t.Run("set status", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout))
			_, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			l.lose(t, setStatusOp)
			r, err := l.tr.SetStatus(ctx, "u", Away)
			require.NoError(t, err)
			assert.Equal(t, Result{Connections: 1, Changed: true, Status: Away}, r)
			l.lost(t)
			assert.Equal(t, []string{"u:offline->online", "u:online->away"}, l.events(t, quiet))
		})

		t.Run("set status offline", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout))
			l.lose(t, setStatusOp)
			_, err := l.tr.SetStatus(ctx, "u", Away)
			require.ErrorIs(t, err, ErrOffline)
			l.lost(t)
		})

		t.Run("set activity", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout))
			_, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			l.lose(t, setActivityOp)
			require.NoError(t, l.tr.SetActivity(ctx, "u", "idle"))
			l.lost(t)
			p, err := l.tr.Get(ctx, "u")
			require.NoError(t, err)
			assert.Equal(t, "idle", p.Activity)
		})

		t.Run("sweep", func(t *testing.T) {
			l := newLossy(t, WithLayout(layout), WithProfile(shortProfile))
			_, err := l.tr.Connect(ctx, "u", Conn{ID: "a"})
			require.NoError(t, err)
			l.e.Advance(1100 * time.Millisecond) // the presence expires silently
			pk, err := presenceKey.Key(l.e.NS, "u")
			require.NoError(t, err)
			l.lose(t, sweepOp)
			n, err := l.tr.Sweep(ctx, keys.Slot(pk), 1)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "the first run's count")
			l.lost(t)
			assert.Equal(t, []string{"u:offline->online", "u:online->offline"}, l.events(t, quiet), "announced once")
			n, err = l.tr.Sweep(ctx, keys.Slot(pk), 1)
			require.NoError(t, err)
			assert.Zero(t, n)
		})
	})
}

// plantStale writes an online presence that lives a minute and one
// connection, id, whose lastSeen is two TTLs old: the state a heartbeat
// of another connection prunes, taking the user offline.
func plantStale(t *testing.T, e *harness.Env, layout Layout, user, id string) {
	t.Helper()
	ctx := e.Ctx()
	pk, err := presenceKey.Key(e.NS, user)
	require.NoError(t, err)
	old := e.Now().Add(-2 * shortProfile.TTL).UnixMilli()
	v := fmt.Sprintf(`{"status":"online","lastSeen":%d,"activeConnections":1}`, old)
	if layout == LayoutSingleKey {
		v = fmt.Sprintf(`{"status":"online","lastSeen":%d,"activeConnections":1,"connections":{%q:[%d,%d,{}]}}`, old, id, old, old)
	} else {
		ck, err := connsKey.Key(e.NS, user)
		require.NoError(t, err)
		require.NoError(t, e.Client.HSet(ctx, ck, id, fmt.Sprintf(`{"connectedAt":%d,"lastSeen":%d,"metadata":{}}`, old, old)).Err())
		require.NoError(t, e.Client.Expire(ctx, ck, time.Minute).Err())
	}
	require.NoError(t, e.Client.Set(ctx, pk, v, time.Minute).Err())
}

func TestReplayTyping(t *testing.T) {
	ctx := context.Background()
	t.Run("start", func(t *testing.T) {
		l := newLossy(t, WithProfile(shortProfile))
		l.lose(t, typingStartOp)
		ok, err := l.ty.Start(ctx, "c", "u", "ann")
		require.NoError(t, err)
		assert.True(t, ok, "written, not throttled by its own first run")
		l.lost(t)
		ty, err := l.ty.Typers(ctx, "c")
		require.NoError(t, err)
		assert.Len(t, ty, 1)
	})
	t.Run("start unthrottled", func(t *testing.T) {
		p := shortProfile
		p.TypingThrottle = 0
		l := newLossy(t, WithProfile(p))
		l.lose(t, typingStartOp)
		ok, err := l.ty.Start(ctx, "c", "u", "ann")
		require.NoError(t, err)
		assert.True(t, ok)
		l.lost(t)
	})
	t.Run("start throttled", func(t *testing.T) {
		l := newLossy(t, WithProfile(shortProfile))
		ok, err := l.ty.Start(ctx, "c", "u", "ann")
		require.NoError(t, err)
		require.True(t, ok)
		l.lose(t, typingStartOp)
		ok, err = l.ty.Start(ctx, "c", "u", "ann")
		require.NoError(t, err)
		assert.False(t, ok, "throttled, first and again")
		l.lost(t)
	})
	t.Run("stop", func(t *testing.T) {
		l := newLossy(t, WithProfile(shortProfile))
		_, err := l.ty.Start(ctx, "c", "u", "ann")
		require.NoError(t, err)
		l.lose(t, typingStopOp)
		ok, err := l.ty.Stop(ctx, "c", "u")
		require.NoError(t, err)
		assert.True(t, ok, "there was one, as the first run found")
		l.lost(t)
		ty, err := l.ty.Typers(ctx, "c")
		require.NoError(t, err)
		assert.Empty(t, ty)
	})
}

func TestReplayAvailability(t *testing.T) {
	ctx := context.Background()
	l := newLossy(t)
	k, err := l.av.Key("7")
	require.NoError(t, err)
	l.p.LoseReply(k)
	require.NoError(t, l.av.Set(ctx, "7", Busy))
	l.lost(t)
	s, err := l.av.Get(ctx, "7")
	require.NoError(t, err)
	assert.Equal(t, Busy, s)
}

// Auto-pipelined calls share a pipeline; when its reply is lost, go-redis
// sends the whole pipeline again and every script in it runs twice. Each
// caller still gets its first outcome, and each event goes out once.
func TestReplayedPipeline(t *testing.T) {
	const users = 40
	l := newLossy(t, WithPipelining(2))
	trips := harness.CountTrips(l.c)
	ctx := context.Background()
	// warm the connection pool and the script cache
	for i := 0; i < 2; i++ {
		_, err := l.tr.Connect(ctx, fmt.Sprint("warm", i), Conn{ID: "a"})
		require.NoError(t, err)
	}
	require.NoError(t, connectOp.Load(ctx, l.e.Client))
	// Two heartbeats take both lanes and stall; the connects queue behind
	// them and go out as one pipeline when the lanes come back.
	l.p.Stall()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.tr.Heartbeat(ctx, fmt.Sprint("warm", i), "a")
			assert.NoError(t, err)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	results := make([]Result, users)
	errs := make([]error, users)
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = l.tr.Connect(ctx, fmt.Sprint("u", i), Conn{ID: "a"})
		}()
	}
	time.Sleep(100 * time.Millisecond)
	l.p.LoseReply(connectOp.Script().Hash())
	l.p.Resume()
	wg.Wait()
	for i := range users {
		require.NoError(t, errs[i], i)
		assert.Equal(t, Result{Connections: 1, Changed: true, Status: Online}, results[i], i)
	}
	l.lost(t)
	assert.Positive(t, trips.Pipelines(), "the connects went out in pipelines")
	evs := l.events(t, 300*time.Millisecond)
	assert.Len(t, evs, users+2, "one event per user: %v", evs)
	seen := map[string]int{}
	for _, ev := range evs {
		seen[ev]++
	}
	for ev, n := range seen {
		assert.Equal(t, 1, n, ev)
	}
}

// Heartbeats share pipelines too; a resent pipeline of them runs each
// twice (the fast path of a live connection both times), and every caller
// still sees its connection refreshed, with nothing published.
func TestReplayedHeartbeatPipeline(t *testing.T) {
	const users = 40
	l := newLossy(t, WithPipelining(2))
	trips := harness.CountTrips(l.c)
	ctx := context.Background()
	for i := range users + 2 {
		_, err := l.tr.Connect(ctx, fmt.Sprint("u", i), Conn{ID: "a", Metadata: Metadata{Device: "web"}})
		require.NoError(t, err)
	}
	l.events(t, 300*time.Millisecond) // the connects' own
	require.NoError(t, heartbeatOp.Load(ctx, l.e.Client))
	l.p.Stall()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.tr.Heartbeat(ctx, fmt.Sprint("u", users+i), "a")
			assert.NoError(t, err)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	results := make([]Result, users)
	errs := make([]error, users)
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = l.tr.Heartbeat(ctx, fmt.Sprint("u", i), "a")
		}()
	}
	time.Sleep(100 * time.Millisecond)
	l.p.LoseReply(heartbeatOp.Script().Hash())
	l.p.Resume()
	wg.Wait()
	for i := range users {
		require.NoError(t, errs[i], i)
		assert.Equal(t, Result{Connections: 1, Status: Online}, results[i], i)
	}
	l.lost(t)
	assert.Positive(t, trips.Pipelines(), "the heartbeats went out in pipelines")
	assert.Empty(t, l.events(t, 300*time.Millisecond), "a heartbeat changes no one's status")
	for i := range users {
		p, err := l.tr.Get(ctx, fmt.Sprint("u", i))
		require.NoError(t, err)
		assert.True(t, p.Online())
		assert.Equal(t, 1, p.Connections)
	}
}

// typingOf and availabilityOf return the Typing and the Availability of
// the Tracker New built: typingOf(New(rdb, opts...)).
func typingOf(t *Tracker, err error) (*Typing, error) {
	if err != nil {
		return nil, err
	}
	return t.Typing(), nil
}

func availabilityOf(t *Tracker, err error) (*Availability, error) {
	if err != nil {
		return nil, err
	}
	return t.Availability(), nil
}
