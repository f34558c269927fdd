package chat

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/redschema/redschema/keys"
)

// Role is who sent a message (the home-automation backend's sender_role).
type Role string

// The sender roles.
const (
	// User is the customer: their message makes the conversation unread
	// and starts its wait for a reply.
	User Role = "user"
	// Admin is the support side: their message takes the conversation out
	// of the unread queue and ends the wait (its response time counts for
	// the assigned admin's dashboard).
	Admin Role = "admin"
	// System is a message from the application (a notice, a bot): it
	// changes neither.
	System Role = "system"
)

// Message is one cached message, stored as the home-automation backend's
// JSON {"id","content","sender_role","timestamp"} (plus "sender_id" when
// set; docs/home-automation.md).
type Message struct {
	// ID numbers the conversation's messages 1, 2, 3, ...; Append assigns
	// it.
	ID         int64
	Content    string
	SenderRole Role
	// SenderID names the sender (a user or admin ID); optional.
	SenderID string
	// Timestamp is the server time of the Append, in milliseconds.
	Timestamp time.Time
}

type messageWire struct {
	ID         *int64  `json:"id"`
	Content    *string `json:"content"`
	SenderRole Role    `json:"sender_role"`
	SenderID   string  `json:"sender_id,omitempty"`
	Timestamp  *string `json:"timestamp"`
}

// MarshalJSON encodes m as it is stored.
func (m Message) MarshalJSON() ([]byte, error) {
	ts := m.Timestamp.UTC().Format(isoMillis)
	return json.Marshal(messageWire{ID: &m.ID, Content: &m.Content, SenderRole: m.SenderRole, SenderID: m.SenderID, Timestamp: &ts})
}

// isoMillis is JavaScript's Date.toISOString layout, as the seed writes
// timestamps.
const isoMillis = "2006-01-02T15:04:05.000Z07:00"

var (
	errMessage = errors.New(`not a message {"id","content","sender_role","timestamp"}`)
	errOrder   = errors.New("message IDs do not go down by one")
)

// decodeMessage decodes a stored message.
func decodeMessage(s string) (Message, error) {
	var w messageWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Message{}, err
	}
	if w.ID == nil || *w.ID < 1 || w.Content == nil || w.Timestamp == nil || !w.SenderRole.valid() {
		return Message{}, errMessage
	}
	t, err := time.Parse(time.RFC3339Nano, *w.Timestamp)
	if err != nil {
		return Message{}, errMessage
	}
	return Message{ID: *w.ID, Content: *w.Content, SenderRole: w.SenderRole, SenderID: w.SenderID, Timestamp: fromMs(t.UnixMilli())}, nil
}

func (r Role) valid() bool { return r == User || r == Admin || r == System }

// UnmarshalJSON decodes a message as it is stored.
func (m *Message) UnmarshalJSON(b []byte) error {
	v, err := decodeMessage(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Append caches a message in conversation id (LPUSH on
// chat:{tag}:conversation:{id}:messages, trimmed to the newest 100 or
// WithMessageCache, with the conversation TTL) and, in the same script
// (one round trip), records it as the conversation's activity and
// updates its unread state (see Role). The message's ID and Timestamp are
// assigned by the script (server time); m's are ignored. It returns the
// message as stored and publishes it as a "message" event. ErrNotFound
// when the conversation is not open; ErrInvalid for an unknown role,
// content over 16 KiB or not UTF-8, or a sender ID over 256 bytes. A
// resend by go-redis within 3 minutes reports the first
// outcome (the same ID and Timestamp) and caches the message once.
func (c *Chat) Append(ctx context.Context, id string, m Message) (Message, error) {
	const op = "append"
	switch {
	case !m.SenderRole.valid():
		return Message{}, pkg.Invalidf(op, "sender role %.32q: want user, admin or system", string(m.SenderRole))
	case len(m.Content) > maxContentLen || !utf8.ValidString(m.Content):
		return Message{}, pkg.Invalidf(op, "content of %d bytes: want at most %d bytes of UTF-8", len(m.Content), maxContentLen)
	case len(m.SenderID) > maxIDLen || !utf8.ValidString(m.SenderID):
		return Message{}, pkg.Invalidf(op, "sender ID %.64q: want at most %d bytes of UTF-8", m.SenderID, maxIDLen)
	}
	mk, err := c.convKey(op, messagesKey, id)
	if err != nil {
		return Message{}, err
	}
	rep, err := c.onConversation(ctx, appendOp, op, id, []string{mk}, string(m.SenderRole), m.Content, m.SenderID, c.opt.cache)
	if err != nil {
		return Message{}, err
	}
	m.ID = rep.Int(0)
	m.Timestamp = fromMs(rep.Int(1))
	return m, rep.Err()
}

// Messages returns up to limit of conversation id's cached messages,
// newest first (one read-only script). With before > 0 it returns the
// messages older than message ID before (the last ID of the previous
// page): pages that stay put while new messages arrive; 0 starts from the
// newest. limit must be in [1, 1000]. A conversation without cached
// messages (none yet, or expired) gives an empty page. A stored entry
// this package did not write gives an error matching keys.ErrCorrupt
// naming the list.
func (c *Chat) Messages(ctx context.Context, id string, limit int, before int64) ([]Message, error) {
	const op = "messages"
	if limit < 1 || limit > maxPage {
		return nil, pkg.Invalidf(op, "limit %d outside [1, %d]", limit, maxPage)
	}
	if before < 0 {
		return nil, pkg.Invalidf(op, "before %d: want a message ID or 0", before)
	}
	mk, err := c.convKey(op, messagesKey, id)
	if err != nil {
		return nil, err
	}
	rep, err := c.run.Run(ctx, messagesOp, []string{mk}, before, limit)
	if err != nil {
		return nil, err
	}
	raw := rep.Strs(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(raw))
	for i, s := range raw {
		m, err := decodeMessage(s)
		if err == nil && i > 0 && m.ID != out[i-1].ID-1 {
			err = errOrder
		}
		if err != nil {
			return nil, pkg.Fail(op, mk, nil, keys.Corrupt(mk, err))
		}
		out = append(out, m)
	}
	return out, nil
}

// MarkRead takes conversation id out of the unread queue (a "read"
// event) and reports whether it was unread; the user's wait for a reply
// goes on until an admin message. ErrNotFound when the conversation is
// not open. A replay reports the first outcome.
func (c *Chat) MarkRead(ctx context.Context, id string) (bool, error) {
	const op = "mark read"
	rep, err := c.onConversation(ctx, readOp, op, id, nil)
	if err != nil {
		return false, err
	}
	was := rep.Int(0) == 1
	return was, rep.Err()
}
