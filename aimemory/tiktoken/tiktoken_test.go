package tiktoken

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/internal/harness"
)

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		encoding, text string
		want           int
	}{
		{Cl100kBase, "hello world", 2},
		{Cl100kBase, "tiktoken is great!", 6},
		{Cl100kBase, "", 0},
		{O200kBase, "hello world", 2},
		{P50kBase, "hello world", 2},
		{R50kBase, "hello world", 2},
	} {
		c, err := New(tc.encoding)
		require.NoError(t, err)
		assert.Equal(t, tc.encoding, c.Encoding())
		n, err := c.Count(tc.text)
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "%s %q", tc.encoding, tc.text)
	}
	c, err := ForModel("gpt-4o")
	require.NoError(t, err)
	assert.Equal(t, O200kBase, c.Encoding())
	n, err := c.Count("\xff\xfe invalid bytes")
	require.NoError(t, err)
	assert.Positive(t, n)

	_, err = New("nope")
	require.True(t, errors.Is(err, ErrInvalid))
	_, err = ForModel("nope")
	require.True(t, errors.Is(err, ErrInvalid))
}

func TestConcurrentCounts(t *testing.T) {
	c, err := New(Cl100kBase)
	require.NoError(t, err)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 50)
	want, err := c.Count(text)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				n, err := c.Count(text)
				assert.NoError(t, err)
				assert.Equal(t, want, n)
			}
		}()
	}
	wg.Wait()
}

// With the Counter, aimemory counts messages whose Tokens is zero
// exactly, and token-budget windows use those counts (on the backend the
// environment names).
func TestWithMemory(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c, err := New(Cl100kBase)
	require.NoError(t, err)
	m, err := aimemory.New(e.Client, aimemory.WithNamespace(e.NS), aimemory.WithCounter(c))
	require.NoError(t, err)
	defer m.Close()
	res, err := m.Append(ctx, "u", "c", []aimemory.Message{
		{Role: aimemory.System, Content: "hello world"},
		{Role: aimemory.User, Content: "tiktoken is great!"},
		{Role: aimemory.Assistant, Content: "hello world"},
	})
	require.NoError(t, err)
	assert.Equal(t, 10, res.Tokens)
	w, err := m.Window(ctx, "u", "c", aimemory.WithTokenBudget(5))
	require.NoError(t, err)
	require.NotNil(t, w.System)
	assert.Equal(t, 4, w.Tokens)
	require.Len(t, w.Messages, 1)
	assert.Equal(t, "hello world", w.Messages[0].Content)
}
