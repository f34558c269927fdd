package aimemory

import (
	"context"
	"encoding/json"
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

// Each write whose reply is lost after the server ran it, and which
// go-redis sends again, reports its first outcome and changes nothing
// twice: an append is stored once and counted once, a summary folds its
// messages in once, a stream's message is appended once.
func TestLostReplyReportsFirstOutcome(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	var calls int
	m, err := New(pc, WithNamespace(e.NS), WithMaxMessages(3),
		WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
			calls++
			return strings.TrimPrefix(prev+","+strings.Join(contents(ev), ","), ","), nil
		}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	for _, op := range []*call.Op{appendOp, summaryStoreOp, deleteOp, topicsOp, userSetOp, eraseOp} {
		require.NoError(t, op.Load(ctx, pc), "EVALSHA, so the SHA is on the wire")
	}
	lost := p.Lost()
	lose := func(op *call.Op) { p.LoseReply(op.Script().Hash()) }

	t.Run("append", func(t *testing.T) {
		lose(appendOp)
		res, err := m.Append(ctx, "u", "c", []Message{msg(System, "sys", 4), msg(User, "one", 3)})
		require.NoError(t, err, "the resend finds its request ID")
		require.Equal(t, lost+1, p.Lost())
		assert.Equal(t, 2, res.Length)
		assert.Equal(t, int64(7), res.TokensToday)
		w, err := m.Window(ctx, "u", "c")
		require.NoError(t, err)
		assert.Equal(t, 2, w.Length, "stored once")
		u, err := m.User(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, int64(7), u.TokensToday, "counted once")
	})

	t.Run("summary", func(t *testing.T) {
		_, err := m.Append(ctx, "u", "c", []Message{msg(User, "two", 1)})
		require.NoError(t, err)
		lose(summaryStoreOp)
		res, err := m.Append(ctx, "u", "c", []Message{msg(User, "three", 1)}) // evicts "one"
		require.NoError(t, err)
		require.NoError(t, res.SummaryErr, "the resent store finds its own request ID")
		require.Equal(t, lost+2, p.Lost())
		assert.Equal(t, 1, res.Evicted)
		assert.Zero(t, res.Pending)
		assert.Equal(t, 1, calls, "summarized once")
		w, err := m.Window(ctx, "u", "c")
		require.NoError(t, err)
		require.NotNil(t, w.Summary)
		assert.Equal(t, Summary{Text: "one", Tokens: 1, Covered: 1}, *w.Summary)
	})

	t.Run("stream", func(t *testing.T) {
		s, err := m.Stream("u", "s")
		require.NoError(t, err)
		require.NoError(t, s.Send(ctx, "Hello, "))
		require.NoError(t, s.Send(ctx, "world."))
		lose(appendOp)
		res, err := s.End(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, lost+3, p.Lost())
		assert.Equal(t, 1, res.Length)
		again, err := s.End(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, res, again)
		w, err := m.Window(ctx, "u", "s")
		require.NoError(t, err)
		assert.Equal(t, []string{"Hello, world."}, contents(w.Messages))
	})

	t.Run("idempotent writes", func(t *testing.T) {
		lose(topicsOp)
		topics, err := m.AddTopics(ctx, "u", "a", "b")
		require.NoError(t, err)
		assert.Equal(t, []string{"b", "a"}, topics)
		lose(userSetOp)
		require.NoError(t, m.SetPreferences(ctx, "u", json.RawMessage(`{"x":1}`)))
		lose(deleteOp)
		require.NoError(t, m.DeleteConversation(ctx, "u", "s"))
		lose(eraseOp)
		erased, err := m.EraseUser(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, 1, erased.Conversations)
		require.Equal(t, lost+7, p.Lost())
		for _, k := range e.Keys() {
			assert.NotContains(t, k, "{u}", "erased")
		}
	})
}

// Outages are not outcomes: a reply lost without a resend, or a stalled
// server past the deadline, is returned as the network or context error,
// never as ErrBudgetExceeded, ErrBudgetTooSmall, ErrInvalid or
// keys.ErrCorrupt.
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	m, err := New(pc, WithNamespace(e.NS), WithDailyBudget(10))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, appendOp.Load(ctx, pc))
	business := []error{ErrBudgetExceeded, ErrBudgetTooSmall, ErrInvalid, keys.ErrCorrupt}

	p.LoseReply(appendOp.Script().Hash())
	_, err = m.Append(ctx, "u", "c", []Message{msg(User, "x", 5)})
	require.Error(t, err)
	for _, b := range business {
		assert.NotErrorIs(t, err, b)
	}

	p.Stall()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = m.Window(short, "u", "c", WithTokenBudget(1))
	require.Error(t, err)
	for _, b := range business {
		assert.NotErrorIs(t, err, b)
	}
	p.Resume()
}
