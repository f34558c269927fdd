package aimemory

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func toolCall(id string, tokens int) Message {
	return Message{Role: Assistant, Content: "call " + id, ToolCalls: []ToolCall{{ID: id, Name: "lookup", Arguments: `{"q":"` + id + `"}`}}, Tokens: tokens}
}

func result(id string, tokens int) Message {
	return Message{Role: Tool, Content: "result " + id, ToolCallID: id, Tokens: tokens}
}

// windowPaths are the caps under which Window picks its window in Go
// from plain reads (up to readAllWindow) and in the window script
// (beyond): the window tests run on both.
var windowPaths = []int{defaultMessages, readAllWindow + 1}

// Token-budget and last-N windows: the system prompt always, never over
// the budget, a call and its results together or not at all.
func TestWindowTable(t *testing.T) {
	for _, limit := range windowPaths {
		t.Run("cap "+strconv.Itoa(limit), func(t *testing.T) { testWindowTable(t, limit) })
	}
}

func testWindowTable(t *testing.T, limit int) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(limit))
	sys := msg(System, "sys", 10)
	chat := []Message{sys, msg(User, "u1", 5), msg(Assistant, "a1", 5), msg(User, "u2", 5), msg(Assistant, "a2", 5)}
	tools := []Message{msg(System, "sys", 2), msg(User, "u1", 1), toolCall("x", 1), result("x", 1), toolCall("y", 1), result("y", 1), result("y2", 1), msg(Assistant, "a", 1)}
	noSys := []Message{msg(User, "u1", 1), msg(Assistant, "a1", 1), msg(User, "u2", 1)}
	for i, tc := range []struct {
		name   string
		conv   []Message
		opts   []WindowOption
		want   []string // window messages after the system prompt
		tokens int
		err    error
	}{
		{"whole conversation", chat, nil, []string{"u1", "a1", "u2", "a2"}, 30, nil},
		{"budget fits two", chat, []WindowOption{WithTokenBudget(20)}, []string{"u2", "a2"}, 20, nil},
		{"budget fits two, not three", chat, []WindowOption{WithTokenBudget(24)}, []string{"u2", "a2"}, 20, nil},
		{"budget holds only the system prompt", chat, []WindowOption{WithTokenBudget(10)}, []string{}, 10, nil},
		{"budget below the system prompt", chat, []WindowOption{WithTokenBudget(9)}, nil, 0, ErrBudgetTooSmall},
		{"last 3", chat, []WindowOption{WithLastN(3)}, []string{"a1", "u2", "a2"}, 25, nil},
		{"last 3 within 17 tokens", chat, []WindowOption{WithLastN(3), WithTokenBudget(17)}, []string{"a2"}, 15, nil},
		{"tools: call and two results stay together", tools, []WindowOption{WithTokenBudget(6)}, []string{"call y", "result y", "result y2", "a"}, 6, nil},
		{"tools: a group that does not fit is left out whole", tools, []WindowOption{WithTokenBudget(5)}, []string{"a"}, 3, nil},
		{"tools: last 2 does not split a call", tools, []WindowOption{WithLastN(2)}, []string{"a"}, 3, nil},
		{"tools: last 4", tools, []WindowOption{WithLastN(4)}, []string{"call y", "result y", "result y2", "a"}, 6, nil},
		{"tools: last 6", tools, []WindowOption{WithLastN(6)}, []string{"call x", "result x", "call y", "result y", "result y2", "a"}, 8, nil},
		{"no system prompt", noSys, []WindowOption{WithTokenBudget(2)}, []string{"a1", "u2"}, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "t" + strconv.Itoa(i)
			_, err := m.Append(ctx, "u", conv, tc.conv)
			require.NoError(t, err)
			w, err := m.Window(ctx, "u", conv, tc.opts...)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if tc.conv[0].Role == System {
				require.NotNil(t, w.System)
				assert.Equal(t, tc.conv[0].Content, w.System.Content)
			} else {
				assert.Nil(t, w.System)
			}
			assert.Equal(t, tc.want, contents(w.Messages))
			assert.Equal(t, tc.tokens, w.Tokens)
			assert.Equal(t, len(tc.conv), w.Length)
		})
	}
}

// Tool results whose call is no longer in the conversation (written by
// another application) are left out of every window.
func TestWindowDropsOrphanResults(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	k := key(t, e, convKey, "u", "c")
	for _, s := range []string{
		`{"role":"tool","content":"orphan","timestamp":"2026-01-16T10:00:00Z","tool_call_id":"gone","tokens":1}`,
		`{"tokens":2,"content":"hi","role":"user"}`, // another field order: read with cjson
		`{"role":"assistant","content":"hello","timestamp":"2026-01-16T10:00:01Z","tokens":1}`,
	} {
		require.NoError(t, e.Client.RPush(ctx, k, s).Err())
	}
	w, err := m.Window(ctx, "u", "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"hi", "hello"}, contents(w.Messages))
	assert.Equal(t, 3, w.Tokens)
	assert.Equal(t, 1, w.Omitted)
}

// Random conversations and budgets: every window is within its budget,
// holds the system prompt, is a suffix of the conversation that splits
// no call from its results, and stops only where the next group would
// not fit.
func TestWindowProperties(t *testing.T) {
	for _, limit := range windowPaths {
		t.Run("cap "+strconv.Itoa(limit), func(t *testing.T) { testWindowProperties(t, limit) })
	}
}

func testWindowProperties(t *testing.T, limit int) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(limit))
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 60; round++ {
		var conv []Message
		if rng.IntN(3) > 0 {
			conv = append(conv, msg(System, "sys", 1+rng.IntN(20)))
		}
		for len(conv) < 40 {
			switch rng.IntN(4) {
			case 0:
				id := strconv.Itoa(len(conv))
				conv = append(conv, toolCall(id, 1+rng.IntN(10)))
				for r := rng.IntN(3); r >= 0; r-- {
					conv = append(conv, result(id, 1+rng.IntN(30)))
				}
			case 1:
				conv = append(conv, msg(User, "u"+strconv.Itoa(len(conv)), 1+rng.IntN(40)))
			default:
				conv = append(conv, msg(Assistant, "a"+strconv.Itoa(len(conv)), 1+rng.IntN(40)))
			}
		}
		id := "p" + strconv.Itoa(round)
		_, err := m.Append(ctx, "u", id, conv)
		require.NoError(t, err)
		budget := 1 + rng.IntN(400)
		w, err := m.Window(ctx, "u", id, WithTokenBudget(budget))
		sysTokens := 0
		body := conv
		if conv[0].Role == System {
			sysTokens, body = conv[0].Tokens, conv[1:]
		}
		if budget < sysTokens {
			require.ErrorIs(t, err, ErrBudgetTooSmall)
			continue
		}
		require.NoError(t, err)
		assert.LessOrEqual(t, w.Tokens, budget)
		if sysTokens > 0 {
			require.NotNil(t, w.System, "round %d", round)
		}
		// A suffix of the body that starts at a group's start.
		start := len(body) - len(w.Messages)
		assert.Equal(t, contents(body[start:]), contents(w.Messages), "round %d: a suffix", round)
		if start < len(body) {
			assert.NotEqual(t, Tool, body[start].Role, "round %d: starts with a result", round)
		}
		sum := sysTokens
		for _, x := range w.Messages {
			sum += x.Tokens
		}
		assert.Equal(t, sum, w.Tokens)
		// Maximal: the group before the window does not fit.
		if start > 0 {
			g := start - 1
			extra := body[g].Tokens
			for g > 0 && body[g].Role == Tool {
				g--
				extra += body[g].Tokens
			}
			if body[g].Role != Tool {
				assert.Greater(t, w.Tokens+extra, budget, "round %d: the next group would fit", round)
			}
		}
	}
}
