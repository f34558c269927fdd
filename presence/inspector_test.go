package presence_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/presence"
)

// newInspector returns an Inspector of e's namespace with opts.
func newInspector(t *testing.T, e *harness.Env, opts ...presence.Option) *presence.Inspector {
	t.Helper()
	in, err := presence.NewInspector(e.Client, append([]presence.Option{presence.WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return in
}

// NewInspector checks the client and the options as New does.
func TestNewInspector(t *testing.T) {
	e := harness.New(t)
	_, err := presence.NewInspector(nil)
	require.ErrorIs(t, err, presence.ErrInvalid)
	noDeadlines := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = noDeadlines.Close() })
	_, err = presence.NewInspector(noDeadlines)
	require.ErrorIs(t, err, presence.ErrInvalid)
	_, err = presence.NewInspector(e.Client, presence.WithLayout(presence.Layout(9)))
	require.ErrorIs(t, err, presence.ErrInvalid)
	_, err = presence.NewInspector(e.Client, presence.WithMaxConnections(-1)) // refused by New too
	require.ErrorIs(t, err, presence.ErrInvalid)
	require.ErrorContains(t, err, "new inspector")
	_, err = presence.NewInspector(e.Client, presence.WithNamespace(e.NS), presence.WithAvailabilityTag("t"), presence.WithOccupancyInterval(0))
	require.NoError(t, err, "options that mean nothing to reads are accepted")
}

// Inspector.ReadView reads what OnlineNow, Get and Connections read, in
// one pipeline, and reports a part that fails with the others read.
func TestReadView(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		ctx := e.Ctx()
		tr := newTracker(t, e, l.opt())
		for _, u := range []string{"u3", "u1", "u2"} {
			_, err := tr.Connect(ctx, u, presence.Conn{ID: "c1", Metadata: web})
			require.NoError(t, err)
		}
		_, err := tr.Connect(ctx, "u1", presence.Conn{ID: "c2", Metadata: presence.Metadata{Device: "mobile"}})
		require.NoError(t, err)
		_, err = tr.Connect(ctx, "gone", presence.Conn{ID: "c1"})
		require.NoError(t, err)
		_, err = tr.Disconnect(ctx, "gone", "c1")
		require.NoError(t, err)

		online, err := tr.OnlineNow(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"u1", "u2", "u3"}, online)
		fresh := e.FreshClient()
		trips := harness.CountTrips(fresh)
		rt, err := presence.NewInspector(fresh, presence.WithNamespace(e.NS), l.opt())
		require.NoError(t, err)
		for _, user := range []string{"u1", "gone", "nobody"} {
			p, err := tr.Get(ctx, user)
			require.NoError(t, err)
			conns, err := tr.Connections(ctx, user)
			require.NoError(t, err)
			for range 2 { // the first loads the connections' script
				trips.Reset()
				v, err := rt.ReadView(ctx, user)
				require.NoError(t, err)
				require.Equal(t, presence.View{Online: []string{"u1", "u2", "u3"}, User: &p, Connections: conns}, v, user)
			}
			require.Equal(t, int64(1), trips.Total(), "one pipeline")
		}
		v, err := rt.ReadView(ctx, "")
		require.NoError(t, err)
		require.Equal(t, presence.View{Online: []string{"u1", "u2", "u3"}}, v)

		// A user's connections, in one pipeline.
		trips.Reset()
		v, err = rt.ReadView(ctx, "u1")
		require.NoError(t, err)
		require.Len(t, v.Connections, 2)
		require.Equal(t, int64(1), trips.Total(), "one pipeline")

		// Without the index, the user is still read.
		noIndex := newInspector(t, e, l.opt(), presence.WithoutOnlineIndex())
		v, err = noIndex.ReadView(ctx, "u1")
		require.ErrorIs(t, err, presence.ErrNoIndex)
		require.Empty(t, v.Online)
		require.NotNil(t, v.User)
		require.Equal(t, presence.Online, v.User.Status)
		require.Len(t, v.Connections, 2)

		_, err = newInspector(t, e, l.opt()).ReadView(ctx, "\xff")
		require.ErrorIs(t, err, presence.ErrInvalid)
	})
}
