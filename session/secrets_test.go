package session

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// sentLog records the arguments of every command a client sends: what
// MONITOR or SLOWLOG would show of this client's traffic.
type sentLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *sentLog) add(cmds ...redis.Cmder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cmds {
		for _, a := range c.Args() {
			fmt.Fprintf(&l.b, "%v ", a)
		}
		l.b.WriteByte('\n')
	}
}

func (l *sentLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func (l *sentLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *sentLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { l.add(cmd); return next(ctx, cmd) }
}

func (l *sentLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { l.add(cmds...); return next(ctx, cmds) }
}

// dumpKeyspace renders every key under the test's namespace with every
// field, member, score and value it holds.
func dumpKeyspace(t *testing.T, e *harness.Env) string {
	t.Helper()
	ctx := e.Ctx()
	var b strings.Builder
	for _, k := range e.Keys() {
		typ, err := e.Client.Type(ctx, k).Result()
		require.NoError(t, err)
		fmt.Fprintf(&b, "%s (%s)\n", k, typ)
		switch typ {
		case "hash":
			m, err := e.Client.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			for f, v := range m {
				fmt.Fprintf(&b, "  %s = %s\n", f, v)
			}
		case "zset":
			m, err := e.Client.ZRangeWithScores(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			for _, z := range m {
				fmt.Fprintf(&b, "  %v %v\n", z.Member, z.Score)
			}
		case "string":
			v, err := e.Client.Get(ctx, k).Result()
			require.NoError(t, err)
			fmt.Fprintf(&b, "  %s\n", v)
		default:
			t.Fatalf("%s: a %s, which this package never writes", k, typ)
		}
	}
	return b.String()
}

// TestNoUsableSecretAtRest runs a workload (create, authenticate, rotate
// refresh tokens, update, list, revoke, log in and out, blacklist), then
// reads every key, field, member, score and value under the namespace,
// every command the client sent, every error and every listing, and finds
// no handle, handle secret (as text, raw bytes or hex) or refresh token
// in any of them.
func TestNoUsableSecretAtRest(t *testing.T) {
	e := harness.New(t)
	c := e.FreshClient()
	sent := &sentLog{}
	c.AddHook(sent)
	s, err := New(c, WithNamespace(e.NS), WithMaxSessions(4), WithRefreshHistory(3))
	require.NoError(t, err)
	users, err := NewUsers(c, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()

	var secrets []string // everything that grants access
	var outputs strings.Builder
	note := func(err error) {
		if err != nil {
			outputs.WriteString(err.Error() + "\n")
		}
	}
	type held struct {
		user, id, handle, first, refresh string
	}
	var all []held
	for _, uid := range []string{"alice", "bob"} {
		_, err := users.Login(ctx, uid, LoginInfo{DeviceID: "phone", IPAddress: "192.0.2.1"})
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			sess, tok, err := s.Create(ctx, Info{UserID: uid, Email: uid + "@example.com", Extra: map[string]string{"device": fmt.Sprint(i)}})
			require.NoError(t, err)
			sec, _, _ := strings.Cut(tok.Handle, ".")
			raw, err := b64.DecodeString(sec)
			require.NoError(t, err)
			secrets = append(secrets, tok.Handle, sec, string(raw), hex.EncodeToString(raw), tok.Refresh)
			h := held{uid, sess.ID, tok.Handle, tok.Refresh, tok.Refresh}
			for j := 0; j < 3; j++ {
				next, err := s.RotateRefresh(ctx, uid, sess.ID, h.refresh)
				require.NoError(t, err)
				secrets = append(secrets, next)
				h.refresh = next
			}
			all = append(all, h)
			outputs.WriteString(fmt.Sprintf("%v %+v %#v\n", tok, tok, tok))
		}
	}
	for _, h := range all {
		uid, sid, err := ParseHandle(h.handle)
		require.NoError(t, err)
		_, _, err = s.Authenticate(ctx, users, uid, sid)
		require.NoError(t, err)
		require.NoError(t, s.Update(ctx, uid, sid, Changes{Set: map[string]string{"cart": "3"}}))
		require.NoError(t, s.VerifyRefresh(ctx, uid, sid, h.refresh))
		note(s.VerifyRefresh(ctx, uid, sid, h.refresh+"x"))
		_, _, err = ParseHandle(h.handle[:len(h.handle)-1] + "!")
		note(err)
		_, _, err = ParseHandle(h.handle + h.handle)
		note(err)
	}
	// A reused refresh token revokes its session; the errors name keys only.
	_, err = s.RotateRefresh(ctx, all[1].user, all[1].id, all[1].first)
	require.ErrorIs(t, err, ErrTokenReused)
	note(err)
	_, err = s.Get(ctx, all[1].user, all[1].id)
	note(err)
	for i, uid := range []string{"alice", "bob"} {
		list, err := s.List(ctx, uid)
		require.NoError(t, err)
		require.Len(t, list, 3-1+i)
		for _, en := range list {
			fmt.Fprintf(&outputs, "%s %v\n", en.ID, en.ExpiresAt)
			_, _, err := ParseHandle(en.ID)
			require.ErrorIs(t, err, ErrInvalidToken, "a listed ID is not a handle")
		}
		victim := list[0].ID
		if victim == all[5].id {
			victim = list[1].ID // all[5] is kept to the end
		}
		ok, err := s.Revoke(ctx, uid, victim)
		require.NoError(t, err)
		require.True(t, ok)
	}
	n, err := s.RevokeOthers(ctx, "bob", all[5].id)
	require.NoError(t, err)
	fmt.Fprintln(&outputs, n)
	_, err = s.RevokeToken(ctx, "jti-1", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, users.Block(ctx, "bob"))
	require.NoError(t, users.Unblock(ctx, "bob"))
	require.NoError(t, users.Logout(ctx, "alice"))

	dump := dumpKeyspace(t, e)
	require.Contains(t, dump, all[5].id, "the scan sees the live sessions")
	require.Contains(t, dump, hashToken(all[5].refresh), "and their refresh-token digests")
	for _, sec := range secrets {
		require.NotEmpty(t, sec)
		assert.NotContains(t, dump, sec, "the keyspace holds a secret")
		assert.NotContains(t, sent.String(), sec, "a command carried a secret to the server")
		assert.NotContains(t, outputs.String(), sec, "an error, a listing or a printed value shows a secret")
	}
	t.Logf("%s: %d secrets, none in %d keys (%d bytes), %d bytes of commands, %d bytes of errors and listings",
		e.Backend, len(secrets), len(e.Keys()), len(dump), len(sent.String()), outputs.Len())
}
