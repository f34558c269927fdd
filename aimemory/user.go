package aimemory

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"unicode/utf8"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed user_read.lua
	userReadSrc string
	//go:embed topics.lua
	topicsSrc string
	//go:embed user_set.lua
	userSetSrc string

	userKeys   = []*keys.Template{userKey}
	userReadOp = pkg.Declare("user", userReadSrc, userKeys, call.Uses(libSrc), call.Shared())
	topicsOp   = pkg.Declare("add topics", topicsSrc, userKeys, call.Needs(call.JSONStr), call.Shared())
	userSetOp  = pkg.Declare("set preferences", userSetSrc, userKeys, call.Shared())
)

// preferencesField is the user context's field of the preferences.
const preferencesField = "preferences"

// UserContext is what a user's context holds across conversations (the AI
// platform's ai:memory:user:{user_id}).
type UserContext struct {
	// RecentTopics are the user's recent topics, most recent first.
	RecentTopics []string
	// Preferences is the user's preferences document (JSON), or nil.
	Preferences json.RawMessage
	// LastConversationID is the conversation of the user's last append.
	LastConversationID string
	// TokensToday is what the user's appends counted since the start of
	// Day.
	TokensToday int64
	// Day is the current date in the configured zone ("2026-01-16"), by
	// the server's clock.
	Day string
}

// User returns the context of userID in one round trip; a user without
// one gets a zero context (with Day set). TokensToday is 0 once the day
// it counted is over, by the server's clock, even before the next append
// resets it. A field this package did not write is an error matching
// keys.ErrCorrupt that names the key.
func (m *Memory) User(ctx context.Context, userID string) (UserContext, error) {
	const op = "user"
	k, err := pkg.Key(op, userKey, m.opt.ns, userID)
	if err != nil {
		return UserContext{}, err
	}
	rep, err := m.runDay(ctx, userReadOp, []string{k})
	if err != nil {
		return UserContext{}, err
	}
	return decodeUser(&rep, k)
}

// decodeUser decodes user_read's reply for the user context at key k
// (User and Inspector.ReadView).
func decodeUser(rep *call.Reply, k string) (UserContext, error) {
	topics, hasTopics := rep.OptStr(0)
	prefs, hasPrefs := rep.OptStr(1)
	last, _ := rep.OptStr(2)
	u := UserContext{LastConversationID: last, TokensToday: rep.Int(3), Day: rep.Str(4)}
	if err := rep.Err(); err != nil {
		return UserContext{}, err
	}
	if hasTopics {
		if err := json.Unmarshal([]byte(topics), &u.RecentTopics); err != nil {
			rep.Corruptf(k, "recent_topics: %v", err)
			return UserContext{}, rep.Err()
		}
	}
	if hasPrefs {
		if !json.Valid([]byte(prefs)) {
			rep.Corruptf(k, "preferences are not JSON")
			return UserContext{}, rep.Err()
		}
		u.Preferences = json.RawMessage(prefs)
	}
	return u, nil
}

// AddTopics puts topics (the most recent last; 1 to the WithMaxTopics
// count, each non-empty valid UTF-8 of at most 256 bytes) at the
// front of the user's recent topics, dropping duplicates and keeping at
// most WithMaxTopics, in one round trip, and returns the list, most
// recent first. It extends the context's TTL. Idempotent.
func (m *Memory) AddTopics(ctx context.Context, userID string, topics ...string) ([]string, error) {
	const op = "add topics"
	if len(topics) == 0 || len(topics) > m.opt.maxTopics {
		return nil, pkg.Invalidf(op, "%d topics, want 1 to %d", len(topics), m.opt.maxTopics)
	}
	args := make([]any, 0, len(topics)+2)
	args = append(args, m.opt.maxTopics, unit.MsCeil(m.opt.userTTL))
	for _, t := range topics {
		if t == "" || len(t) > maxTopicBytes || !utf8.ValidString(t) {
			return nil, pkg.Invalidf(op, "topic %.40q: want non-empty valid UTF-8 of at most %d bytes", t, maxTopicBytes)
		}
		args = append(args, t)
	}
	k, err := pkg.Key(op, userKey, m.opt.ns, userID)
	if err != nil {
		return nil, err
	}
	rep, err := m.run.Run(ctx, topicsOp, []string{k}, args...)
	if err != nil {
		return nil, err
	}
	list := rep.Str(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	var out []string
	if err := json.Unmarshal([]byte(list), &out); err != nil {
		rep.Corruptf(k, "recent_topics: %v", err)
		return nil, rep.Err()
	}
	return out, nil
}

// SetPreferences stores the user's preferences, a JSON object of at most
// 64 KiB (compacted), in one round trip, and extends the
// context's TTL. Idempotent.
func (m *Memory) SetPreferences(ctx context.Context, userID string, prefs json.RawMessage) error {
	const op = "set preferences"
	var b bytes.Buffer
	if err := json.Compact(&b, prefs); err != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
		return pkg.Invalidf(op, "preferences are not a JSON object")
	}
	if b.Len() > maxPreferencesBytes {
		return pkg.Invalidf(op, "preferences of %d bytes, at most %d", b.Len(), maxPreferencesBytes)
	}
	k, err := pkg.Key(op, userKey, m.opt.ns, userID)
	if err != nil {
		return err
	}
	_, err = m.run.Run(ctx, userSetOp, []string{k}, preferencesField, b.Bytes(), unit.MsCeil(m.opt.userTTL))
	return err
}
