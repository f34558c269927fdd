package dashboard

import (
	"errors"
	"net/http"
	"time"

	"github.com/redschema/redschema/aimemory"
)

type aiMessage struct {
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	Tokens    int       `json:"tokens"`
	Timestamp time.Time `json:"timestamp"`
}

type aiReply struct {
	User         string      `json:"user"`
	TokensToday  int64       `json:"tokens_today"`
	Day          string      `json:"day"`
	Topics       []string    `json:"recent_topics"`
	LastConv     string      `json:"last_conversation,omitempty"`
	Conversation string      `json:"conversation,omitempty"`
	Length       int         `json:"length"`
	Tokens       int         `json:"window_tokens"`
	Omitted      int         `json:"omitted"`
	Pending      int         `json:"pending_summary"`
	System       string      `json:"system,omitempty"`
	Summary      string      `json:"summary,omitempty"`
	Messages     []aiMessage `json:"messages"`
}

// maxShown bounds a message's content on the page.
const maxShown = 500

func clip(s string) string {
	if len(s) > maxShown {
		return s[:maxShown] + "…"
	}
	return s
}

// aiMemory answers the AI memory page for ?user=: the user's context
// (tokens counted today, recent topics, last conversation) and the
// window of ?conv= (default: the last conversation), as
// aimemory.Memory.User and Window return them. With ?conv= it is one
// pipeline (aimemory.Inspector.ReadView). Without, ?last= is the page's
// guess of the last conversation (the one it showed): the guess is read
// with the context in one pipeline, and only when the context names
// another last conversation is that one's window read after it (as it
// is without a guess).
func (h *Handler) aiMemory(r *http.Request) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	user := q.Get("user")
	if user == "" {
		return nil, badRequest("user is required")
	}
	var uc aimemory.UserContext
	var w aimemory.Window
	conv, guess := q.Get("conv"), q.Get("last")
	if conv == "" {
		conv = guess
	}
	if conv != "" {
		v, err := h.memoryInsp.ReadView(ctx, user, conv)
		if err != nil {
			return nil, aiErr(err)
		}
		uc, w = v.User, v.Window
	} else {
		var err error
		if uc, err = h.memory.User(ctx, user); err != nil {
			return nil, aiErr(err)
		}
	}
	if q.Get("conv") == "" && conv != uc.LastConversationID {
		// No guess, or a wrong one: the window of the last conversation.
		if conv = uc.LastConversationID; conv != "" {
			var err error
			if w, err = h.memory.Window(ctx, user, conv); err != nil {
				return nil, aiErr(err)
			}
		}
	}
	out := aiReply{User: user, TokensToday: uc.TokensToday, Day: uc.Day, Topics: uc.RecentTopics, LastConv: uc.LastConversationID,
		Messages: []aiMessage{}}
	if out.Topics == nil {
		out.Topics = []string{}
	}
	if conv == "" {
		return out, nil
	}
	out.Conversation, out.Length, out.Tokens, out.Omitted, out.Pending = conv, w.Length, w.Tokens, w.Omitted, w.Pending
	if w.System != nil {
		out.System = clip(w.System.Content)
	}
	if w.Summary != nil {
		out.Summary = clip(w.Summary.Text)
	}
	for _, m := range w.Messages {
		out.Messages = append(out.Messages, aiMessage{Role: string(m.Role), Content: clip(m.Content), Tokens: m.Tokens, Timestamp: m.Timestamp.UTC()})
	}
	return out, nil
}

func aiErr(err error) error {
	if errors.Is(err, aimemory.ErrInvalid) {
		return badRequest("%v", err)
	}
	return err
}
