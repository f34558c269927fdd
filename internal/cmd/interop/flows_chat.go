package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
)

// chatFlows: seed 000 §5, the support chat, with chat.WithoutTag (every
// key the backend's, admin availability at ha:admin:{id}:presence).
func chatFlows() []flow {
	return []flow{
		{seed: "000", name: "chat admin presence node->go", area: "presence", clients: nodeRedis, run: chatPresenceNodeGo},
		{seed: "000", name: "chat assignment go->node", area: "chat", clients: nodeRedis, run: chatGoNode},
		{seed: "000", name: "chat assignment node->go", area: "chat", clients: nodeRedis, run: chatAssignNodeGo,
			documented: "the backend assigns with SADD/ZADD from the application (check-then-act): the library has no state for the conversation, and a routing call repairs the assignment away; move assignment first: docs/chat.md#sharing-the-backends-keys"},
		{seed: "000", name: "chat unread queue node->go", area: "chat", clients: nodeRedis, run: chatUnreadNodeGo,
			documented: "the backend's unread score (weight + Date.now()) does not order by priority and has no state with it: Unread skips it: docs/chat.md#sharing-the-backends-keys"},
		{seed: "000", name: "chat messages node->go", area: "chat", clients: nodeRedis, run: chatMessagesNodeGo},
		{seed: "000", name: "chat messages both append", area: "chat", clients: nodeRedis, run: chatMessagesBoth,
			documented: "the backend caches its database's message IDs (789), the library numbers a conversation's messages 1, 2, 3: once both append to one conversation, Messages reports it corrupt: docs/chat.md#sharing-the-backends-keys"},
		{seed: "000", name: "chat dashboard node->go", area: "chat", clients: nodeRedis, run: chatDashboardNodeGo},
	}
}

func newChat(e *env) (*chat.Chat, error) {
	return chat.New(e.rdb, chat.WithNamespace(ha), chat.WithoutTag())
}

var chatIDs = map[string]string{"admin": "123", "conv": "456"}

// chatAssigned is the library's chat with admin 123 online on the roster
// and conversation 456 opened (and so assigned to it).
func chatAssigned(ctx context.Context, e *env) (*chat.Chat, error) {
	c, err := newChat(e)
	if err != nil {
		return nil, err
	}
	if err := c.Availability().Set(ctx, "123", "online"); err != nil {
		return nil, err
	}
	if err := c.AddAdmin(ctx, "123", 0); err != nil {
		return nil, err
	}
	if _, err := c.Open(ctx, "456", chat.High); err != nil {
		return nil, err
	}
	return c, nil
}

// chatPresenceNodeGo: the backend sets admin 123 online (no TTL through
// node-redis); the library's routing takes it as available and assigns
// it a conversation; the backend's workload check then counts it.
func chatPresenceNodeGo(ctx context.Context, e *env) error {
	c, err := newChat(e)
	if err != nil {
		return err
	}
	if err := e.node(ctx, "adminOnline", chatIDs, nil); err != nil {
		return err
	}
	if err := c.AddAdmin(ctx, "123", 0); err != nil {
		return err
	}
	a, err := c.Open(ctx, "456", chat.High)
	if err != nil || a.Admin != "123" {
		return diverge("Open with the backend's admin online: %+v, %v", a, err)
	}
	var got availability
	if err := e.node(ctx, "adminAvailable", chatIDs, &got); err != nil {
		return err
	}
	if !got.Available || got.Assignments != 1 {
		return diverge("the backend's workload check: %+v", got)
	}
	return nil
}

type chatRead struct {
	Assignments int    `json:"assignments"`
	IsOnline    string `json:"isOnline"`
	Assigned    bool   `json:"assigned"`
	Active      []string
	Unread      []string
	Messages    []struct {
		ID         int64  `json:"id"`
		Content    string `json:"content"`
		SenderRole string `json:"sender_role"`
		Timestamp  string `json:"timestamp"`
	}
	Dashboard map[string]string
}

// chatGoNode: the library sets the admin online, opens and assigns a
// conversation, appends a user's message and the admin's reply, computes
// the dashboard; the backend's reads find each at its keys.
func chatGoNode(ctx context.Context, e *env) error {
	c, err := chatAssigned(ctx, e)
	if err != nil {
		return err
	}
	if _, err := c.Append(ctx, "456", chat.Message{Content: "My lights are off", SenderRole: chat.User, SenderID: "u1"}); err != nil {
		return err
	}
	var got chatRead
	if err := e.node(ctx, "read", chatIDs, &got); err != nil {
		return err
	}
	if got.Assignments != 1 || got.IsOnline != "online" || !got.Assigned ||
		!slices.Equal(got.Active, []string{"456"}) || !slices.Equal(got.Unread, []string{"456"}) ||
		len(got.Messages) != 1 || got.Messages[0].Content != "My lights are off" || got.Messages[0].SenderRole != "user" {
		return diverge("the backend reads %+v", got)
	}
	if _, err := c.Append(ctx, "456", chat.Message{Content: "Hello, how can I help?", SenderRole: chat.Admin, SenderID: "123"}); err != nil {
		return err
	}
	if _, err := c.Dashboard(ctx, "123"); err != nil {
		return err
	}
	if err := e.node(ctx, "read", chatIDs, &got); err != nil {
		return err
	}
	if len(got.Messages) != 2 || got.Messages[0].Content != "Hello, how can I help?" || got.Messages[0].SenderRole != "admin" ||
		len(got.Unread) != 0 || got.Dashboard["total_active"] != "1" || got.Dashboard["assigned_to_me"] != "1" ||
		got.Dashboard["unread_count"] != "0" || got.Dashboard["avg_response_time"] == "" {
		return diverge("the backend reads %+v after the admin's reply", got)
	}
	return nil
}

// nodeAssign runs the backend's assignment snippets (assignment, unread
// queue, message cache, dashboard) for admin 123 and conversation 456.
// The seed's positional zAdd(key, score, member) throws TypeError in
// node-redis 4 and 6 before anything is sent (the client takes
// { score, value }): the Node side runs the snippet literally, then in
// the object form, and the flow checks that the literal one threw, so
// that a client that accepts it is noticed.
func nodeAssign(ctx context.Context, e *env) error {
	var errs map[string]*string
	if err := e.node(ctx, "assign", chatIDs, &errs); err != nil {
		return err
	}
	for _, s := range []string{"assign", "unread"} {
		if errs[s] == nil {
			return fmt.Errorf("the seed's literal %s snippet ran in %s: drop its adapted form in interop/flows/chat.js and the note in docs/chat.md", s, e.client)
		}
	}
	return nil
}

// chatAssignNodeGo: the backend assigns conversation 456 to admin 123;
// the library should see it open and assigned to 123. What it does
// instead (docs/chat.md): the conversation has no state, so the next
// routing call repairs the assignment away.
func chatAssignNodeGo(ctx context.Context, e *env) error {
	c, err := newChat(e)
	if err != nil {
		return err
	}
	if err := nodeAssign(ctx, e); err != nil {
		return err
	}
	ids, err := c.Assignments(ctx, "123")
	if err != nil || !slices.Equal(ids, []string{"456"}) {
		return diverge("Assignments of the backend's admin: %q, %v", ids, err)
	}
	act, err := c.Active(ctx, 10)
	if err != nil || len(act) != 1 || act[0].Conversation != "456" {
		return diverge("Active after the backend's assignment: %+v, %v", act, err)
	}
	conv, err := c.Conversation(ctx, "456")
	if err == nil && conv.Admin == "123" {
		return nil
	}
	if !errors.Is(err, chat.ErrNotFound) {
		return fmt.Errorf("chat Conversation of what the backend assigned: %+v, %v", conv, err)
	}
	if err := c.AddAdmin(ctx, "123", 0); err != nil {
		return err
	}
	if _, err := c.Reconcile(ctx); err != nil {
		return err
	}
	if n, err := e.rdb.SCard(ctx, "ha:admin:123:assignments").Result(); err != nil || n != 0 {
		return fmt.Errorf("the backend's assignment after a routing call: %d members, %v (docs/chat.md: repaired away)", n, err)
	}
	return diverge("the library has no state for the conversation the backend assigned (ErrNotFound); a routing call removed the assignment")
}

// chatUnreadNodeGo: the backend queues conversation 456 as unread with a
// high priority; the library's Unread should list it as High. What it
// does instead (docs/chat.md): it skips a member without a state.
func chatUnreadNodeGo(ctx context.Context, e *env) error {
	c, err := newChat(e)
	if err != nil {
		return err
	}
	if err := nodeAssign(ctx, e); err != nil {
		return err
	}
	w, err := c.Unread(ctx, 10)
	switch {
	case err != nil:
		return err
	case len(w) == 1 && w[0].Conversation == "456" && w[0].Priority == chat.High && time.Since(w[0].Since).Abs() < time.Minute:
		return nil
	case len(w) != 0:
		return fmt.Errorf("chat Unread lists the backend's conversation as %+v: neither what it meant nor skipped", w)
	}
	return diverge("Unread skips the conversation the backend queued (no state; its score is weight + Date.now())")
}

// chatMessagesNodeGo: the backend caches a message for conversation 456;
// the library's Messages should return it.
func chatMessagesNodeGo(ctx context.Context, e *env) error {
	c, err := newChat(e)
	if err != nil {
		return err
	}
	if err := nodeAssign(ctx, e); err != nil {
		return err
	}
	ms, err := c.Messages(ctx, "456", 20, 0)
	if err != nil || len(ms) != 1 || ms[0].ID != 789 || ms[0].Content != "Hello, how can I help?" || ms[0].SenderRole != chat.Admin {
		return diverge("Messages of the backend's cache: %+v, %v", ms, err)
	}
	return nil
}

// chatMessagesBoth: the library opens conversation 456 and appends a
// message; the backend caches one of its own; the library appends again
// and reads all three.
func chatMessagesBoth(ctx context.Context, e *env) error {
	c, err := chatAssigned(ctx, e)
	if err != nil {
		return err
	}
	if _, err := c.Append(ctx, "456", chat.Message{Content: "My lights are off", SenderRole: chat.User}); err != nil {
		return err
	}
	if err := e.node(ctx, "cacheMessage", chatIDs, nil); err != nil {
		return err
	}
	m, err := c.Append(ctx, "456", chat.Message{Content: "Still off", SenderRole: chat.User})
	if err != nil {
		return diverge("Append after the backend's message: %v", err)
	}
	ms, err := c.Messages(ctx, "456", 20, 0)
	switch {
	case err == nil && len(ms) == 3:
		return nil
	case !errors.Is(err, keys.ErrCorrupt):
		return fmt.Errorf("chat Messages after the backend's message: %+v, %v (docs/chat.md: reported corrupt)", ms, err)
	}
	return diverge("Append after the backend's message 789 gave ID %d, and Messages reports the list corrupt", m.ID)
}

// chatDashboardNodeGo: the backend writes admin 123's dashboard cache
// (without computed_at); the library's Dashboard computes its own and
// replaces it (its numbers are from the keys, not the backend's last
// process), and the backend's HGETALL then reads the library's.
func chatDashboardNodeGo(ctx context.Context, e *env) error {
	c, err := newChat(e)
	if err != nil {
		return err
	}
	if err := nodeAssign(ctx, e); err != nil {
		return err
	}
	d, err := c.Dashboard(ctx, "123")
	if err != nil || d.Cached {
		return diverge("Dashboard over the backend's cache: %+v, %v", d, err)
	}
	var got chatRead
	if err := e.node(ctx, "read", chatIDs, &got); err != nil {
		return err
	}
	if got.Dashboard["total_active"] != strconv.Itoa(d.TotalActive) || got.Dashboard["assigned_to_me"] != strconv.Itoa(d.AssignedToMe) ||
		got.Dashboard["computed_at"] == "" {
		return diverge("the backend reads the dashboard %v after the library's %+v", got.Dashboard, d)
	}
	return nil
}
