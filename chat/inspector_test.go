package chat

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// newInspectorOn returns an Inspector of e's namespace over rdb.
func newInspectorOn(t testing.TB, e *harness.Env, rdb redis.UniversalClient, opts ...Option) *Inspector {
	t.Helper()
	in, err := NewInspector(rdb, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return in
}

// NewInspector checks the client and the options as New does.
func TestNewInspector(t *testing.T) {
	e := harness.New(t)
	_, err := NewInspector(nil)
	require.ErrorIs(t, err, ErrInvalid)
	noDeadlines := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = noDeadlines.Close() })
	_, err = NewInspector(noDeadlines)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithTag(""))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithCapacity(0)) // refused by New too
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "new inspector")
	in, err := NewInspector(e.Client, WithNamespace(e.NS), WithStrategy(RoundRobin), WithCapacity(3), WithMessageCache(5))
	require.NoError(t, err, "options that mean nothing to reads are accepted")
	v, err := in.ReadView(e.Ctx(), 1)
	require.NoError(t, err)
	require.Equal(t, View{Admins: []AdminState{}, Unread: []Waiting{}, Backlog: []Waiting{}}, v)
}

// Inspector.ReadView reads what Admins, Unread and Backlog read, in one
// pipeline (one round trip, on a cluster too: the deployment's keys
// share a slot), follows a roster that changed under it, and validates
// as they do.
func TestReadView(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	stale := newInspectorOn(t, e, e.Client) // knows no admin: its roster changes under it
	team(t, c, 2, 1)
	for i, p := range []Priority{Low, Urgent, Normal, High, Normal} {
		id := fmt.Sprintf("c%d", i)
		_, err := c.Open(ctx, id, p)
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = c.Append(ctx, id, Message{Content: "help", SenderRole: User})
			require.NoError(t, err)
		}
	}
	admins, err := c.Admins(ctx)
	require.NoError(t, err)
	require.Len(t, admins, 2)
	unread, err := c.Unread(ctx, 2)
	require.NoError(t, err)
	require.Len(t, unread, 2)
	backlog, err := c.Backlog(ctx, 2)
	require.NoError(t, err)
	require.Len(t, backlog, 2)
	want := View{Admins: admins, Unread: unread, Backlog: backlog}

	v, err := stale.ReadView(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, want, v)

	fresh := e.FreshClient()
	trips := harness.CountTrips(fresh)
	rc := newInspectorOn(t, e, fresh)
	for range 2 { // the first round learns the roster
		trips.Reset()
		v, err = rc.ReadView(ctx, 2)
		require.NoError(t, err)
		require.Equal(t, want, v)
	}
	require.Equal(t, int64(1), trips.Total(), "one pipeline")

	// A part that fails leaves the others read.
	require.NoError(t, e.Client.Del(ctx, c.global[3]).Err())
	require.NoError(t, e.Client.Set(ctx, c.global[3], "x", time.Minute).Err())
	in := newInspectorOn(t, e, e.Client)
	v, err = in.ReadView(ctx, 2)
	require.ErrorContains(t, err, c.global[3])
	require.Equal(t, View{Admins: admins, Unread: unread}, v)

	_, err = in.ReadView(ctx, 0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = in.ReadView(ctx, maxPage+1)
	require.ErrorIs(t, err, ErrInvalid)
}
