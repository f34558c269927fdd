package aimemory

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/pubsub"
)

// Chunks go out on pubsub:ai:response in seed 001's envelope with the
// payload {conversation_id, chunk}; End appends the assembled message and
// then publishes the empty chunk that ends the stream.
func TestStream(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithSource("chat-api"))
	raw := e.Client.Subscribe(ctx, pubsub.TopicAIResponse().Channel(e.NS))
	t.Cleanup(func() { _ = raw.Close() })
	_, err := raw.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	events, err := pubsub.Subscribe(ctx, m.Bus(), pubsub.TopicAIResponse())
	require.NoError(t, err)

	_, err = m.Append(ctx, "u", "c", []Message{msg(User, "tell me a joke", 4)})
	require.NoError(t, err)
	s, err := m.Stream("u", "c")
	require.NoError(t, err)
	for _, c := range []string{"Why did ", "the gopher ", "cross the road?"} {
		require.NoError(t, s.Send(ctx, c))
	}
	res, err := s.End(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Length)
	assert.Equal(t, 9, res.Tokens, "counted: 34 bytes / 4, rounded up")

	var got []string
	for len(got) < 4 {
		select {
		case ev := <-events:
			require.NoError(t, ev.Err)
			assert.Equal(t, "c", ev.Payload.ConversationID)
			assert.Equal(t, "chat-api", ev.Source)
			got = append(got, ev.Payload.Chunk)
		case <-time.After(10 * time.Second):
			t.Fatal("timed out waiting for chunks")
		}
	}
	assert.Equal(t, []string{"Why did ", "the gopher ", "cross the road?", ""}, got)

	m1, err := raw.ReceiveMessage(ctx)
	require.NoError(t, err)
	var env map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(m1.Payload), &env))
	for _, f := range []string{"event", "timestamp", "payload", "source"} {
		assert.Contains(t, env, f)
	}
	assert.JSONEq(t, `"response"`, string(env["event"]))
	assert.JSONEq(t, `{"conversation_id":"c","chunk":"Why did "}`, string(env["payload"]))

	w, err := m.Window(ctx, "u", "c")
	require.NoError(t, err)
	require.Len(t, w.Messages, 2)
	assert.Equal(t, Assistant, w.Messages[1].Role)
	assert.Equal(t, "Why did the gopher cross the road?", w.Messages[1].Content)

	err = s.Send(ctx, "more")
	require.True(t, errors.Is(err, ErrStreamEnded), "%v", err)
	empty, err := m.Stream("u", "c")
	require.NoError(t, err)
	res, err = empty.End(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, Appended{}, res, "nothing streamed, nothing appended")
}

// Send checks what End checks: the assembled message's encoded JSON
// (escapes, the other fields and the widest token count included) within
// WithMaxMessageBytes. A chunk that would take it past is refused with
// ErrInvalid, and End stores every chunk Send accepted.
func TestStreamSendChecksEncodedSize(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessageBytes(256))
	for conv, chunk := range map[string]string{
		"quote": `"`, "backslash": `\`, "control": "\x01", "newline": "\n",
		"u2028": "\u2028", "lt": "<", "plain": "a",
	} {
		t.Run(conv, func(t *testing.T) {
			s, err := m.Stream("u", conv)
			require.NoError(t, err)
			var sent strings.Builder
			refused := false
			for i := 0; i < 256 && !refused; i++ {
				switch err := s.Send(ctx, chunk); {
				case err == nil:
					sent.WriteString(chunk)
				case errors.Is(err, ErrInvalid):
					refused = true
					assert.Contains(t, err.Error(), "encoded")
				default:
					require.NoError(t, err)
				}
			}
			require.True(t, refused, "256 chunks of %q do not fit in 256 bytes encoded", chunk)
			require.NotZero(t, sent.Len())
			_, err = s.End(ctx, maxTokens)
			require.NoError(t, err, "End stores what Send accepted")
			w, err := m.Window(ctx, "u", conv)
			require.NoError(t, err)
			require.Len(t, w.Messages, 1)
			assert.Equal(t, sent.String(), w.Messages[0].Content)
			b, err := w.Messages[0].encode()
			require.NoError(t, err)
			assert.LessOrEqual(t, len(b), 256)
			assert.Greater(t, len(b)+encodedLen(chunk), 256, "the refused chunk would have taken End past the limit")
		})
	}
}
