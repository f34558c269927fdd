package aimemory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Role is who wrote a message.
type Role string

// The roles a conversation holds.
const (
	// System is the system prompt. A conversation whose first message is
	// a system message keeps it pinned: the cap never evicts it and every
	// window contains it.
	System Role = "system"
	// User is the person's turn.
	User Role = "user"
	// Assistant is the model's turn; it may call tools (ToolCalls).
	Assistant Role = "assistant"
	// Tool is a tool's result, answering one of the preceding assistant
	// message's ToolCalls (ToolCallID).
	Tool Role = "tool"
)

func (r Role) valid() bool { return r == System || r == User || r == Assistant || r == Tool }

// ToolCall is one call of a tool that an assistant message asks for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// Message is one message of a conversation, stored as the AI platform's
// JSON item {"role", "content", "timestamp", "tokens"} (with "tool_calls"
// and "tool_call_id" when they are set).
type Message struct {
	Role    Role
	Content string
	// Timestamp is when the message was written; Append sets the local
	// clock's time, in UTC, when it is zero, and refuses one outside the
	// years 0-9999 (stored as RFC 3339) with ErrInvalid.
	Timestamp time.Time
	// ToolCalls are the tool calls of an assistant message.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
	// Tokens is the message's size in tokens. Zero asks Append to count
	// it with the Memory's Counter.
	Tokens int
}

// wire is a message as stored: seed 001's fields, tokens last (the
// scripts read the role from the front of the JSON and the tokens from
// its end without decoding it).
type wire struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	Timestamp  string     `json:"timestamp"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Tokens     *int       `json:"tokens"`
}

// timeLayout is how timestamps are written: RFC 3339 in UTC with
// milliseconds ("2026-01-16T10:00:00.123Z").
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// check validates m for op: a known role, content or (for an assistant)
// tool calls, a tool message's call ID, tokens in [0, 2^24], valid
// UTF-8, a timestamp in the years 0-9999 (RFC 3339's, which the reads
// parse).
func (m *Message) check(op string, i int) error {
	bad := func(format string, args ...any) error {
		return pkg.Invalidf(op, "message %d: %s", i, fmt.Sprintf(format, args...))
	}
	switch {
	case !m.Role.valid():
		return bad("unknown role %q", m.Role)
	case m.Content == "" && (m.Role != Assistant || len(m.ToolCalls) == 0):
		return bad("empty content")
	case !utf8.ValidString(m.Content):
		return bad("content is not valid UTF-8")
	case m.Tokens < 0 || m.Tokens > maxTokens:
		return bad("tokens %d outside [0, %d]", m.Tokens, maxTokens)
	case m.Timestamp.UTC().Year() < 0 || m.Timestamp.UTC().Year() > 9999:
		return bad("timestamp %s outside the years 0-9999", m.Timestamp.UTC().Format(time.RFC3339))
	case len(m.ToolCalls) > 0 && m.Role != Assistant:
		return bad("tool calls on a %s message", m.Role)
	case m.Role == Tool && m.ToolCallID == "":
		return bad("tool message without a tool call ID")
	case m.Role != Tool && m.ToolCallID != "":
		return bad("tool call ID on a %s message", m.Role)
	case !utf8.ValidString(m.ToolCallID):
		return bad("tool call ID is not valid UTF-8")
	}
	for j, c := range m.ToolCalls {
		if c.ID == "" || c.Name == "" || !utf8.ValidString(c.ID+c.Name+c.Arguments) {
			return bad("tool call %d: empty or invalid ID or name", j)
		}
	}
	return nil
}

// countText returns what a counter counts of m: its content and its
// tool calls' names and arguments.
func (m *Message) countText() string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	var b bytes.Buffer
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteByte('\n')
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Arguments)
	}
	return b.String()
}

// encode returns m's stored JSON (HTML characters not escaped).
func (m *Message) encode() ([]byte, error) {
	tok := m.Tokens
	w := wire{Role: m.Role, Content: m.Content, Timestamp: m.Timestamp.UTC().Format(timeLayout),
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Tokens: &tok}
	var b bytes.Buffer
	b.Grow(len(m.Content) + 96)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeMessage parses a stored message, strictly: a known role, tokens
// present and in range, a parsable timestamp when there is one. The
// error says what is wrong, for a corrupt-data error naming the key.
func decodeMessage(s string) (Message, error) {
	var w wire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Message{}, fmt.Errorf("not a message: %w", err)
	}
	if !w.Role.valid() {
		return Message{}, fmt.Errorf("unknown role %q", w.Role)
	}
	if w.Tokens == nil || *w.Tokens < 0 || *w.Tokens > maxTokens {
		return Message{}, fmt.Errorf("tokens missing or outside [0, %d]", maxTokens)
	}
	m := Message{Role: w.Role, Content: w.Content, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID, Tokens: *w.Tokens}
	if w.Timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, w.Timestamp)
		if err != nil {
			return Message{}, fmt.Errorf("timestamp %.40q: %w", w.Timestamp, err)
		}
		m.Timestamp = t
	}
	return m, nil
}

// Counter counts the tokens of a text. Implementations must be safe for
// concurrent use. ApproxCounter is the default; the sub-module
// aimemory/tiktoken counts exactly with OpenAI's vocabularies, embedded.
type Counter interface {
	Count(text string) (int, error)
}

// CounterFunc adapts a function to Counter.
type CounterFunc func(text string) (int, error)

// Count calls f.
func (f CounterFunc) Count(text string) (int, error) { return f(text) }

// ApproxCounter estimates one token per four bytes of UTF-8, rounded up
// (OpenAI's rule of thumb for English): no vocabulary, no allocation.
func ApproxCounter() Counter { return approx{} }

type approx struct{}

func (approx) Count(text string) (int, error) { return (len(text) + 3) / 4, nil }
