package chat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/presence"
)

// lossy is a Chat whose client reaches Redis through a fault proxy
// (go-redis defaults: a command whose connection breaks is sent again),
// beside a Chat on the test's own client that observes.
type lossy struct {
	e   *harness.Env
	p   *harness.Proxy
	c   *Chat // through the proxy
	obs *Chat
	sub *Subscription
}

func newLossy(t *testing.T, admins, capacity int) *lossy {
	t.Helper()
	e := harness.New(t)
	pc, p := e.ProxyClient(nil)
	l := &lossy{e: e, p: p, c: newChatOn(t, e, pc), obs: newChat(t, e)}
	team(t, l.obs, admins, capacity)
	_, err := l.c.Admins(e.Ctx()) // the proxied client knows the roster
	require.NoError(t, err)
	l.sub, err = l.obs.Subscribe(e.Ctx())
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

func (l *lossy) lost(t *testing.T) {
	t.Helper()
	assert.Zero(t, l.p.Pending(), "the armed loss was used")
	assert.EqualValues(t, 1, l.p.Lost(), "one reply lost")
}

// events returns the events published since the last call, as
// "kind conversation admin<-previous reason".
func (l *lossy) events(t *testing.T) []string {
	var out []string
	for _, ev := range collect(t, l.sub, 200*time.Millisecond) {
		out = append(out, string(ev.Kind)+" "+ev.Conversation+" "+ev.Admin+"<-"+ev.Previous+" "+ev.Reason)
	}
	return out
}

// Each test loses the reply of one request after the server ran it; the
// resend must report the first outcome and change nothing more.

func TestReplayOpen(t *testing.T) {
	l := newLossy(t, 1, 10)
	ctx := l.e.Ctx()
	l.lose(t, openOp)
	a, err := l.c.Open(ctx, "c1", High)
	require.NoError(t, err)
	l.lost(t)
	assert.Equal(t, Assignment{Conversation: "c1", Admin: "a1", Opened: true}, a, "not \"open already\"")
	assert.Equal(t, []string{"assigned c1 <- opened", "assigned c1 a1<- backlog"}, l.events(t), "published once")
	assigned, backlog := l.obs.snapshot(t).check(t)
	assert.Equal(t, 1, assigned+backlog)
}

func TestReplayAssignAndTransfer(t *testing.T) {
	l := newLossy(t, 2, 10)
	ctx := l.e.Ctx()
	_, err := l.obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	l.events(t)
	l.lose(t, moveOp)
	a, err := l.c.Assign(ctx, "c1", "a2")
	require.NoError(t, err)
	l.lost(t)
	assert.Equal(t, Assignment{Conversation: "c1", Admin: "a2", Previous: "a1"}, a)
	assert.Equal(t, []string{"assigned c1 a2<-a1 explicit"}, l.events(t))

	l.lose(t, moveOp)
	a, err = l.c.Transfer(ctx, "c1", "a2", "a1")
	require.NoError(t, err, "a resend would find c1 with a1, not a2")
	// The proxy counts losses across the test.
	assert.EqualValues(t, 2, l.p.Lost())
	assert.Equal(t, Assignment{Conversation: "c1", Admin: "a1", Previous: "a2"}, a)
	assert.Equal(t, []string{"assigned c1 a1<-a2 transfer"}, l.events(t))
	l.obs.snapshot(t).check(t)
}

func TestReplayUnassign(t *testing.T) {
	l := newLossy(t, 2, 10)
	ctx := l.e.Ctx()
	_, err := l.obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	l.events(t)
	l.lose(t, unassignOp)
	a, err := l.c.Unassign(ctx, "c1")
	require.NoError(t, err)
	l.lost(t)
	// A second run would have unassigned it from a2 and given it to a1.
	assert.Equal(t, Assignment{Conversation: "c1", Admin: "a2", Previous: "a1"}, a)
	cv, err := l.obs.Conversation(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, "a2", cv.Admin)
	assert.Equal(t, []string{"assigned c1 <-a1 unassigned", "assigned c1 a2<- backlog"}, l.events(t))
}

func TestReplayResolve(t *testing.T) {
	l := newLossy(t, 1, 10)
	ctx := l.e.Ctx()
	_, err := l.obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	l.events(t)
	l.lose(t, resolveOp)
	admin, err := l.c.Resolve(ctx, "c1")
	require.NoError(t, err, "not ErrNotFound")
	l.lost(t)
	assert.Equal(t, "a1", admin)
	d, err := l.obs.Dashboard(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, 1, d.ResolvedToday, "counted once")
	assert.Equal(t, []string{"resolved c1 a1<- resolved"}, l.events(t))
}

func TestReplaySetPriority(t *testing.T) {
	l := newLossy(t, 0, 10)
	ctx := l.e.Ctx()
	_, err := l.obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	l.lose(t, priorityOp)
	prev, err := l.c.SetPriority(ctx, "c1", Urgent)
	require.NoError(t, err)
	l.lost(t)
	assert.Equal(t, Normal, prev, "not the urgent the first run set")
}

func TestReplayAppend(t *testing.T) {
	l := newLossy(t, 1, 10)
	ctx := l.e.Ctx()
	_, err := l.obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	l.events(t)
	l.lose(t, appendOp)
	m, err := l.c.Append(ctx, "c1", Message{Content: "once", SenderRole: User})
	require.NoError(t, err)
	l.lost(t)
	assert.EqualValues(t, 1, m.ID)
	page, err := l.obs.Messages(ctx, "c1", 10, 0)
	require.NoError(t, err)
	require.Len(t, page, 1, "cached once")
	assert.Equal(t, m.Timestamp, page[0].Timestamp)
	assert.Equal(t, []string{"message c1 a1<- user"}, l.events(t))
}

func TestReplayMarkRead(t *testing.T) {
	l := newLossy(t, 1, 10)
	ctx := l.e.Ctx()
	_, err := l.obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	_, err = l.obs.Append(ctx, "c1", Message{Content: "?", SenderRole: User})
	require.NoError(t, err)
	l.events(t)
	l.lose(t, readOp)
	was, err := l.c.MarkRead(ctx, "c1")
	require.NoError(t, err)
	l.lost(t)
	assert.True(t, was, "the first run's answer")
	assert.Equal(t, []string{"read c1 a1<- read"}, l.events(t))
}

func TestReplayRosterAndReconcile(t *testing.T) {
	l := newLossy(t, 1, 1)
	ctx := l.e.Ctx()
	for _, id := range []string{"c1", "c2"} {
		_, err := l.obs.Open(ctx, id, Normal)
		require.NoError(t, err)
	}
	l.lose(t, addAdminOp)
	require.NoError(t, l.c.AddAdmin(ctx, "a2", 5))
	l.lost(t)
	require.NoError(t, l.obs.Availability().Set(ctx, "a2", presence.Online))
	l.lose(t, reconcileOp)
	_, err := l.c.Reconcile(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, l.p.Lost())
	l.lose(t, removeAdminOp)
	require.NoError(t, l.c.RemoveAdmin(ctx, "a1"))
	assert.EqualValues(t, 3, l.p.Lost())
	s := l.obs.snapshot(t)
	assert.Equal(t, []string{"c1", "c2"}, s.sets["a2"])
	assert.NotContains(t, s.sets, "a1")
	s.check(t)
}
