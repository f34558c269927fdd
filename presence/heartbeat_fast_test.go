package presence

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// fastTimeRe matches the times a script writes (Unix ms), so that states
// written a few ms apart compare equal.
var fastTimeRe = regexp.MustCompile(`\d{13}(\.\d+)?`)

// heartbeatPaths is one tracker configuration with its heartbeat split
// in three: the Tracker (fast path, then the general heartbeat), the
// general heartbeat alone (without its head), and the fast path alone
// (answering "general" where it would fall through). The two test ops
// share the heartbeat's name, so the package's op list keeps its own.
type heartbeatPaths struct {
	fast, general *Tracker
	generalOp     *call.Op
	fastOnlyOp    *call.Op
}

func newHeartbeatPaths(t *testing.T, e1, e2 *harness.Env, opts ...Option) heartbeatPaths {
	t.Helper()
	fast, err := New(e1.Client, append([]Option{WithNamespace(e1.NS)}, opts...)...)
	require.NoError(t, err)
	general, err := New(e2.Client, append([]Option{WithNamespace(e2.NS)}, opts...)...)
	require.NoError(t, err)
	return heartbeatPaths{
		fast: fast, general: general,
		generalOp: pkg.Declare("heartbeat", heartbeatLua, userKeyTemplates, call.Uses(libLua, call.Batched, call.JSONStr), call.On(call.None, ErrUnknownConnection)),
		// the fast path, then "general" where it would fall through
		fastOnlyOp: pkg.Declare("heartbeat", "return {'ok', 'general'}", userKeyTemplates, call.Head(heartbeatFastLua)),
	}
}

// state is what a heartbeat leaves of user's keys, times masked.
func heartbeatState(t *testing.T, e *harness.Env, tr *Tracker, user string) string {
	t.Helper()
	ctx := e.Ctx()
	k, err := tr.userKeys("state", user)
	require.NoError(t, err)
	var out []string
	raw, err := e.Client.Get(ctx, k[0]).Result()
	if err != redis.Nil {
		require.NoError(t, err)
	}
	out = append(out, "presence "+raw)
	conns, err := e.Client.HGetAll(ctx, k[1]).Result()
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		if v, ok := conns[id]; ok {
			out = append(out, "conn "+id+" "+v)
		}
	}
	score, err := e.Client.ZScore(ctx, k[2], user).Result()
	if err != redis.Nil {
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("index %.2f", score-float64(int64(score))))
	}
	for i, name := range []string{"presence", "connections", "index"} {
		ttl, err := e.Client.PTTL(ctx, k[i]).Result()
		require.NoError(t, err)
		// TTLs to the second: the two runs are a few ms apart
		out = append(out, fmt.Sprintf("%s ttl %ds", name, (ttl+500*time.Millisecond)/time.Second))
	}
	return fastTimeRe.ReplaceAllString(strings.Join(out, "\n"), "N")
}

// The fast path writes exactly what the general heartbeat writes, in every
// case it takes, and leaves every other case to it before writing
// anything.
func TestHeartbeatFastPathMatchesGeneral(t *testing.T) {
	mobile := Metadata{Device: "mobile", UserAgent: "app/1.0"}
	web := Metadata{Device: "web", UserAgent: "Mozilla/5.0 (X11)", IP: "192.168.1.1", SocketID: "s1"}
	type step func(ctx context.Context, tr *Tracker) error
	connect := func(id string, md Metadata, activity string) step {
		return func(ctx context.Context, tr *Tracker) error {
			_, err := tr.Connect(ctx, "u", Conn{ID: id, Metadata: md, Activity: activity})
			return err
		}
	}
	status := func(s Status) step {
		return func(ctx context.Context, tr *Tracker) error { _, err := tr.SetStatus(ctx, "u", s); return err }
	}
	cases := []struct {
		name  string
		opts  []Option
		steps []step
		conn  string
		fast  bool
	}{
		{"one connection", nil, []step{connect("a", web, "")}, "a", true},
		{"two connections, activity", nil, []step{connect("a", web, "active"), connect("b", web, "")}, "a", true},
		{"the freshest device changes", nil, []step{connect("a", web, ""), connect("b", mobile, "typing")}, "a", true},
		{"away", nil, []step{connect("a", web, ""), status(Away)}, "a", true},
		{"busy, no index", []Option{WithoutOnlineIndex()}, []step{connect("a", web, ""), status(Busy)}, "a", true},
		{"compact", []Option{WithProfile(CompactProfile())}, []step{connect("a", web, ""), connect("b", mobile, "")}, "b", true},
		{"invisible", nil, []step{connect("a", web, ""), status(Invisible)}, "a", false},
		{"no device", nil, []step{connect("a", Metadata{UserAgent: "x"}, "")}, "a", false},
		{"a device to escape", nil, []step{connect("a", Metadata{Device: `we"b`}, "")}, "a", false},
		{"an activity to escape", nil, []step{connect("a", web, "ty\\ping")}, "a", false},
		{"unknown connection", nil, []step{connect("a", web, "")}, "z", false},
		{"single-key layout", []Option{WithLayout(LayoutSingleKey)}, []step{connect("a", web, "")}, "a", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e1, e2 := harness.New(t), harness.New(t)
			p := newHeartbeatPaths(t, e1, e2, c.opts...)
			for _, s := range c.steps {
				require.NoError(t, s(e1.Ctx(), p.fast))
				require.NoError(t, s(e2.Ctx(), p.general))
				// distinct lastSeen times: the freshest connection is
				// then the same in both namespaces
				e1.Advance(2 * time.Millisecond)
				e2.Advance(2 * time.Millisecond)
			}
			k1, err := p.fast.userKeys("test", "u")
			require.NoError(t, err)
			k2, err := p.general.userKeys("test", "u")
			require.NoError(t, err)
			general := func() (Result, error) {
				return result(p.general.run.Run(e2.Ctx(), p.generalOp, k2[:], p.general.args("u", c.conn, newRequestID())...))
			}
			// The fast path alone: it heartbeats, or writes nothing.
			before := heartbeatState(t, e1, p.fast, "u")
			rep, err := p.fast.run.Run(e1.Ctx(), p.fastOnlyOp, k1[:], p.fast.args("u", c.conn, newRequestID())...)
			require.NoError(t, err)
			taken := rep.Raw(0) != "general"
			assert.Equal(t, c.fast, taken, "fast path taken: %v", rep)
			var r1 Result
			var err1 error
			if taken {
				r1, err1 = result(rep, err)
			} else {
				assert.Equal(t, before, heartbeatState(t, e1, p.fast, "u"), "fell through before writing")
				r1, err1 = p.fast.Heartbeat(e1.Ctx(), "u", c.conn)
			}
			r2, err2 := general()
			assert.Equal(t, r2, r1)
			assert.Equal(t, err2 == nil, err1 == nil, "%v / %v", err1, err2)
			assert.Equal(t, heartbeatState(t, e2, p.general, "u"), heartbeatState(t, e1, p.fast, "u"))

			// And the Tracker's whole script, a moment later.
			e1.Advance(2 * time.Millisecond)
			e2.Advance(2 * time.Millisecond)
			r1, err1 = p.fast.Heartbeat(e1.Ctx(), "u", c.conn)
			r2, err2 = general()
			assert.Equal(t, r2, r1)
			assert.Equal(t, err2 == nil, err1 == nil, "%v / %v", err1, err2)
			assert.Equal(t, heartbeatState(t, e2, p.general, "u"), heartbeatState(t, e1, p.fast, "u"))
		})
	}
}

// A stale connection beside the live one is the general heartbeat's: it
// prunes it, and the fast path does not take it.
func TestHeartbeatFastPathLeavesPruning(t *testing.T) {
	e := harness.New(t)
	tr, err := New(e.Client, WithNamespace(e.NS), WithProfile(shortProfile))
	require.NoError(t, err)
	ctx := e.Ctx()
	_, err = tr.Connect(ctx, "u", Conn{ID: "a", Metadata: Metadata{Device: "web"}})
	require.NoError(t, err)
	ck, err := connsKey.Key(e.NS, "u")
	require.NoError(t, err)
	old := e.Now().Add(-2 * shortProfile.TTL).UnixMilli()
	require.NoError(t, e.Client.HSet(ctx, ck, "old", fmt.Sprintf(`{"connectedAt":%d,"lastSeen":%d,"metadata":{}}`, old, old)).Err())
	r, err := tr.Heartbeat(ctx, "u", "a")
	require.NoError(t, err)
	assert.Equal(t, Result{Connections: 1, Status: Online}, r)
	n, err := e.Client.HLen(ctx, ck).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the stale connection was pruned")
	raw, err := e.Client.Get(ctx, mustKey(t, e, presenceKey, "u")).Result()
	require.NoError(t, err)
	assert.Contains(t, raw, `"activeConnections":1`)
}

func mustKey(t *testing.T, e *harness.Env, tm *keys.Template, args ...string) string {
	t.Helper()
	k, err := tm.Key(e.NS, args...)
	require.NoError(t, err)
	return k
}
