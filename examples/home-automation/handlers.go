package main

import (
	"net/http"
	"sort"
	"strconv"
	"sync"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/session"
)

// device is one controllable thing in the home.
type device struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	ChangedBy string `json:"changed_by,omitempty"`
}

// devices is the home's device registry (in memory here).
type devices struct {
	mu sync.Mutex
	by map[string]device
}

func newDevices() *devices {
	d := &devices{by: map[string]device{}}
	for id, state := range map[string]string{"living-room-light": "off", "hallway-thermostat": "20.5", "front-door-lock": "locked"} {
		d.by[id] = device{ID: id, State: state}
	}
	return d
}

func (a *app) listDevices(w http.ResponseWriter, r *http.Request) {
	a.devices.mu.Lock()
	out := make([]device, 0, len(a.devices.by))
	for _, d := range a.devices.by {
		out = append(out, d)
	}
	a.devices.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	reply(w, http.StatusOK, out, nil)
}

// setDevice changes a device's state: {"state"}. Users with status login only.
func (a *app) setDevice(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State string `json:"state"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	a.devices.mu.Lock()
	d, ok := a.devices.by[r.PathValue("id")]
	if ok && in.State != "" {
		d.State, d.ChangedBy = in.State, session.FromContext(r.Context()).UserID
		a.devices.by[d.ID] = d
	}
	a.devices.mu.Unlock()
	switch {
	case !ok:
		reply(w, 0, nil, errStatus(http.StatusNotFound, "no such device"))
	case in.State == "":
		reply(w, 0, nil, errStatus(http.StatusBadRequest, "state required"))
	default:
		reply(w, http.StatusOK, d, nil)
	}
}

// A user's support conversation has the user's ID: one open conversation
// per user at a time.

// openConversation opens the user's conversation (?priority=urgent|high|
// normal|low): it goes to the least-loaded online admin with room, or
// waits in the backlog.
func (a *app) openConversation(w http.ResponseWriter, r *http.Request) {
	uid := session.FromContext(r.Context()).UserID
	as, err := a.chat.Open(r.Context(), uid, chat.Priority(r.URL.Query().Get("priority")))
	reply(w, http.StatusOK, map[string]any{"conversation": as.Conversation, "admin": as.Admin, "opened": as.Opened}, err)
}

// userMessage adds the user's message {"content"}: the conversation
// becomes unread for its admin.
func (a *app) userMessage(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	uid := session.FromContext(r.Context()).UserID
	m, err := a.chat.Append(r.Context(), uid, chat.Message{Content: in.Content, SenderRole: chat.User, SenderID: uid})
	reply(w, http.StatusCreated, m, err)
}

func (a *app) userMessages(w http.ResponseWriter, r *http.Request) {
	a.messagesOf(w, r, session.FromContext(r.Context()).UserID)
}

func (a *app) conversationMessages(w http.ResponseWriter, r *http.Request) {
	a.messagesOf(w, r, r.PathValue("id"))
}

// messagesOf returns a page of the conversation's cached messages, newest
// first (?limit=20&before=ID).
func (a *app) messagesOf(w http.ResponseWriter, r *http.Request, id string) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 {
		limit = 20
	}
	var before int64 // 0: from the newest
	if b, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64); err == nil {
		before = b
	}
	page, err := a.chat.Messages(r.Context(), id, limit, before)
	if page == nil {
		page = []chat.Message{}
	}
	reply(w, http.StatusOK, page, err)
}

// setPresence sets the calling admin's availability {"status":
// "online"|"away"|"busy"|"offline"} for 30 minutes, and reconciles at
// once: an admin going offline has their conversations handed to others
// now, one coming online takes the backlog.
func (a *app) setPresence(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status presence.Status `json:"status"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	me := session.FromContext(r.Context()).UserID
	if err := a.chat.Availability().Set(r.Context(), me, in.Status); err != nil {
		reply(w, 0, nil, err)
		return
	}
	rec, err := a.chat.Reconcile(r.Context())
	reply(w, http.StatusOK, map[string]any{"admin": me, "status": in.Status, "requeued": rec.Requeued, "assigned": rec.Assigned}, err)
}

// team lists the admins with their availability and load.
func (a *app) team(w http.ResponseWriter, r *http.Request) {
	admins, err := a.chat.Admins(r.Context())
	reply(w, http.StatusOK, admins, err)
}

// queue shows the unread queue (most urgent, then oldest, first), the
// backlog and the calling admin's assignments.
func (a *app) queue(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	unread, err := a.chat.Unread(ctx, 100)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	backlog, err := a.chat.Backlog(ctx, 100)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	mine, err := a.chat.Assignments(ctx, session.FromContext(ctx).UserID)
	sort.Strings(mine)
	reply(w, http.StatusOK, map[string]any{"unread": waiting(unread), "backlog": waiting(backlog), "assigned_to_me": mine}, err)
}

func waiting(ws []chat.Waiting) []map[string]any {
	out := []map[string]any{}
	for _, x := range ws {
		out = append(out, map[string]any{"conversation": x.Conversation, "priority": x.Priority, "since": x.Since})
	}
	return out
}

// dashboard is the calling admin's dashboard, computed once per 5 minutes
// across instances (or when its numbers change).
func (a *app) dashboard(w http.ResponseWriter, r *http.Request) {
	d, err := a.chat.Dashboard(r.Context(), session.FromContext(r.Context()).UserID)
	reply(w, http.StatusOK, map[string]any{
		"total_active": d.TotalActive, "assigned_to_me": d.AssignedToMe, "unread_count": d.UnreadCount,
		"avg_response_time": d.AvgResponse.Minutes(), "resolved_today": d.ResolvedToday, "cached": d.Cached,
	}, err)
}

// adminReply answers a conversation assigned to the calling admin
// {"content"}: it leaves the unread queue and the response time counts.
func (a *app) adminReply(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	ctx, id, me := r.Context(), r.PathValue("id"), session.FromContext(r.Context()).UserID
	c, err := a.chat.Conversation(ctx, id)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	if c.Admin != me {
		reply(w, 0, nil, errStatus(http.StatusConflict, "conversation %s is assigned to %q", id, c.Admin))
		return
	}
	m, err := a.chat.Append(ctx, id, chat.Message{Content: in.Content, SenderRole: chat.Admin, SenderID: me})
	reply(w, http.StatusCreated, m, err)
}

// resolve closes a conversation; its admin's place goes to the backlog.
func (a *app) resolve(w http.ResponseWriter, r *http.Request) {
	admin, err := a.chat.Resolve(r.Context(), r.PathValue("id"))
	reply(w, http.StatusOK, map[string]string{"resolved_by": admin}, err)
}

// block refuses the user at once, valid sessions included (seed 000:
// "instant user control without waiting for session expiry").
func (a *app) block(w http.ResponseWriter, r *http.Request) {
	err := a.users.Block(r.Context(), r.PathValue("id"))
	reply(w, http.StatusOK, map[string]any{"user_id": r.PathValue("id"), "blocked": true}, err)
}

func (a *app) unblock(w http.ResponseWriter, r *http.Request) {
	err := a.users.Unblock(r.Context(), r.PathValue("id"))
	reply(w, http.StatusOK, map[string]any{"user_id": r.PathValue("id"), "blocked": false}, err)
}

// showMetrics reads seed 000's counters across every instance (one
// pipeline).
func (a *app) showMetrics(w http.ResponseWriter, r *http.Request) {
	snap, err := a.reader.Read(r.Context())
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	h := snap.HTTP
	endpoints := map[string][2]int64{}
	for _, e := range h.Endpoints {
		endpoints[e.Endpoint] = [2]int64{e.Requests, e.Errors}
	}
	reply(w, http.StatusOK, map[string]any{
		"requests_total": h.Total, "requests_accepted": h.Accepted, "errors_total": h.Errors,
		"connections_current": h.Connections, "connections_max_since_startup": h.MaxConnections,
		"speed_per_second": h.Speed, "max_speed_per_second": h.MaxSpeed,
		"endpoints": endpoints, // "METHOD route" -> [requests, errors]
	}, nil)
}

func (a *app) showAudit(w http.ResponseWriter, r *http.Request) {
	res, err := a.audit(r.Context())
	reply(w, http.StatusOK, res, err)
}
