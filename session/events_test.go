package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// readAll reads every event still in the streams of the Store's
// namespace.
func readAll(t *testing.T, e *harness.Env, s *Store) []Event {
	t.Helper()
	r := s.NewEventReader(time.Time{})
	var all []Event
	for {
		evs, err := r.Read(e.Ctx())
		require.NoError(t, err)
		if len(evs) == 0 {
			return all
		}
		all = append(all, evs...)
	}
}

// kindsOf returns "kind/reason" of each event of session sid, in order.
func kindsOf(evs []Event, sid string) []string {
	var out []string
	for _, ev := range evs {
		if ev.SessionID == sid {
			out = append(out, string(ev.Kind)+"/"+ev.Reason)
		}
	}
	return out
}

// TestEventsEachKind: every way a session starts and ends emits its one
// event, with the user, the reason and the server time; a replayed
// Revoke, a second Sweep and a read of an ended session emit nothing
// more; an expiry that no call noticed is announced by Sweep, the index
// having outlived the session by SweepWindow.
func TestEventsEachKind(t *testing.T) {
	e, s := newStore(t, WithEvents(1000), WithMaxSessions(2))
	ctx := e.Ctx()
	before := e.Now().Add(-time.Second)

	a, _ := mustCreate(t, e, s, "u1")
	e.Advance(2 * time.Millisecond) // a expires first
	b, bRefresh := mustCreate(t, e, s, "u1")
	e.Advance(2 * time.Millisecond)
	c, _ := mustCreate(t, e, s, "u1") // evicts a
	_, err := s.Get(ctx, "u1", a.ID)
	require.ErrorIs(t, err, ErrNotFound)

	ok, err := s.Revoke(ctx, "u1", c.ID)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.Revoke(ctx, "u1", c.ID)
	require.NoError(t, err)
	require.False(t, ok)

	renewed, _, err := s.Renew(ctx, "u1", b.ID)
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u1", renewed.ID, bRefresh) // b's token: reuse
	require.ErrorIs(t, err, ErrTokenReused)

	d, _ := mustCreate(t, e, s, "u2")
	e.Advance(2 * time.Millisecond)
	f, _ := mustCreate(t, e, s, "u2")
	n, err := s.RevokeOthers(ctx, "u2", f.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = s.RevokeAll(ctx, "u2")
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Expiries: noticed by Get, by List, and by nobody but Sweep.
	short := func(user string) *Session {
		sess, _, err := s.Create(ctx, Info{UserID: user, IdleTimeout: 100 * time.Millisecond})
		require.NoError(t, err)
		return sess
	}
	g, l, w := short("u3"), short("u4"), short("u5")
	e.Advance(300 * time.Millisecond)
	_, err = s.Get(ctx, "u3", g.ID)
	require.ErrorIs(t, err, ErrNotFound)
	list, err := s.List(ctx, "u4")
	require.NoError(t, err)
	require.Empty(t, list)
	idx5 := idxKey(t, e, "u5")
	require.Equal(t, int64(1), e.Client.Exists(ctx, idx5).Val(), "the index outlives its session by the sweep window")
	require.Greater(t, pttl(t, e, idx5), sweepWindow-time.Minute)
	slot := keys.Slot(idx5)
	n, err = s.Sweep(ctx, slot, 1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = s.Sweep(ctx, slot, 1)
	require.NoError(t, err)
	require.Zero(t, n, "a second sweep announces nothing")
	n, err = s.Sweep(ctx, shards-2, 4) // wraps to shards 0 and 1
	require.NoError(t, err)
	require.Zero(t, n)
	for _, u := range []string{"u1", "u2", "u3", "u4"} {
		n, err = s.Sweep(ctx, keys.Slot(idxKey(t, e, u)), 1)
		require.NoError(t, err)
		require.Zero(t, n, "nothing else is due")
	}

	evs := readAll(t, e, s)
	assert.Equal(t, []string{"created/create", "evicted/max sessions"}, kindsOf(evs, a.ID))
	assert.Equal(t, []string{"created/create", "revoked/renew"}, kindsOf(evs, b.ID))
	assert.Equal(t, []string{"created/create", "revoked/revoke"}, kindsOf(evs, c.ID))
	assert.Equal(t, []string{"created/renew", "revoked/refresh token reused"}, kindsOf(evs, renewed.ID))
	assert.Equal(t, []string{"created/create", "revoked/revoke others"}, kindsOf(evs, d.ID))
	assert.Equal(t, []string{"created/create", "revoked/revoke all"}, kindsOf(evs, f.ID))
	for _, x := range []*Session{g, l, w} {
		assert.Equal(t, []string{"created/create", "expired/"}, kindsOf(evs, x.ID))
	}
	assert.Len(t, evs, 18)
	after := e.Now().Add(time.Second)
	for _, ev := range evs {
		assert.NotEmpty(t, ev.ID)
		assert.True(t, ev.At.After(before) && ev.At.Before(after), "%+v at server time", ev)
		if ev.Kind == Expired && ev.SessionID == w.ID {
			assert.Equal(t, w.ExpiresAt.UnixMilli(), ev.At.UnixMilli(), "an expiry is dated at the deadline")
		}
	}
	for _, x := range []*Session{a, b, c, renewed} {
		for _, ev := range evs {
			if ev.SessionID == x.ID {
				assert.Equal(t, "u1", ev.UserID)
			}
		}
	}

	// A cursor resumes after the last event read; a reader from now sees
	// only what comes next.
	r := s.NewEventReader(time.Time{})
	first, err := r.Read(ctx)
	require.NoError(t, err)
	require.Len(t, first, 18)
	r2, err := s.ResumeEventReader(r.Cursor())
	require.NoError(t, err)
	late := s.NewEventReader(e.Now().Add(time.Millisecond))
	e.Advance(2 * time.Millisecond)
	h, _ := mustCreate(t, e, s, "u6")
	next, err := r2.Read(ctx)
	require.NoError(t, err)
	require.Len(t, next, 1)
	assert.Equal(t, h.ID, next[0].SessionID)
	assert.Equal(t, Created, next[0].Kind)
	next, err = late.Read(ctx)
	require.NoError(t, err)
	require.Len(t, next, 1)
	_, err = s.ResumeEventReader("garbage")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.ResumeEventReader(r.Cursor() + ",99999:1-1")
	require.ErrorIs(t, err, ErrInvalid)

	// An entry that is not an event is reported, naming the stream, and
	// skipped.
	stream, _, err := s.slotKeys("test", keys.Slot(idxKey(t, e, "u6")))
	require.NoError(t, err)
	require.NoError(t, e.Client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"kind", "login"}}).Err())
	_, err = r2.Read(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), stream)
	next, err = r2.Read(ctx)
	require.NoError(t, err)
	require.Empty(t, next)
}

// TestEventsOffWritesNothing: without WithEvents no stream or schedule is
// written and indexes expire with their last session; Sweep is a no-op.
func TestEventsOffWritesNothing(t *testing.T) {
	e, s := newStore(t, WithMaxSessions(1))
	ctx := e.Ctx()
	a, _ := mustCreate(t, e, s, "u1")
	mustCreate(t, e, s, "u1")
	_, err := s.Revoke(ctx, "u1", a.ID)
	require.NoError(t, err)
	_, err = s.RevokeAll(ctx, "u1")
	require.NoError(t, err)
	b, _ := mustCreate(t, e, s, "u2")
	for _, k := range e.Keys() {
		_, err1 := eventsKey.Parse(e.NS, k)
		_, err2 := dueKey.Parse(e.NS, k)
		assert.True(t, err1 != nil && err2 != nil, "%s written without events", k)
	}
	assert.LessOrEqual(t, pttl(t, e, idxKey(t, e, "u2")), time.Until(b.ExpiresAt)+time.Second)
	n, err := s.Sweep(ctx, 0, shards)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = s.Sweep(ctx, shards, 1)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(e.Client, WithEvents(maxEvents+1))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, s.RunSweeper(ctx, time.Second, 1, nil), ErrInvalid, "a cycle beyond the sweep window")
}

// TestEventsExactlyOnceUnderChurn: many goroutines create (some sessions
// short-lived), get, list, renew, revoke one, all or others of a few
// users, past a per-user cap, while sessions expire and sweeps run; then
// every session ends (expiry, then RevokeAll). Every session ever made
// has exactly one created event and exactly one terminal event, after it,
// for its user; no event names a session nobody made.
func TestEventsExactlyOnceUnderChurn(t *testing.T) {
	e, s := newStore(t, WithEvents(maxEvents), WithMaxSessions(4))
	ctx := e.Ctx()
	workers, rounds := 24, 60
	if !e.Real() {
		workers, rounds = 12, 25 // gopher-lua under -race is slow; the real servers run the full size
	}
	users := []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"}
	var mu sync.Mutex
	made := map[string]string{} // session ID -> user
	live := map[string][]string{}
	remember := func(user, sid string) {
		mu.Lock()
		made[sid] = user
		live[user] = append(live[user], sid)
		mu.Unlock()
	}
	pick := func(user string) string {
		mu.Lock()
		defer mu.Unlock()
		if l := live[user]; len(l) > 0 {
			return l[rand.IntN(len(l))]
		}
		return "AAAAAAAAAAAAAAAAAAAAAA"
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range rounds {
				user := users[rand.IntN(len(users))]
				var err error
				switch op := (w + i*7) % 10; op {
				case 0, 1, 2, 3:
					in := Info{UserID: user}
					if op <= 1 {
						in.IdleTimeout = time.Duration(10+rand.IntN(50)) * time.Millisecond
					}
					var sess *Session
					if sess, _, err = s.Create(ctx, in); err == nil {
						remember(user, sess.ID)
					}
				case 4:
					_, err = s.Get(ctx, user, pick(user))
				case 5:
					_, err = s.List(ctx, user)
				case 6:
					var sess *Session
					if sess, _, err = s.Renew(ctx, user, pick(user)); err == nil {
						remember(user, sess.ID)
					}
				case 7:
					_, err = s.Revoke(ctx, user, pick(user))
				case 8:
					if i%2 == 0 {
						_, err = s.RevokeAll(ctx, user)
					} else {
						_, err = s.RevokeOthers(ctx, user, pick(user))
					}
				case 9:
					_, err = s.Sweep(ctx, keys.Slot(idxKey(t, e, user)), 1)
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				if !e.Real() && i%5 == 0 {
					e.Advance(10 * time.Millisecond)
				} else if e.Real() && i%5 == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	require.False(t, t.Failed())

	// The short sessions expire; a sweep announces those no call noticed,
	// then RevokeAll ends the rest (pruning any expiry in between first).
	e.Advance(200 * time.Millisecond)
	for _, u := range users {
		_, err := s.Sweep(ctx, keys.Slot(idxKey(t, e, u)), 1)
		require.NoError(t, err)
	}
	for _, u := range users {
		_, err := s.RevokeAll(ctx, u)
		require.NoError(t, err)
	}

	evs := readAll(t, e, s)
	type tally struct {
		created, terminal int
		order             []EventKind
	}
	per := map[string]*tally{}
	kinds := map[EventKind]int{}
	for _, ev := range evs {
		user, ok := made[ev.SessionID]
		if !assert.True(t, ok, "event for a session nobody made: %+v", ev) {
			continue
		}
		assert.Equal(t, user, ev.UserID)
		x := per[ev.SessionID]
		if x == nil {
			x = &tally{}
			per[ev.SessionID] = x
		}
		x.order = append(x.order, ev.Kind)
		if ev.Kind == Created {
			x.created++
		} else {
			x.terminal++
		}
		kinds[ev.Kind]++
	}
	for sid := range made {
		x := per[sid]
		if !assert.NotNil(t, x, "no event for %s", sid) {
			continue
		}
		assert.Equal(t, 1, x.created, "%s: %v", sid, x.order)
		assert.Equal(t, 1, x.terminal, "%s: %v", sid, x.order)
		assert.Equal(t, Created, x.order[0], "%s: created first: %v", sid, x.order)
	}
	for _, k := range []EventKind{Created, Revoked, Evicted, Expired} {
		assert.Positive(t, kinds[k], "no %s event: the churn did not cover it", k)
	}
	t.Logf("%s: %d sessions, events %v", e.Backend, len(made), kinds)
	for _, u := range users {
		list, err := s.List(ctx, u)
		require.NoError(t, err)
		assert.Empty(t, list)
	}
}

// TestEventsForeignStreamWritesNothing: a stream key holding data this
// package did not write fails the calls that emit with keys.ErrCorrupt
// naming it, before they write anything.
func TestEventsForeignStreamWritesNothing(t *testing.T) {
	e, s := newStore(t, WithEvents(100))
	ctx := e.Ctx()
	a, _ := mustCreate(t, e, s, "u1")
	stream, _, err := s.slotKeys("test", keys.Slot(idxKey(t, e, "u1")))
	require.NoError(t, err)
	require.NoError(t, e.Client.Del(ctx, stream).Err())
	require.NoError(t, e.Client.Set(ctx, stream, "x", time.Hour).Err())
	_, err = s.Revoke(ctx, "u1", a.ID)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), stream)
	_, _, err = s.Create(ctx, Info{UserID: "u1"})
	require.ErrorIs(t, err, keys.ErrCorrupt)
	_, err = s.RevokeAll(ctx, "u1")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, list, 1, "nothing was created or revoked")
	_, err = s.Get(ctx, "u1", a.ID)
	require.NoError(t, err)
}

// TestEventReaderChannel: Events delivers what is emitted after the
// reader's start, closes with its context, and leaves the cursor after
// the last event delivered.
func TestEventReaderChannel(t *testing.T) {
	e, s := newStore(t, WithEvents(100))
	ctx, cancel := context.WithCancel(e.Ctx())
	old, _ := mustCreate(t, e, s, "u1")
	e.Advance(2 * time.Millisecond)
	r := s.NewEventReader(e.Now())
	var errs []error
	ch := r.Events(ctx, 10*time.Millisecond, func(err error) { errs = append(errs, err) })
	a, _ := mustCreate(t, e, s, "u1")
	_, err := s.Revoke(e.Ctx(), "u1", a.ID)
	require.NoError(t, err)
	var got []string
	for len(got) < 2 {
		select {
		case ev := <-ch:
			require.NotEqual(t, old.ID, ev.SessionID, "an event before the reader's start")
			got = append(got, string(ev.Kind))
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	}
	assert.Equal(t, []string{"created", "revoked"}, got)
	cancel()
	for range ch {
	}
	assert.Empty(t, errs)
	again, err := s.ResumeEventReader(r.Cursor())
	require.NoError(t, err)
	more, err := again.Read(e.Ctx())
	require.NoError(t, err)
	assert.Empty(t, more)
}

// TestEventsOnceUnderLostReplies: the reply of each emitting call is lost
// once after the server ran it and go-redis resends the call; the resend
// emits nothing, so every session still has one created and one terminal
// event.
func TestEventsOnceUnderLostReplies(t *testing.T) {
	r := newReplayEnv(t, WithEvents(1000), WithMaxSessions(2))
	s, ctx := r.s, r.e.Ctx()
	var made []string
	create := func(user string, lose bool) *Session {
		var sess *Session
		do := func() {
			var err error
			sess, _, err = s.Create(ctx, Info{UserID: user})
			require.NoError(t, err)
		}
		if lose {
			r.lose(t, createOp, do)
		} else {
			do()
		}
		made = append(made, sess.ID)
		r.e.Advance(2 * time.Millisecond) // distinct expiries: the eviction order is defined
		return sess
	}
	a := create("u1", true)
	b := create("u1", true)
	create("u1", true) // evicts a
	r.lose(t, revokeOp, func() {
		ok, err := s.Revoke(ctx, "u1", b.ID)
		require.NoError(t, err)
		assert.True(t, ok)
	})
	c := create("u2", false)
	var tok Tokens
	r.lose(t, renewOp, func() {
		var err error
		var renewed *Session
		renewed, tok, err = s.Renew(ctx, "u2", c.ID)
		require.NoError(t, err)
		made = append(made, renewed.ID)
	})
	next, err := s.RotateRefresh(ctx, "u2", made[len(made)-1], tok.Refresh)
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u2", made[len(made)-1], next)
	require.NoError(t, err)
	r.lose(t, rotateOp, func() {
		_, err := s.RotateRefresh(ctx, "u2", made[len(made)-1], tok.Refresh) // reuse: two rotations old
		require.ErrorIs(t, err, ErrTokenReused)
	})
	create("u3", false)
	create("u3", false)
	r.lose(t, revokeOthersOp, func() {
		n, err := s.RevokeOthers(ctx, "u3", made[len(made)-1])
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
	r.lose(t, revokeAllOp, func() {
		n, err := s.RevokeAll(ctx, "u1")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
	n, err := s.RevokeAll(ctx, "u3")
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	evs := readAll(t, r.e, s)
	for _, sid := range made {
		k := kindsOf(evs, sid)
		require.Len(t, k, 2, "%s: %v", sid, k)
		assert.Contains(t, k[0], "created/")
		assert.NotContains(t, k[1], "created/")
	}
	assert.Len(t, evs, 2*len(made))
	_, err = s.Get(ctx, "u1", a.ID)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestEventsTrimmed: a reader whose position in a slot's stream was
// trimmed away is told that events may be gone, with the events from
// the oldest kept; the next Read, and a reader whose position is still
// held or was never read, are not told so.
func TestEventsTrimmed(t *testing.T) {
	e, s := newStore(t, WithEvents(10))
	ctx := e.Ctx()
	for i := 0; i < 3; i++ {
		mustCreate(t, e, s, "u1")
	}
	r := s.NewEventReader(time.Time{})
	evs, err := r.Read(ctx)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	slot := -1
	for i, p := range r.pos {
		if p != "" {
			slot = i
		}
	}
	require.GreaterOrEqual(t, slot, 0)
	stream, _, err := s.slotKeys("test", slot)
	require.NoError(t, err)
	held := r.Cursor()

	// Create until the stream's first entry is past the reader's
	// position (XADD MAXLEN ~ 10 trims whole nodes on a real Redis).
	first := func() string {
		v, err := e.Client.XRangeN(ctx, stream, "-", "+", 1).Result()
		require.NoError(t, err)
		require.Len(t, v, 1)
		return v[0].ID
	}
	for n := 0; !reply.StreamIDBefore(r.pos[slot], first()); n++ {
		require.Less(t, n, 1000, "the stream was never trimmed")
		mustCreate(t, e, s, "u1")
	}
	oldest := first()

	evs, err = r.Read(ctx)
	require.ErrorIs(t, err, ErrEventsTrimmed)
	assert.Contains(t, err.Error(), stream)
	assert.Contains(t, err.Error(), oldest)
	require.NotEmpty(t, evs)
	for {
		evs, err = r.Read(ctx)
		require.NoError(t, err)
		if len(evs) == 0 {
			break
		}
	}
	mustCreate(t, e, s, "u1")
	evs, err = r.Read(ctx)
	require.NoError(t, err)
	require.Len(t, evs, 1)

	// a reader from the start reads the oldest kept without the error
	assert.NotEmpty(t, readAll(t, e, s))
	// the cursor saved before the trim: told once
	r2, err := s.ResumeEventReader(held)
	require.NoError(t, err)
	_, err = r2.Read(ctx)
	require.ErrorIs(t, err, ErrEventsTrimmed)
	_, err = r2.Read(ctx)
	require.NoError(t, err)

	// an idle Read is one round trip; one that read on after a position
	// it had read checks it in a second
	fresh := e.FreshClient()
	fs, err := New(fresh, WithNamespace(e.NS))
	require.NoError(t, err)
	r3, err := fs.ResumeEventReader(held)
	require.NoError(t, err)
	trips := harness.CountTrips(fresh)
	evs, err = r3.Read(ctx)
	require.ErrorIs(t, err, ErrEventsTrimmed)
	require.NotEmpty(t, evs)
	assert.Equal(t, int64(2), trips.Total())
	for len(evs) > 0 {
		evs, err = r3.Read(ctx)
		require.NoError(t, err)
	}
	trips.Reset()
	evs, err = r3.Read(ctx)
	require.NoError(t, err)
	assert.Empty(t, evs)
	assert.Equal(t, int64(1), trips.Total())
}

// trimPast creates sessions of userID until the stream of its slot no
// longer holds the reader's position there, and returns the stream.
func trimPast(t *testing.T, e *harness.Env, s *Store, r *EventReader, userID string) string {
	t.Helper()
	ctx := e.Ctx()
	idx, err := pkg.Key("test", indexKey, s.opt.ns, userID)
	require.NoError(t, err)
	slot := keys.Slot(idx)
	require.NotEmpty(t, r.pos[slot], "the reader has read %s's slot", userID)
	stream, _, err := s.slotKeys("test", slot)
	require.NoError(t, err)
	for n := 0; ; n++ {
		held, err := e.Client.XRange(ctx, stream, r.pos[slot], r.pos[slot]).Result()
		require.NoError(t, err)
		if len(held) == 0 {
			return stream
		}
		require.Less(t, n, 1000, "the stream was never trimmed")
		mustCreate(t, e, s, userID)
	}
}

// TestEventsTrimmedInTwoSlots: every stream trimmed past the reader's
// position is reported, each naming its stream; a Read whose check
// fails leaves the reader where it was, and the next one reads the same
// events again.
func TestEventsTrimmedInTwoSlots(t *testing.T) {
	e, s := newStore(t, WithEvents(10))
	ctx := e.Ctx()
	users := []string{"u1"}
	slotOf := func(u string) int {
		idx, err := pkg.Key("test", indexKey, s.opt.ns, u)
		require.NoError(t, err)
		return keys.Slot(idx)
	}
	for i := 2; len(users) < 2; i++ {
		if u := fmt.Sprintf("u%d", i); slotOf(u) != slotOf(users[0]) {
			users = append(users, u)
		}
	}
	for _, u := range users {
		mustCreate(t, e, s, u)
	}
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	ps, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	r := ps.NewEventReader(time.Time{})
	evs, err := r.Read(ctx)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	streams := []string{trimPast(t, e, s, r, users[0]), trimPast(t, e, s, r, users[1])}

	before := r.Cursor()
	p.LoseReply("xrange") // the check's round trip
	_, err = r.Read(ctx)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrEventsTrimmed)
	require.Equal(t, before, r.Cursor(), "a failed Read does not move the reader")

	evs, err = r.Read(ctx)
	require.ErrorIs(t, err, ErrEventsTrimmed)
	require.NotEmpty(t, evs)
	for _, st := range streams {
		assert.Contains(t, err.Error(), st)
	}
}
