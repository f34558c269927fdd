package chat

import (
	"context"
	"errors"
	"fmt"
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

func TestLeastLoadedBalancesAndRotatesTies(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 3, 3)
	var got []string
	for i := range 9 {
		a, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
		assert.True(t, a.Opened)
		got = append(got, a.Admin)
	}
	// Equal loads: each assignment goes to the next admin after the last.
	assert.Equal(t, []string{"a1", "a2", "a3", "a1", "a2", "a3", "a1", "a2", "a3"}, got)
	a, err := c.Open(ctx, "c9", Normal)
	require.NoError(t, err)
	assert.Equal(t, "", a.Admin, "everyone at capacity: backlog")
	// a2 frees two places: least-loaded gives both to a2 (the backlog's
	// c9 at once, then the next open).
	_, err = c.Resolve(ctx, "c1")
	require.NoError(t, err)
	_, err = c.Resolve(ctx, "c4")
	require.NoError(t, err)
	a, err = c.Open(ctx, "c10", Normal)
	require.NoError(t, err)
	assert.Equal(t, "a2", a.Admin)
	cv, err := c.Conversation(ctx, "c9")
	require.NoError(t, err)
	assert.Equal(t, "a2", cv.Admin)
	assigned, backlog := c.snapshot(t).check(t)
	assert.Equal(t, 9, assigned)
	assert.Zero(t, backlog)

	// Loads 3/1/3 after two resolutions of a2's: new conversations go to a2.
	_, err = c.Resolve(ctx, "c9")
	require.NoError(t, err)
	_, err = c.Resolve(ctx, "c10")
	require.NoError(t, err)
	a, err = c.Open(ctx, "c11", Normal)
	require.NoError(t, err)
	assert.Equal(t, "a2", a.Admin, "the least loaded wins over rotation")
}

func TestRoundRobin(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithStrategy(RoundRobin))
	team(t, c, 3, 10)
	require.NoError(t, c.Availability().Set(ctx, "a2", presence.Busy))
	var got []string
	for i := range 6 {
		a, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
		got = append(got, a.Admin)
	}
	assert.Equal(t, []string{"a1", "a3", "a1", "a3", "a1", "a3"}, got, "busy a2 is skipped")
	// Round robin ignores loads: a2 online again comes next in turn.
	require.NoError(t, c.Availability().Set(ctx, "a2", presence.Online))
	got = got[:0]
	for i := 6; i < 9; i++ {
		a, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
		got = append(got, a.Admin)
	}
	assert.Equal(t, []string{"a1", "a2", "a3"}, got)
}

func TestExplicitTransferUnassign(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 3, 2)
	for i := range 4 {
		_, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
	}
	// c0 a1, c1 a2, c2 a3, c3 a1.
	a, err := c.Assign(ctx, "c1", "a3")
	require.NoError(t, err)
	assert.Equal(t, Assignment{Conversation: "c1", Admin: "a3", Previous: "a2"}, a)
	_, err = c.Assign(ctx, "c2", "a1")
	assert.ErrorIs(t, err, ErrFull)
	_, err = c.Assign(ctx, "c2", "nobody")
	assert.ErrorIs(t, err, ErrUnknownAdmin)
	_, err = c.Assign(ctx, "nope", "a1")
	assert.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, c.Availability().Set(ctx, "a2", presence.Away))
	_, err = c.Assign(ctx, "c2", "a2")
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "admin:{main}:a2:presence")
	require.NoError(t, c.Availability().Set(ctx, "a2", presence.Online))

	_, err = c.Transfer(ctx, "c2", "a1", "a2")
	assert.ErrorIs(t, err, ErrNotAssigned, "c2 is a3's")
	a, err = c.Transfer(ctx, "c2", "a3", "a2")
	require.NoError(t, err)
	assert.Equal(t, "a2", a.Admin)
	a, err = c.Assign(ctx, "c2", "a2")
	require.NoError(t, err)
	assert.Equal(t, Assignment{Conversation: "c2", Admin: "a2", Previous: "a2"}, a, "assigning to the holder changes nothing")

	// Unassign: never straight back to the admin it left.
	a, err = c.Unassign(ctx, "c0")
	require.NoError(t, err)
	assert.Equal(t, "a1", a.Previous)
	assert.NotEqual(t, "a1", a.Admin)
	assert.NotEmpty(t, a.Admin, "a2 and a3 have room")
	c.snapshot(t).check(t)

	// Everyone else full: it waits in the backlog rather than go back.
	require.NoError(t, c.Availability().Set(ctx, "a2", presence.Busy))
	require.NoError(t, c.Availability().Set(ctx, "a3", presence.Busy))
	a, err = c.Unassign(ctx, "c3")
	require.NoError(t, err)
	assert.Equal(t, Assignment{Conversation: "c3", Admin: "", Previous: "a1"}, a)
	// The next routing call may give it to a1 again.
	r, err := c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, r.Assigned)
	cv, err := c.Conversation(ctx, "c3")
	require.NoError(t, err)
	assert.Equal(t, "a1", cv.Admin)
	c.snapshot(t).check(t)
}

// TestOfflineAdminRequeued is the proof that an admin going offline (or
// expiring) has all of their conversations back in the backlog and handed
// out again.
func TestOfflineAdminRequeued(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 2, 10)
	for i := range 10 {
		_, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
	}
	s := c.snapshot(t)
	require.Len(t, s.sets["a1"], 5)
	mine := s.sets["a1"]
	sub, err := c.Subscribe(ctx, EventAssigned)
	require.NoError(t, err)
	defer sub.Close()

	require.NoError(t, c.Availability().Set(ctx, "a1", presence.Offline))
	r, err := c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, Reconciled{Requeued: 5, Assigned: 5}, r)
	s = c.snapshot(t)
	assert.Empty(t, s.sets["a1"])
	assert.Len(t, s.sets["a2"], 10)
	assigned, backlog := s.check(t)
	assert.Equal(t, 10, assigned)
	assert.Zero(t, backlog)
	evs := collect(t, sub, 300*time.Millisecond)
	var back, again []string
	for _, ev := range evs {
		switch {
		case ev.Admin == "" && ev.Previous == "a1" && ev.Reason == "offline":
			back = append(back, ev.Conversation)
		case ev.Admin == "a2" && ev.Reason == "backlog":
			again = append(again, ev.Conversation)
		}
	}
	assert.ElementsMatch(t, mine, back, "every conversation of a1 went back to the backlog")
	assert.ElementsMatch(t, mine, again, "and was handed out again")

	// Nobody else has room: they wait in the backlog, in arrival order.
	require.NoError(t, c.Availability().Set(ctx, "a1", presence.Online))
	_, err = c.Assign(ctx, "c0", "a1")
	require.NoError(t, err)
	require.NoError(t, c.Availability().Set(ctx, "a2", presence.Offline))
	_, err = c.Reconcile(ctx)
	require.NoError(t, err)
	s = c.snapshot(t)
	assert.Len(t, s.sets["a1"], 10)
	assert.Empty(t, s.sets["a2"])
	assigned, backlog = s.check(t)
	assert.Equal(t, 10, assigned+backlog)
}

func TestAvailabilityExpiryRequeues(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 2, 10)
	for i := range 4 {
		_, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
	}
	// a1 stops refreshing their availability: the key expires (here after
	// 300 ms instead of 30 min), with nobody setting it offline.
	k, err := c.Availability().Key("a1")
	require.NoError(t, err)
	require.NoError(t, e.Client.PExpire(ctx, k, 300*time.Millisecond).Err())
	e.Advance(400 * time.Millisecond)
	_, err = c.Open(ctx, "c4", Normal) // any routing call acts on it
	require.NoError(t, err)
	s := c.snapshot(t)
	assert.Empty(t, s.sets["a1"])
	assert.Len(t, s.sets["a2"], 5)
	s.check(t)
}

// TestPriorityOrdering is the proof of the queues' order: urgent before
// high before normal before low whatever their age, oldest first within
// a priority, ties in one millisecond included.
func TestPriorityOrdering(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	// Oldest first: lows, then normals, highs, urgents; interleaved so that
	// a priority's conversations are not contiguous in time. On miniredis
	// the clock stands still: every conversation arrives in the same
	// millisecond.
	order := []Priority{Low, Normal, Low, High, Urgent, Normal, Low, Urgent, High, Normal}
	want := map[Priority][]string{}
	for i, p := range order {
		id := fmt.Sprintf("c%02d", 99-i) // IDs sort against arrival order
		_, err := c.Open(ctx, id, p)
		require.NoError(t, err)
		_, err = c.Append(ctx, id, Message{Content: "help", SenderRole: User})
		require.NoError(t, err)
		want[p] = append(want[p], id)
	}
	var expect []string
	for _, p := range []Priority{Urgent, High, Normal, Low} {
		expect = append(expect, want[p]...)
	}
	for name, list := range map[string]func(context.Context, int) ([]Waiting, error){"backlog": c.Backlog, "unread": c.Unread} {
		w, err := list(ctx, 100)
		require.NoError(t, err)
		var got []string
		for _, x := range w {
			got = append(got, x.Conversation)
		}
		assert.Equal(t, expect, got, name)
		if e.Mini != nil {
			for _, x := range w {
				assert.Equal(t, e.Now().UnixMilli(), x.Since.UnixMilli(), "one millisecond")
			}
		}
		// The seed's reader: ZREVRANGE ... 0 -1.
		raw, err := e.Client.ZRevRange(ctx, map[string]string{"backlog": c.global[3], "unread": c.global[2]}[name], 0, -1).Result()
		require.NoError(t, err)
		assert.Equal(t, expect, raw, name+" as the seed reads it")
	}

	// The backlog is handed out in that order.
	require.NoError(t, c.AddAdmin(ctx, "a1", 1))
	require.NoError(t, c.Availability().Set(ctx, "a1", presence.Online))
	var served []string
	for range order {
		_, err := c.Reconcile(ctx)
		require.NoError(t, err)
		got, err := c.Assignments(ctx, "a1")
		require.NoError(t, err)
		require.Len(t, got, 1)
		served = append(served, got[0])
		_, err = c.Resolve(ctx, got[0])
		require.NoError(t, err)
	}
	assert.Equal(t, expect, served)

	// SetPriority keeps the age: the old low one, made urgent, goes first
	// among the urgents.
	require.NoError(t, c.Availability().Set(ctx, "a1", presence.Busy))
	for i, p := range order {
		_, err := c.Open(ctx, fmt.Sprintf("d%02d", i), p)
		require.NoError(t, err)
	}
	prev, err := c.SetPriority(ctx, "d00", Urgent)
	require.NoError(t, err)
	assert.Equal(t, Low, prev)
	w, err := c.Backlog(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, "d00", w[0].Conversation)
	assert.Equal(t, Urgent, w[0].Priority)
	assert.Equal(t, "d04", w[1].Conversation)
}

func TestScoreEncodingIsExact(t *testing.T) {
	maxStamp := int64(bandSize - 1)
	for b := range 4 {
		for _, stamp := range []int64{1, 2, time.Now().UnixMilli() * stampsPerMs, maxStamp - 1, maxStamp} {
			n := int64(b)*bandSize + (bandSize - 1 - stamp)
			f := float64(n)
			require.Equal(t, n, int64(f), "exact in a double")
			p, _, ok := decodeScore(f)
			require.True(t, ok)
			require.Equal(t, bands[b], p)
			// One stamp later (younger) is exactly one lower.
			if stamp < maxStamp {
				require.Less(t, float64(n-1), f)
			}
			// The oldest of a band stays below the youngest of the next.
			if b < 3 {
				require.Less(t, f, float64(int64(b+1)*bandSize))
			}
		}
	}
	for _, bad := range []float64{-1, maxScore + 1, 1.5, 1 << 60} {
		_, _, ok := decodeScore(bad)
		assert.False(t, ok, "%v", bad)
	}
	assert.Equal(t, 1000, Urgent.Weight())
	assert.Equal(t, 10, Priority("").Weight())
}

func TestExpiryIsPerConversation(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ttl := 2 * time.Second
	c := newChat(t, e, WithConversationTTL(ttl))
	team(t, c, 1, 10)
	for _, id := range []string{"idle", "busy"} {
		_, err := c.Open(ctx, id, Normal)
		require.NoError(t, err)
	}
	e.Advance(1200 * time.Millisecond)
	_, err := c.Append(ctx, "busy", Message{Content: "still here", SenderRole: User})
	require.NoError(t, err)
	e.Advance(1200 * time.Millisecond)
	// "idle" is 2.4 s without activity, "busy" 1.2 s: the seed's set TTL
	// would drop both at once; here only "idle" goes.
	_, err = c.Conversation(ctx, "idle")
	assert.ErrorIs(t, err, ErrNotFound)
	r, err := c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, r.Expired)
	got, err := c.Assignments(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, []string{"busy"}, got)
	q, err := c.adminKeys("test", "a1")
	require.NoError(t, err)
	pttl, err := e.Client.PTTL(ctx, q[1]).Result()
	require.NoError(t, err)
	assert.Greater(t, pttl, 500*time.Millisecond, "the set lives as long as its live conversation")
	c.snapshot(t).check(t)
	_, err = c.Append(ctx, "idle", Message{Content: "late", SenderRole: User})
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestResolveFreesAPlace(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 1, 1)
	for _, id := range []string{"x", "y"} {
		_, err := c.Open(ctx, id, Normal)
		require.NoError(t, err)
	}
	admin, err := c.Resolve(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, "a1", admin)
	got, err := c.Assignments(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, []string{"y"}, got, "the backlog moved into the freed place")
	_, err = c.Resolve(ctx, "x")
	assert.ErrorIs(t, err, ErrNotFound)
	d, err := c.Dashboard(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, 1, d.ResolvedToday)
	assert.Equal(t, 1, d.AssignedToMe)
	assert.Equal(t, 1, d.TotalActive)
	// Reopening a resolved conversation opens it anew.
	a, err := c.Open(ctx, "x", Normal)
	require.NoError(t, err)
	assert.True(t, a.Opened)
	assert.Equal(t, "", a.Admin)
}

func TestMessages(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithMessageCache(100))
	team(t, c, 1, 10)
	_, err := c.Open(ctx, "456", High)
	require.NoError(t, err)
	for i := 1; i <= 105; i++ {
		m, err := c.Append(ctx, "456", Message{Content: fmt.Sprint("m", i), SenderRole: User, SenderID: "u1"})
		require.NoError(t, err)
		assert.EqualValues(t, i, m.ID)
	}
	mk, err := c.convKey("test", messagesKey, "456")
	require.NoError(t, err)
	n, err := e.Client.LLen(ctx, mk).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 100, n, "capped at 100")
	pttl, err := e.Client.PTTL(ctx, mk).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Seconds(), pttl.Seconds(), 5)

	page, err := c.Messages(ctx, "456", 20, 0)
	require.NoError(t, err)
	require.Len(t, page, 20)
	assert.EqualValues(t, 105, page[0].ID)
	assert.Equal(t, "m105", page[0].Content)
	assert.EqualValues(t, 86, page[19].ID)
	next, err := c.Messages(ctx, "456", 20, page[19].ID)
	require.NoError(t, err)
	assert.EqualValues(t, 85, next[0].ID)
	// New messages do not shift a page taken with Before.
	_, err = c.Append(ctx, "456", Message{Content: "new", SenderRole: User})
	require.NoError(t, err)
	again, err := c.Messages(ctx, "456", 20, page[19].ID)
	require.NoError(t, err)
	assert.Equal(t, next, again)
	tail, err := c.Messages(ctx, "456", 50, 10)
	require.NoError(t, err)
	assert.Len(t, tail, 3, "9, 8 and 7: the 100 newest of 106")
	tail, err = c.Messages(ctx, "456", 50, 7)
	require.NoError(t, err)
	assert.Empty(t, tail, "IDs below 7 were trimmed")

	// The seed's JSON, byte for byte in shape.
	head, err := e.Client.LIndex(ctx, mk, 0).Result()
	require.NoError(t, err)
	assert.Regexp(t, `^\{"id":106,"content":"new","sender_role":"user","timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"\}$`, head)
	none, err := c.Messages(ctx, "nothing", 10, 0)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestUnreadAndResponseTime(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 1, 10)
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	_, err = c.Append(ctx, "c1", Message{Content: "hi", SenderRole: User})
	require.NoError(t, err)
	e.Advance(1500 * time.Millisecond)
	_, err = c.Append(ctx, "c1", Message{Content: "anyone?", SenderRole: User})
	require.NoError(t, err)
	cv, err := c.Conversation(ctx, "c1")
	require.NoError(t, err)
	assert.True(t, cv.Unread)
	assert.False(t, cv.AwaitingReply.IsZero())
	d, err := c.Dashboard(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, 1, d.UnreadCount)

	was, err := c.MarkRead(ctx, "c1")
	require.NoError(t, err)
	assert.True(t, was)
	was, err = c.MarkRead(ctx, "c1")
	require.NoError(t, err)
	assert.False(t, was)
	d, err = c.Dashboard(ctx, "a1")
	require.NoError(t, err)
	assert.False(t, d.Cached, "MarkRead deleted the stale cache")
	assert.Equal(t, 0, d.UnreadCount)

	e.Advance(1500 * time.Millisecond)
	_, err = c.Append(ctx, "c1", Message{Content: "hello", SenderRole: Admin, SenderID: "a1"})
	require.NoError(t, err)
	cv, err = c.Conversation(ctx, "c1")
	require.NoError(t, err)
	assert.True(t, cv.AwaitingReply.IsZero())
	d, err = c.Dashboard(ctx, "a1")
	require.NoError(t, err)
	// Waited from the first unanswered message: 3 s (0.05 min, "0.1" at
	// one decimal).
	assert.Equal(t, 6*time.Second, d.AvgResponse)

	// A system message changes neither.
	_, err = c.Append(ctx, "c1", Message{Content: "bot", SenderRole: System})
	require.NoError(t, err)
	u, err := c.Unread(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, u)
}

func TestDashboardComputedOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 2, 10)
	for i := range 3 {
		_, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
	}
	computed := make(chan bool, 50)
	errs := make(chan error, 50)
	for range 50 {
		go func() {
			d, err := c.Dashboard(ctx, "a1")
			errs <- err
			computed <- !d.Cached
		}()
	}
	n := 0
	for range 50 {
		require.NoError(t, <-errs)
		if <-computed {
			n++
		}
	}
	assert.Equal(t, 1, n, "one computation across 50 concurrent readers")
	d, err := c.Dashboard(ctx, "a1")
	require.NoError(t, err)
	assert.True(t, d.Cached)
	assert.Equal(t, Dashboard{TotalActive: 3, AssignedToMe: 2, AvgResponse: 0, Cached: true, ComputedAt: d.ComputedAt}, d)
	dk, err := c.adminKeys("test", "a1")
	require.NoError(t, err)
	fields, err := e.Client.HGetAll(ctx, dk[3]).Result()
	require.NoError(t, err)
	assert.Equal(t, "0.0", fields["avg_response_time"])
	assert.Equal(t, "2", fields["assigned_to_me"])
	pttl, err := e.Client.PTTL(ctx, dk[3]).Result()
	require.NoError(t, err)
	assert.InDelta(t, defaultDashboardTTL.Seconds(), pttl.Seconds(), 5)

	// A new conversation changes every admin's total: caches go.
	_, err = c.Open(ctx, "c3", Normal)
	require.NoError(t, err)
	d, err = c.Dashboard(ctx, "a1")
	require.NoError(t, err)
	assert.False(t, d.Cached)
	assert.Equal(t, 4, d.TotalActive)
}

func TestEvents(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 1, 10)
	sub, err := c.Subscribe(ctx)
	require.NoError(t, err)
	defer sub.Close()
	_, err = c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	_, err = c.Append(ctx, "c1", Message{Content: "hi", SenderRole: User, SenderID: "u"})
	require.NoError(t, err)
	_, err = c.Append(ctx, "c1", Message{Content: "hello", SenderRole: Admin})
	require.NoError(t, err)
	_, err = c.Resolve(ctx, "c1")
	require.NoError(t, err)
	evs := collect(t, sub, 300*time.Millisecond)
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s %s %s<-%s %s", ev.Kind, ev.Conversation, ev.Admin, ev.Previous, ev.Reason))
		assert.False(t, ev.At.IsZero())
	}
	assert.Equal(t, []string{
		"assigned c1 <- opened",
		"assigned c1 a1<- backlog",
		"message c1 a1<- user",
		"read c1 a1<- reply",
		"message c1 a1<- admin",
		"resolved c1 a1<- resolved",
	}, got)
	require.NotNil(t, evs[2].Message)
	assert.Equal(t, "hi", evs[2].Message.Content)
	assert.Equal(t, "u", evs[2].Message.SenderID)

	// Only the kinds asked for.
	only, err := c.Subscribe(ctx, EventResolved)
	require.NoError(t, err)
	defer only.Close()
	_, err = c.Open(ctx, "c2", Normal)
	require.NoError(t, err)
	_, err = c.Resolve(ctx, "c2")
	require.NoError(t, err)
	evs = collect(t, only, 300*time.Millisecond)
	require.Len(t, evs, 1)
	assert.Equal(t, EventResolved, evs[0].Kind)

	// A foreign message is reported, naming the channel, and skipped.
	require.NoError(t, isub.Publish(ctx, e.Client, c.chans[2], "garbage").Err())
	_, err = only.Next(ctx)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), c.chans[2])
	_, err = c.Subscribe(ctx, "typing")
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestRoster(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	other := newChat(t, e) // another instance, with a stale roster
	team(t, c, 2, 2)
	for i := range 4 {
		_, err := c.Open(ctx, fmt.Sprint("c", i), Normal)
		require.NoError(t, err)
	}
	// The other instance learns the roster from its first script.
	a, err := other.Open(ctx, "c4", Normal)
	require.NoError(t, err)
	assert.Equal(t, "", a.Admin, "a1 and a2 are full")
	assert.Equal(t, []string{"a1", "a2"}, other.current().ids)

	// Raising a capacity hands the backlog out at once.
	require.NoError(t, c.AddAdmin(ctx, "a1", 3))
	got, err := c.Assignments(ctx, "a1")
	require.NoError(t, err)
	assert.Len(t, got, 3)
	ad, err := c.Admins(ctx)
	require.NoError(t, err)
	assert.Equal(t, []AdminState{{ID: "a1", Capacity: 3, Availability: presence.Online, Assigned: 3},
		{ID: "a2", Capacity: 2, Availability: presence.Online, Assigned: 2}}, ad)

	// Removing a2 requeues their conversations; a3 (added from the stale
	// instance) takes them.
	require.NoError(t, other.AddAdmin(ctx, "a3", 0))
	require.NoError(t, c.Availability().Set(ctx, "a3", presence.Online))
	require.NoError(t, c.RemoveAdmin(ctx, "a2"))
	s := c.snapshot(t)
	assert.NotContains(t, s.sets, "a2")
	assert.Len(t, s.sets["a3"], 2)
	assigned, backlog := s.check(t)
	assert.Equal(t, 5, assigned)
	assert.Zero(t, backlog)
	require.NoError(t, c.RemoveAdmin(ctx, "a2"), "removing twice changes nothing")
	ad, err = other.Admins(ctx)
	require.NoError(t, err)
	assert.Len(t, ad, 2)
	assert.Equal(t, defaultCapacity, ad[1].Capacity)
}

func TestRosterBound(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	pipe := e.Client.Pipeline()
	for i := range maxAdmins {
		pipe.HSet(ctx, c.global[4], fmt.Sprintf("x%03d", i), 1)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	err = c.AddAdmin(ctx, "one-more", 1)
	assert.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, c.AddAdmin(ctx, "x000", 2), "changing a capacity is not adding")
	// A routing call at the maximum: 100 admins, 406 keys, one slot.
	_, err = c.Open(ctx, "c", Normal)
	require.NoError(t, err)
	n, err := e.Client.HLen(ctx, c.global[4]).Result()
	require.NoError(t, err)
	assert.EqualValues(t, maxAdmins, n)
}

func TestTypingAndAvailabilityArePresences(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithTag("inbox-7"))
	ok, err := c.Typing().Start(ctx, "456", "u1", "john_doe")
	require.NoError(t, err)
	assert.True(t, ok)
	ty, err := c.Typing().Typers(ctx, "456")
	require.NoError(t, err)
	require.Len(t, ty, 1)
	assert.Equal(t, "john_doe", ty[0].Username)
	k, err := c.Availability().Key("123")
	require.NoError(t, err)
	assert.Equal(t, e.NS.Prefix+"admin:{inbox-7}:123:presence", k)
	// The one availability: presence's own reader agrees with chat's.
	tr, err := presence.New(e.Client, presence.WithNamespace(e.NS), presence.WithAvailabilityTag("inbox-7"))
	require.NoError(t, err)
	av := tr.Availability()
	require.NoError(t, c.Availability().Set(ctx, "123", presence.Busy))
	s, err := av.Get(ctx, "123")
	require.NoError(t, err)
	assert.Equal(t, presence.Busy, s)
	require.NoError(t, c.AddAdmin(ctx, "123", 1))
	ad, err := c.Admins(ctx)
	require.NoError(t, err)
	assert.Equal(t, presence.Busy, ad[0].Availability)
}

// TestOneSlotPerDeployment checks with the library's CRC16 (miniredis's
// CLUSTER KEYSLOT is fake) that a routing call's keys, presence's
// availability included, share one slot, and that two deployments can
// live on different slots.
func TestOneSlotPerDeployment(t *testing.T) {
	e := harness.New(t)
	c := newChat(t, e)
	q, err := c.adminKeys("test", "42")
	require.NoError(t, err)
	rk, err := c.convKey("test", requestsKey, "456")
	require.NoError(t, err)
	mk, err := c.convKey("test", messagesKey, "456")
	require.NoError(t, err)
	all := append(append(append([]string{}, c.global...), q...), rk, mk)
	assert.True(t, keys.SameSlot(all...), "%v", all)
	other := newChat(t, e, WithTag("inbox-2"))
	assert.NotEqual(t, keys.Slot(c.global[0]), keys.Slot(other.global[0]))
}

func TestOneRoundTripEach(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	trips := harness.CountTrips(rdb)
	c := newChatOn(t, e, rdb)
	team(t, c, 2, 10)
	ops := []struct {
		name string
		f    func() error
	}{
		{"open", func() error { _, err := c.Open(ctx, "c1", Normal); return err }},
		{"append", func() error { _, err := c.Append(ctx, "c1", Message{Content: "x", SenderRole: User}); return err }},
		{"messages", func() error { _, err := c.Messages(ctx, "c1", 10, 0); return err }},
		{"mark read", func() error { _, err := c.MarkRead(ctx, "c1"); return err }},
		{"dashboard", func() error { _, err := c.Dashboard(ctx, "a1"); return err }},
		{"unread", func() error { _, err := c.Unread(ctx, 10); return err }},
		{"assign", func() error { _, err := c.Assign(ctx, "c1", "a2"); return err }},
		{"unassign", func() error { _, err := c.Unassign(ctx, "c1"); return err }},
		{"resolve", func() error { _, err := c.Resolve(ctx, "c1"); return err }},
		{"reconcile", func() error { _, err := c.Reconcile(ctx); return err }},
	}
	for _, op := range ops {
		// Load every script first: a script's first run on a server is
		// EVALSHA, then EVAL.
		require.NoError(t, op.f(), op.name)
	}
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	for _, op := range ops {
		trips.Reset()
		require.NoError(t, op.f(), op.name)
		assert.EqualValues(t, 1, trips.Total(), op.name)
	}
	// A client that has not seen the roster: two round trips, once.
	fresh := newChatOn(t, e, rdb)
	trips.Reset()
	_, err = fresh.Open(ctx, "c2", Normal)
	require.NoError(t, err)
	assert.EqualValues(t, 2, trips.Total())
	trips.Reset()
	_, err = fresh.Open(ctx, "c3", Normal)
	require.NoError(t, err)
	assert.EqualValues(t, 1, trips.Total())
}

func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c := newChatOn(t, e, pc)
	team(t, c, 1, 1)
	p.Stall()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	for name, f := range map[string]func() error{
		"open":    func() error { _, err := c.Open(short, "c1", Normal); return err },
		"resolve": func() error { _, err := c.Resolve(short, "c1"); return err },
		"assign":  func() error { _, err := c.Assign(short, "c1", "a1"); return err },
		"append":  func() error { _, err := c.Append(short, "c1", Message{Content: "x", SenderRole: User}); return err },
	} {
		err := f()
		require.Error(t, err, name)
		for _, s := range []error{ErrNotFound, ErrFull, ErrUnavailable, ErrUnknownAdmin, ErrNotAssigned, ErrInvalid, keys.ErrCorrupt} {
			assert.False(t, errors.Is(err, s), "%s: %v is %v", name, err, s)
		}
		assert.ErrorIs(t, err, context.DeadlineExceeded, name)
	}
	p.Resume()
}

// TestStaleRosterNeverLeavesAGhost: an instance that has not seen the
// roster meets an expired conversation in a script that does not check
// the roster (Append): it asks for the roster before dropping it, so the
// conversation leaves its admin's set and does not hold a place there.
func TestStaleRosterNeverLeavesAGhost(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithConversationTTL(time.Second))
	team(t, c, 1, 2)
	_, err := c.Open(ctx, "old", Normal)
	require.NoError(t, err)
	e.Advance(600 * time.Millisecond)
	_, err = c.Open(ctx, "busy", Normal) // keeps a1's set alive
	require.NoError(t, err)
	e.Advance(600 * time.Millisecond)
	fresh := newChat(t, e, WithConversationTTL(time.Second))
	_, err = fresh.Append(ctx, "old", Message{Content: "late", SenderRole: User})
	assert.ErrorIs(t, err, ErrNotFound)
	got, err := c.Assignments(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, []string{"busy"}, got)
	a, err := c.Open(ctx, "new", Normal)
	require.NoError(t, err)
	assert.Equal(t, "a1", a.Admin, "the place is free")
}

// TestUnreadSkipsMembersWithoutState: a member of the unread queue or the
// backlog with no state (another writer's, or one a routing call has not
// repaired yet) is not listed: its score is not one this package wrote.
func TestUnreadSkipsMembersWithoutState(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 1, 10)
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	_, err = c.Append(ctx, "c1", Message{Content: "hi", SenderRole: User})
	require.NoError(t, err)
	now := float64(e.Now().UnixMilli())
	for _, k := range []string{c.global[2], c.global[3]} {
		require.NoError(t, e.Client.ZAdd(ctx, k, redis.Z{Score: 100 + now, Member: "ghost"}).Err())
	}
	require.NoError(t, e.Client.ZAdd(ctx, c.global[1], redis.Z{Score: now, Member: "ghost"}).Err())
	u, err := c.Unread(ctx, 10)
	require.NoError(t, err)
	require.Len(t, u, 1)
	assert.Equal(t, "c1", u[0].Conversation)
	b, err := c.Backlog(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, b)
}
