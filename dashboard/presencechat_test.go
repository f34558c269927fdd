package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

type presenceReply struct {
	OnlineCount int `json:"online_count"`
	Online      []string
	User        *struct {
		Status      string
		Connections []struct{ ID, Device string }
	}
	Admins []struct {
		ID, Availability   string
		Capacity, Assigned int
	}
	Unread           []struct{ Conversation, Priority string }
	UnreadByPriority map[string]int `json:"unread_by_priority"`
	Backlog          []struct{ Conversation, Priority string }
	Errors           map[string]string
}

func TestPresenceChat(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var r presenceReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/presence?user="+demo.User, &r))
	require.Empty(t, r.Errors)
	require.Equal(t, 1, r.OnlineCount)
	require.Equal(t, []string{demo.User}, r.Online)
	require.NotNil(t, r.User)
	require.Equal(t, "online", r.User.Status)
	require.Len(t, r.User.Connections, len(demo.Devices))

	// The numbers are the chat package's own.
	ch, err := chat.New(f.env.Client, chat.WithNamespace(f.env.NS))
	require.NoError(t, err)
	admins, err := ch.Admins(f.env.Ctx())
	require.NoError(t, err)
	require.Len(t, r.Admins, len(admins))
	for i, a := range admins {
		require.Equal(t, a.ID, r.Admins[i].ID)
		require.Equal(t, string(a.Availability), r.Admins[i].Availability)
		require.Equal(t, a.Assigned, r.Admins[i].Assigned)
	}
	require.Len(t, r.Admins, 2)
	unread, err := ch.Unread(f.env.Ctx(), 50)
	require.NoError(t, err)
	require.Len(t, r.Unread, len(unread))
	backlog, err := ch.Backlog(f.env.Ctx(), 50)
	require.NoError(t, err)
	require.Len(t, r.Backlog, len(backlog))
	// alice (online, capacity 2) took the two most urgent; the rest wait.
	require.Equal(t, demo.Admin, r.Admins[0].ID)
	require.Equal(t, demo.AdminCapacity, r.Admins[0].Assigned)
	require.Equal(t, "offline", r.Admins[1].Availability)
	require.Len(t, r.Backlog, len(demo.Conversations)-demo.AdminCapacity)
	require.Equal(t, "conv-normal", r.Backlog[0].Conversation)
	require.Len(t, r.Unread, len(demo.Conversations))
	require.Equal(t, "conv-urgent", r.Unread[0].Conversation)
	require.Equal(t, map[string]int{"urgent": 1, "high": 1, "normal": 1, "low": 1}, r.UnreadByPriority)
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/presence?user=%FF", nil))

	// Presence and chat on two clients (two databases, in an application):
	// each view is read on its own, at once, and shows the same.
	want := r
	two := keys.Layout{keys.Chat: 1}.Open(0, false, func(db int) redisClient {
		if db == 1 {
			return f.env.FreshClient() // the same data: the test has one database
		}
		return f.env.Client
	})
	h, err := dashboard.New(dashboard.WithClients(two), dashboard.WithNamespace(f.env.NS), dashboard.WithToken(testToken))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	f2 := &fixture{env: f.env, srv: newServer(t, h)}
	r = presenceReply{}
	require.Equal(t, http.StatusOK, f2.get(t, "/api/presence?user="+demo.User, &r))
	require.Equal(t, want, r)
	require.Equal(t, http.StatusBadRequest, f2.get(t, "/api/presence?user=%FF", nil))
}

// A part that fails is reported, and the others shown.
func TestPresenceChatPartFails(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithPresence(presence.WithoutOnlineIndex()))
	var r presenceReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/presence?user="+demo.User, &r))
	require.Contains(t, r.Errors["presence"], "online index disabled")
	require.NotContains(t, r.Errors, "chat")
	require.Zero(t, r.OnlineCount)
	require.NotNil(t, r.User)
	require.Equal(t, "online", r.User.Status)
	require.Len(t, r.User.Connections, len(demo.Devices))
	require.Len(t, r.Admins, 2)
	require.Len(t, r.Unread, len(demo.Conversations))
}
