package dashboard

import (
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// maxListed bounds the online users, unread and backlog conversations the
// presence and chat page lists.
const maxListed = 50

type connRow struct {
	ID          string    `json:"id"`
	Device      string    `json:"device,omitempty"`
	UserAgent   string    `json:"user_agent,omitempty"`
	ConnectedAt time.Time `json:"connected_at"`
	LastSeen    time.Time `json:"last_seen"`
}

type userPresence struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	LastSeen    time.Time `json:"last_seen"`
	Device      string    `json:"device,omitempty"`
	Activity    string    `json:"activity,omitempty"`
	Connections []connRow `json:"connections"`
}

type adminRow struct {
	ID           string `json:"id"`
	Availability string `json:"availability"`
	Capacity     int    `json:"capacity"`
	Assigned     int    `json:"assigned"`
}

type waitingRow struct {
	Conversation string    `json:"conversation"`
	Priority     string    `json:"priority"`
	Since        time.Time `json:"since"`
}

type presenceReply struct {
	OnlineCount      int               `json:"online_count"`
	Online           []string          `json:"online"` // the first maxListed, sorted
	User             *userPresence     `json:"user,omitempty"`
	Admins           []adminRow        `json:"admins"`
	Unread           []waitingRow      `json:"unread"`
	UnreadByPriority map[string]int    `json:"unread_by_priority"`
	Backlog          []waitingRow      `json:"backlog"`
	Errors           map[string]string `json:"errors,omitempty"`
}

func waitingRows(ws []chat.Waiting) []waitingRow {
	out := []waitingRow{}
	for _, w := range ws {
		out = append(out, waitingRow{Conversation: w.Conversation, Priority: w.Priority.String(), Since: w.Since.UTC()})
	}
	return out
}

// presenceChat answers the presence and chat page: the online count and
// the first online users (presence.Tracker.OnlineCount, OnlineNow), with
// ?user= that user's presence and connections (Get, Connections), the
// support admins with availability and load (chat.Chat.Admins), and the
// unread queue and backlog (Unread, Backlog, most urgent first). A part
// that fails (data written with another presence layout, say) is
// reported in errors and the others still shown.
func (h *Handler) presenceChat(r *http.Request) (any, error) {
	ctx := r.Context()
	out := presenceReply{Online: []string{}, Admins: []adminRow{}, Unread: []waitingRow{}, Backlog: []waitingRow{},
		UnreadByPriority: map[string]int{}, Errors: map[string]string{}}
	fail := func(part string, err error) { out.Errors[part] = err.Error() }

	if n, err := h.presence.OnlineCount(ctx); err != nil {
		fail("online_count", err)
	} else {
		out.OnlineCount = n
	}
	if users, err := h.presence.OnlineNow(ctx); err != nil {
		fail("online", err)
	} else {
		sort.Strings(users)
		if len(users) > maxListed {
			users = users[:maxListed]
		}
		out.Online = append(out.Online, users...)
	}
	if user := r.URL.Query().Get("user"); user != "" {
		p, err := h.presence.Get(ctx, user)
		if errors.Is(err, presence.ErrInvalid) {
			return nil, badRequest("%v", err)
		}
		if err != nil {
			fail("user", err)
		} else {
			u := &userPresence{ID: user, Status: string(p.Status), LastSeen: p.LastSeen.UTC(), Device: p.Device,
				Activity: p.Activity, Connections: []connRow{}}
			conns, err := h.presence.Connections(ctx, user)
			if err != nil {
				fail("connections", err)
			}
			for _, c := range conns {
				u.Connections = append(u.Connections, connRow{ID: c.ID, Device: c.Metadata.Device, UserAgent: c.Metadata.UserAgent,
					ConnectedAt: c.ConnectedAt.UTC(), LastSeen: c.LastSeen.UTC()})
			}
			out.User = u
		}
	}
	if admins, err := h.chat.Admins(ctx); err != nil {
		fail("admins", err)
	} else {
		for _, a := range admins {
			out.Admins = append(out.Admins, adminRow{ID: a.ID, Availability: string(a.Availability), Capacity: a.Capacity, Assigned: a.Assigned})
		}
	}
	if ws, err := h.chat.Unread(ctx, maxListed); err != nil {
		fail("unread", err)
	} else {
		out.Unread = waitingRows(ws)
		for _, w := range ws {
			out.UnreadByPriority[w.Priority.String()]++
		}
	}
	if ws, err := h.chat.Backlog(ctx, maxListed); err != nil {
		fail("backlog", err)
	} else {
		out.Backlog = waitingRows(ws)
	}
	if len(out.Errors) == 0 {
		out.Errors = nil
	}
	return out, nil
}

// openPresenceChat builds the tracker and the chat client the page reads.
func (h *Handler) openPresenceChat() error {
	var err error
	popts := append([]presence.Option{presence.WithNamespace(h.opt.ns)}, h.opt.presenceOpts...)
	if h.presence, err = presence.New(h.cs.For(keys.Presence), popts...); err != nil {
		return err
	}
	copts := append([]chat.Option{chat.WithNamespace(h.opt.ns)}, h.opt.chatOpts...)
	h.chat, err = chat.New(h.cs.For(keys.Chat), copts...)
	return err
}
