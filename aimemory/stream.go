package aimemory

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redschema/redschema/pubsub"
)

// Stream publishes a model's output as it is generated, chunk by chunk,
// on the AI platform's channel pubsub:ai:response (payload
// {conversation_id, chunk} in the pubsub envelope), and appends the
// assembled assistant message to the conversation when it ends. Create it
// with Memory.Stream; it is safe for concurrent use, but chunks sent
// concurrently are assembled in the order Send is called.
type Stream struct {
	m          *Memory
	user, conv string
	id         string // the End append's request ID
	mu         sync.Mutex
	buf        strings.Builder
	size       int // the assembled message's encoded size, at most (see Send)
	ended      bool
	res        Appended
	err        error
}

// Stream starts streaming a response into conversation convID of userID.
// Bad IDs are ErrInvalid. It does no I/O.
func (m *Memory) Stream(userID, convID string) (*Stream, error) {
	if _, err := m.conv("stream", userID, convID); err != nil {
		return nil, err
	}
	return &Stream{m: m, user: userID, conv: convID, id: newID(), size: envelopeLen()}, nil
}

// envelopeLen is the encoded size of the message End appends, its
// content's characters aside: role, empty content, a timestamp (always
// as wide) and the widest token count.
func envelopeLen() int {
	m := Message{Role: Assistant, Timestamp: time.Unix(0, 0), Tokens: maxTokens}
	b, _ := m.encode() // a message without tool calls always encodes
	return len(b)
}

// encodedLen is how many bytes s takes in a message's stored JSON: its
// escapes, without the quotes. Valid UTF-8 is escaped rune by rune, so
// the encoded size of the chunks' concatenation is the sum of theirs.
func encodedLen(s string) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as Message.encode
	_ = enc.Encode(s)        // a string always encodes
	// less the quotes and Encode's newline
	return b.Len() - 3
}

// Send publishes chunk (non-empty valid UTF-8) in one round trip and
// keeps it for the assembled message. It checks what End will: the
// assembled message, encoded as End stores it (JSON escapes, timestamp
// and the widest token count included), must stay within
// WithMaxMessageBytes; a chunk that would take it past is refused with
// ErrInvalid, neither published nor kept, and End stores the chunks
// accepted before it. Delivery is pub/sub's: at most once, to the
// subscribers connected now. A chunk whose publish fails is still part of
// the assembled message (the model produced it); the error is returned.
// After End it fails with ErrStreamEnded.
func (s *Stream) Send(ctx context.Context, chunk string) error {
	const op = "stream"
	if chunk == "" || !utf8.ValidString(chunk) {
		return pkg.Invalidf(op, "chunk: want non-empty valid UTF-8")
	}
	n := encodedLen(chunk)
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		return pkg.Fail(op, "", ErrStreamEnded, nil)
	case s.size+n > s.m.opt.maxBytes:
		s.mu.Unlock()
		return pkg.Invalidf(op, "the streamed message would take %d bytes encoded, at most %d (WithMaxMessageBytes)", s.size+n, s.m.opt.maxBytes)
	}
	s.buf.WriteString(chunk)
	s.size += n
	s.mu.Unlock()
	return s.publish(ctx, chunk)
}

func (s *Stream) publish(ctx context.Context, chunk string) error {
	_, err := pubsub.Publish(ctx, s.m.bus, pubsub.TopicAIResponse(), pubsub.AIResponseChunk{ConversationID: s.conv, Chunk: chunk})
	return err
}

// End appends the assembled message (role assistant; tokens as given, or
// counted by the Counter when 0) to the conversation, as Append does
// (daily budget included), then publishes an empty chunk, which tells
// subscribers that the stream ended and the message is in the
// conversation. A stream with no chunk appends nothing. The append
// carries a request ID of its own, so go-redis's resend never appends
// twice, and neither does End called again after an error, within
// 3 minutes of the append's first run: both return its first
// outcome. After a success, End returns the same outcome again without
// I/O.
func (s *Stream) End(ctx context.Context, tokens int) (Appended, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended && s.err == nil {
		return s.res, nil
	}
	s.ended = true
	if s.buf.Len() == 0 {
		return Appended{}, nil
	}
	s.res, s.err = s.m.append(ctx, "stream", s.user, s.conv,
		[]Message{{Role: Assistant, Content: s.buf.String(), Tokens: tokens}}, s.id, s.m.opt.budget)
	if s.err != nil {
		return s.res, s.err
	}
	return s.res, s.publish(ctx, "")
}
