package dashboard

import (
	"errors"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

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
// the first online users, with ?user= that user's presence and
// connections (presence.Inspector.ReadView: OnlineNow, Get, Connections),
// the support admins with availability and load, and the unread queue
// and backlog, most urgent first (chat.Inspector.ReadView: Admins,
// Unread, Backlog). The two views are read concurrently, each in its own
// pipeline (one round trip per node each, sent at once), whether presence
// and chat share a client or live in two databases. A part that fails
// (data written with another presence layout, say) is reported in errors
// and the others still shown.
func (h *Handler) presenceChat(r *http.Request) (any, error) {
	ctx := r.Context()
	out := presenceReply{Online: []string{}, Admins: []adminRow{}, Unread: []waitingRow{}, Backlog: []waitingRow{},
		UnreadByPriority: map[string]int{}, Errors: map[string]string{}}
	user := r.URL.Query().Get("user")
	var pv presence.View
	var cv chat.View
	var perr, cerr error
	var g errgroup.Group // each read reports its own error: none stops the other
	g.Go(func() error { cv, cerr = h.chat.ReadView(ctx, maxListed); return nil })
	g.Go(func() error { pv, perr = h.presence.ReadView(ctx, user); return nil })
	_ = g.Wait()
	if errors.Is(perr, presence.ErrInvalid) { // the user ID, checked before any read
		return nil, badRequest("%v", perr)
	}
	if perr != nil {
		out.Errors["presence"] = perr.Error()
	}
	if cerr != nil {
		out.Errors["chat"] = cerr.Error()
	}

	out.OnlineCount = len(pv.Online)
	online := pv.Online
	if len(online) > maxListed {
		online = online[:maxListed]
	}
	out.Online = append(out.Online, online...)
	if p := pv.User; p != nil {
		u := &userPresence{ID: user, Status: string(p.Status), LastSeen: p.LastSeen.UTC(), Device: p.Device,
			Activity: p.Activity, Connections: []connRow{}}
		for _, c := range pv.Connections {
			u.Connections = append(u.Connections, connRow{ID: c.ID, Device: c.Metadata.Device, UserAgent: c.Metadata.UserAgent,
				ConnectedAt: c.ConnectedAt.UTC(), LastSeen: c.LastSeen.UTC()})
		}
		out.User = u
	}
	for _, a := range cv.Admins {
		out.Admins = append(out.Admins, adminRow{ID: a.ID, Availability: string(a.Availability), Capacity: a.Capacity, Assigned: a.Assigned})
	}
	out.Unread = waitingRows(cv.Unread)
	for _, w := range cv.Unread {
		out.UnreadByPriority[w.Priority.String()]++
	}
	out.Backlog = waitingRows(cv.Backlog)
	if len(out.Errors) == 0 {
		out.Errors = nil
	}
	return out, nil
}

// openPresenceChat builds the presence and chat inspectors the page
// reads through.
func (h *Handler) openPresenceChat() error {
	var err error
	popts := append([]presence.Option{presence.WithNamespace(h.opt.ns)}, h.opt.presenceOpts...)
	if h.presence, err = presence.NewInspector(h.cs.For(keys.Presence), popts...); err != nil {
		return err
	}
	copts := append([]chat.Option{chat.WithNamespace(h.opt.ns)}, h.opt.chatOpts...)
	h.chat, err = chat.NewInspector(h.cs.For(keys.Chat), copts...)
	return err
}
