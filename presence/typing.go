package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed typing_start.lua
	typingStartLua string
	//go:embed typing_stop.lua
	typingStopLua string
	//go:embed typers.lua
	typersLua string

	typingStartScript = script.New(typingStartLua)
	typingStopScript  = script.New(typingStopLua)
	typersScript      = script.New(typersLua)
)

// Typer is one typing indicator, as seed 004 stores it.
type Typer struct {
	UserID   string    // "userId"
	Username string    // "username"
	At       time.Time // "timestamp": when StartTyping wrote it
}

type typerWire struct {
	UserID   *string `json:"userId"`
	Username string  `json:"username"`
	At       int64   `json:"timestamp"`
}

func (t *Tracker) typingKeys(op, conversation, user string) (typing, typers, throttle string, err error) {
	if typing, err = typingKey.Key(t.cfg.ns, conversation, user); err != nil {
		return "", "", "", fmt.Errorf("presence: %s: %w", op, err)
	}
	if typers, err = typersKey.Key(t.cfg.ns, conversation); err != nil {
		return "", "", "", fmt.Errorf("presence: %s: %w", op, err)
	}
	if throttle, err = throttleKey.Key(t.cfg.ns, conversation, user); err != nil {
		return "", "", "", fmt.Errorf("presence: %s: %w", op, err)
	}
	return typing, typers, throttle, nil
}

// StartTyping writes user's typing indicator in conversation (seed 004's
// typing:{conversation_id}:{user_id} JSON, profile TypingTTL, 3 s) and
// indexes it for Typers, in one atomic script (one round trip). It is
// throttled inside Redis to one accepted write per TypingThrottle (2 s) per
// user per conversation, so the throttle holds across app instances; it
// returns false, and writes nothing, when throttled. A StopTyping does not
// reset the throttle. Errors: keys.ErrInvalidKey for empty IDs,
// ErrInvalidInput for a username over MaxUsernameLen.
func (t *Tracker) StartTyping(ctx context.Context, conversation, user, username string) (bool, error) {
	const op = "start typing"
	typing, typers, throttle, err := t.typingKeys(op, conversation, user)
	if err != nil {
		return false, err
	}
	if err := checkText(op, "username", username, MaxUsernameLen, false); err != nil {
		return false, err
	}
	p := t.cfg.profile
	v, err := typingStartScript.Run(ctx, t.c, []string{typing, typers, throttle}, user, username, ms(p.TypingTTL), ms(p.TypingThrottle)).Result()
	if err != nil {
		return false, fmt.Errorf("presence: %s %s: %w", op, typing, err)
	}
	n, err := reply.Int64(v)
	if err != nil {
		return false, fmt.Errorf("presence: %s %s: %w", op, typing, err)
	}
	return n == 1, nil
}

// StopTyping clears user's typing indicator in conversation, in one atomic
// script (one round trip). It reports whether there was one.
func (t *Tracker) StopTyping(ctx context.Context, conversation, user string) (bool, error) {
	const op = "stop typing"
	typing, typers, _, err := t.typingKeys(op, conversation, user)
	if err != nil {
		return false, err
	}
	v, err := typingStopScript.Run(ctx, t.c, []string{typing, typers}).Result()
	if err != nil {
		return false, fmt.Errorf("presence: %s %s: %w", op, typing, err)
	}
	n, err := reply.Int64(v)
	if err != nil {
		return false, fmt.Errorf("presence: %s %s: %w", op, typing, err)
	}
	return n == 1, nil
}

// Typers returns who is typing in conversation now, from the
// conversation's index (one read-only script, one round trip; no KEYS).
// Indicators written by StartTyping appear until StopTyping or TypingTTL,
// one per user (the latest); indicators written around this package (a bare
// SETEX) are not indexed, and one deleted around it (a bare DEL) stays
// listed until its TypingTTL. Order: oldest expiry first.
func (t *Tracker) Typers(ctx context.Context, conversation string) ([]Typer, error) {
	const op = "typers"
	k, err := typersKey.Key(t.cfg.ns, conversation)
	if err != nil {
		return nil, fmt.Errorf("presence: %s: %w", op, err)
	}
	v, err := typersScript.Run(ctx, t.c, []string{k}).Result()
	if err != nil {
		return nil, fmt.Errorf("presence: %s %s: %w", op, k, err)
	}
	vals, err := reply.Strings(v)
	if err != nil {
		return nil, fmt.Errorf("presence: %s %s: %w", op, k, err)
	}
	all := make([]Typer, 0, len(vals))
	last := make(map[string]int, len(vals))
	for _, s := range vals {
		ty, err := decodeTyper(k, s)
		if err != nil {
			return nil, fmt.Errorf("presence: %s: %w", op, err)
		}
		last[ty.UserID] = len(all)
		all = append(all, ty)
	}
	// A user has one entry unless their typing key was deleted or evicted
	// around StartTyping/StopTyping (seed code's DEL, an LRU eviction);
	// the values come oldest expiry first, so each user's last one is the
	// latest.
	out := all[:0]
	for i, ty := range all {
		if last[ty.UserID] == i {
			out = append(out, ty)
		}
	}
	return out, nil
}

func decodeTyper(key, s string) (Typer, error) {
	var w typerWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Typer{}, keys.Corrupt(key, err)
	}
	if w.UserID == nil {
		return Typer{}, keys.Corrupt(key, errors.New("typing value without userId"))
	}
	return Typer{UserID: *w.UserID, Username: w.Username, At: fromMs(w.At)}, nil
}
