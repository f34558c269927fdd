package reply_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/reply"
)

func TestConversions(t *testing.T) {
	n, err := reply.Int64(int64(7))
	require.NoError(t, err)
	assert.EqualValues(t, 7, n)
	n, err = reply.Int64("-12")
	require.NoError(t, err)
	assert.EqualValues(t, -12, n)
	f, err := reply.Float64("1.5")
	require.NoError(t, err)
	assert.Equal(t, 1.5, f)
	f, err = reply.Float64(int64(2))
	require.NoError(t, err)
	assert.Equal(t, 2.0, f)
	f, err = reply.Float64(2.5)
	require.NoError(t, err)
	assert.Equal(t, 2.5, f)
	s, err := reply.String("x")
	require.NoError(t, err)
	assert.Equal(t, "x", s)
	a, err := reply.Slice([]any{int64(1), "b"}, 2)
	require.NoError(t, err)
	assert.Len(t, a, 2)
	ss, err := reply.Strings([]any{"a", nil, "c"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "", "c"}, ss)
	is, err := reply.Int64s([]any{int64(1), "2"})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2}, is)

	for name, f := range map[string]func() error{
		"int from nil":       func() error { _, err := reply.Int64(nil); return err },
		"int from text":      func() error { _, err := reply.Int64("x1"); return err },
		"float from text":    func() error { _, err := reply.Float64("abc"); return err },
		"float from array":   func() error { _, err := reply.Float64([]any{}); return err },
		"string from int":    func() error { _, err := reply.String(int64(1)); return err },
		"slice from string":  func() error { _, err := reply.Slice("x", -1); return err },
		"slice wrong length": func() error { _, err := reply.Slice([]any{1}, 2); return err },
		"strings with int":   func() error { _, err := reply.Strings([]any{int64(1)}); return err },
		"strings from int":   func() error { _, err := reply.Strings(int64(1)); return err },
		"int64s with text":   func() error { _, err := reply.Int64s([]any{"z"}); return err },
		"int64s from string": func() error { _, err := reply.Int64s("z"); return err },
	} {
		assert.ErrorIs(t, f(), reply.ErrUnexpected, name)
	}
}

func TestStreamID(t *testing.T) {
	for _, c := range []struct {
		id      string
		ms, seq uint64
		ok      bool
	}{
		{"1-2", 1, 2, true}, {"1700000000000", 1700000000000, 0, true},
		{"0-0", 0, 0, true}, {"18446744073709551615-18446744073709551615", 1<<64 - 1, 1<<64 - 1, true},
		{"", 0, 0, false}, {"-1", 0, 0, false}, {"1-", 0, 0, false}, {"1-x", 0, 0, false}, {"a-1", 0, 0, false},
		{"1-2-3", 0, 0, false}, {"18446744073709551616-0", 0, 0, false},
	} {
		ms, seq, ok := reply.StreamID(c.id)
		assert.Equal(t, c.ok, ok, c.id)
		assert.Equal(t, []uint64{c.ms, c.seq}, []uint64{ms, seq}, c.id)
	}
	assert.True(t, reply.StreamIDBefore("1-9", "2-0"))
	assert.True(t, reply.StreamIDBefore("2-0", "2-1"))
	assert.True(t, reply.StreamIDBefore("9-0", "10-0"), "compared as numbers, not text")
	assert.True(t, reply.StreamIDBefore("2", "2-1"))
	assert.False(t, reply.StreamIDBefore("2-1", "2-1"))
	assert.False(t, reply.StreamIDBefore("3-0", "2-5"))
	assert.True(t, reply.StreamIDBefore("x", "0-0"))
	assert.False(t, reply.StreamIDBefore("0-0", "x"))
}
