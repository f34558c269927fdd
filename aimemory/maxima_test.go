package aimemory

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// The documented maxima, at the maximum, on every backend (Lua in Redis
// has limits miniredis does not): maxAppend messages in one append, a
// conversation of maxMessages read whole by both window paths,
// maxPending evicted messages waiting (the rest counted lost) and folded
// in batch by batch, and an erasure of more conversations than one batch.
func TestMaxima(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()

	t.Run("largest conversation", func(t *testing.T) {
		m := newMemory(t, e, WithMaxMessages(maxMessages))
		batch := make([]Message, maxAppend)
		for i := 0; i < maxMessages/maxAppend; i++ {
			for j := range batch {
				batch[j] = msg(User, "m"+strconv.Itoa(i*maxAppend+j), 1)
			}
			res, err := m.Append(ctx, "big", "c", batch)
			require.NoError(t, err)
			require.Equal(t, (i+1)*maxAppend, res.Length)
		}
		w, err := m.Window(ctx, "big", "c", WithTokenBudget(maxTokens)) // the window script
		require.NoError(t, err)
		assert.Len(t, w.Messages, maxMessages)
		assert.Equal(t, "m9999", w.Messages[maxMessages-1].Content)
		w, err = m.Window(ctx, "big", "c", WithLastN(maxMessages)) // plain reads
		require.NoError(t, err)
		assert.Len(t, w.Messages, maxMessages)
		res, err := m.Append(ctx, "big", "c", batch)
		require.NoError(t, err)
		assert.Equal(t, maxAppend, res.Evicted)
		assert.Equal(t, maxMessages, res.Length)
	})

	t.Run("pending evictions", func(t *testing.T) {
		var failing atomic.Bool
		failing.Store(true)
		var calls atomic.Int64
		m := newMemory(t, e, WithMaxMessages(maxAppend), WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
			if failing.Load() {
				return "", errors.New("model down")
			}
			calls.Add(1)
			return prev + "+" + strconv.Itoa(len(ev)), nil
		}))
		batch := make([]Message, maxAppend)
		for i := range batch {
			batch[i] = msg(User, "x", 1)
		}
		var res Appended
		for i := 0; i < maxPending/maxAppend+2; i++ {
			var err error
			res, err = m.Append(ctx, "u", "c", batch)
			require.NoError(t, err)
		}
		require.Error(t, res.SummaryErr)
		assert.Equal(t, maxPending, res.Pending)
		w, err := m.Window(ctx, "u", "c")
		require.NoError(t, err)
		assert.Equal(t, maxAppend, w.Lost, "the evictions beyond maxPending are counted")
		assert.Equal(t, maxPending, w.Pending)
		failing.Store(false)
		s, err := m.Summarize(ctx, "u", "c")
		require.NoError(t, err)
		assert.Equal(t, maxPending, s.Covered)
		assert.Zero(t, s.Pending)
		assert.Equal(t, int64(maxPending/summarizeBatch), calls.Load(), "batch by batch")
	})

	t.Run("erasure of many conversations", func(t *testing.T) {
		m := newMemory(t, e)
		const n = 2*eraseBatch + 50
		for i := 0; i < n; i++ {
			_, err := m.Append(ctx, "many", "c"+strconv.Itoa(i), []Message{msg(User, "x", 1)})
			require.NoError(t, err)
		}
		erased, err := m.EraseUser(ctx, "many")
		require.NoError(t, err)
		assert.Equal(t, n, erased.Conversations)
		for _, k := range e.Keys() {
			assert.NotContains(t, k, "{many}")
		}
	})
}
