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
// (aimemory.Memory.User: tokens counted today, recent topics, last
// conversation) and the window of ?conv= (default: the last
// conversation) as Window returns it.
func (h *Handler) aiMemory(r *http.Request) (any, error) {
	ctx := r.Context()
	user := r.URL.Query().Get("user")
	if user == "" {
		return nil, badRequest("user is required")
	}
	uc, err := h.memory.User(ctx, user)
	if err != nil {
		return nil, aiErr(err)
	}
	out := aiReply{User: user, TokensToday: uc.TokensToday, Day: uc.Day, Topics: uc.RecentTopics, LastConv: uc.LastConversationID,
		Messages: []aiMessage{}}
	if out.Topics == nil {
		out.Topics = []string{}
	}
	conv := r.URL.Query().Get("conv")
	if conv == "" {
		conv = uc.LastConversationID
	}
	if conv == "" {
		return out, nil
	}
	w, err := h.memory.Window(ctx, user, conv)
	if err != nil {
		return nil, aiErr(err)
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
