package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// presenceFlows: seed 000 §5 admin availability (presence.WithOtherWriters),
// seed 002's presence key and connections hash (DetailedProfile), seed
// 004's compact presence (CompactProfile) and typing indicators
// (WithOtherWriters).
func presenceFlows() []flow {
	all := []string{"ioredis6", "redis4", "redis6"}
	ioredis := []string{"ioredis6"}
	return []flow{
		{seed: "000", name: "presence admin availability node->go", area: "presence", clients: nodeRedis, run: adminNodeGo},
		{seed: "000", name: "presence admin availability go->node", area: "presence", clients: nodeRedis, run: adminGoNode},
		{seed: "002", name: "presence connections node->go", area: "presence", clients: all, run: serviceNodeGo},
		{seed: "002", name: "presence connections go->node", area: "presence", clients: all, run: serviceGoNode},
		{seed: "004", name: "presence compact node->go", area: "presence", clients: ioredis, run: compactNodeGo},
		{seed: "004", name: "presence compact go->node", area: "presence", clients: ioredis, run: compactGoNode},
		{seed: "004", name: "presence typing node->go", area: "presence", clients: ioredis, run: typingNodeGo},
		{seed: "004", name: "presence typing go->node", area: "presence", clients: ioredis, run: typingGoNode},
	}
}

// bare is the presence service's and the chat app's namespace (seeds 002,
// 004): no prefix, no hash tags.
var bare = keys.Namespace{NoHashTags: true}

type availability struct {
	Available   bool    `json:"available"`
	IsOnline    *string `json:"isOnline"`
	Assignments int     `json:"assignments"`
}

// adminNodeGo: the backend sets an admin online with its literal
// set(k, 'online', 'EX', 1800), which node-redis stores without a TTL;
// the library reads the word (another writer's), and its next Set gives
// the key the 30-minute TTL.
func adminNodeGo(ctx context.Context, e *env) error {
	t, err := presence.New(e.rdb, presence.WithNamespace(ha), presence.WithOtherWriters())
	if err != nil {
		return err
	}
	if err := e.node(ctx, "adminOnline", map[string]string{"admin": "123"}, nil); err != nil {
		return err
	}
	// The no-TTL write docs/presence.md describes: a client that applies
	// the positional EX would make that page wrong.
	if ttl, err := e.rdb.TTL(ctx, "ha:admin:123:presence").Result(); err != nil || ttl != -1 {
		return fmt.Errorf("the seed's set(k, 'online', 'EX', 1800) left TTL %v (%v); docs/presence.md says none", ttl, err)
	}
	av := t.Availability()
	s, err := av.Get(ctx, "123")
	if err != nil || s != presence.Online {
		return diverge("Get of the backend's availability: %q, %v", s, err)
	}
	if err := av.Set(ctx, "123", presence.Online); err != nil {
		return err
	}
	ttl, err := e.rdb.TTL(ctx, "ha:admin:123:presence").Result()
	if err != nil {
		return err
	}
	if ttl <= 0 || ttl > 30*time.Minute {
		return diverge("after Set the key's TTL is %v, want up to 30m", ttl)
	}
	var got availability
	if err := e.node(ctx, "adminAvailable", map[string]string{"admin": "123"}, &got); err != nil {
		return err
	}
	if !got.Available {
		return diverge("the backend's workload check after Set: %+v", got)
	}
	return nil
}

// adminGoNode: the library sets an admin away, then online; the backend's
// workload check follows.
func adminGoNode(ctx context.Context, e *env) error {
	t, err := presence.New(e.rdb, presence.WithNamespace(ha), presence.WithOtherWriters())
	if err != nil {
		return err
	}
	for _, s := range []presence.Status{presence.Away, presence.Online} {
		if err := t.Availability().Set(ctx, "123", s); err != nil {
			return err
		}
		var got availability
		if err := e.node(ctx, "adminAvailable", map[string]string{"admin": "123"}, &got); err != nil {
			return err
		}
		if got.IsOnline == nil || *got.IsOnline != string(s) || got.Available != (s == presence.Online) {
			return diverge("the backend reads %+v after Set(%s)", got, s)
		}
	}
	return nil
}

func serviceTracker(e *env) (*presence.Tracker, error) {
	return presence.New(e.rdb, presence.WithNamespace(bare), presence.WithProfile(presence.DetailedProfile()))
}

type svcConn struct {
	User              string            `json:"user"`
	Conn              string            `json:"conn"`
	ActiveConnections int               `json:"activeConnections"`
	Metadata          map[string]string `json:"metadata"`
}

// serviceNodeGo: the presence service connects a user on two devices and
// heartbeats; the library reads the user online with both connections,
// takes a heartbeat of the service's connection and a disconnect; the
// service then reads what the library left.
func serviceNodeGo(ctx context.Context, e *env) error {
	t, err := serviceTracker(e)
	if err != nil {
		return err
	}
	web := map[string]string{"device": "web", "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)", "ip": "192.168.1.1", "socketId": "socket_abc123"}
	mobile := map[string]string{"device": "mobile", "ip": "192.168.1.2", "socketId": "socket_def456"}
	if err := e.node(ctx, "svcConnect", svcConn{User: "12345", Conn: "conn_123", ActiveConnections: 1, Metadata: web}, nil); err != nil {
		return err
	}
	if err := e.node(ctx, "svcConnect", svcConn{User: "12345", Conn: "conn_456", ActiveConnections: 2, Metadata: mobile}, nil); err != nil {
		return err
	}
	p, err := t.Get(ctx, "12345")
	if err != nil {
		return diverge("Get of the service's presence: %v", err)
	}
	if !p.Online() || p.Connections != 2 || p.Device != "mobile" || p.Activity != "active" {
		return diverge("Get of the service's presence: %+v", p)
	}
	conns, err := t.Connections(ctx, "12345")
	if err != nil {
		return diverge("Connections of the service's hash: %v", err)
	}
	if len(conns) != 2 || conns[0].Metadata.SocketID == "" || conns[1].Metadata.SocketID == "" {
		return diverge("Connections of the service's hash: %+v", conns)
	}
	if _, err := t.Heartbeat(ctx, "12345", "conn_123"); err != nil {
		return diverge("Heartbeat of the service's connection: %v", err)
	}
	res, err := t.Disconnect(ctx, "12345", "conn_456")
	if err != nil || res.Connections != 1 || res.Status != presence.Online {
		return diverge("Disconnect of the service's connection: %+v, %v", res, err)
	}
	var online bool
	if err := e.node(ctx, "svcIsOnline", map[string]string{"user": "12345"}, &online); err != nil {
		return err
	}
	var devices []string
	if err := e.node(ctx, "svcDeviceTypes", map[string]string{"user": "12345"}, &devices); err != nil {
		return err
	}
	if !online || !slices.Equal(devices, []string{"web"}) {
		return diverge("the service reads online %v, devices %q after the library's disconnect", online, devices)
	}
	return nil
}

// serviceGoNode: the library connects two users; the service's own
// queries (online status, online users from a list, device types) find
// them; after the library's disconnect the service sees the user offline.
func serviceGoNode(ctx context.Context, e *env) error {
	t, err := serviceTracker(e)
	if err != nil {
		return err
	}
	if _, err := t.Connect(ctx, "12345", presence.Conn{ID: "conn_123", Metadata: presence.Metadata{Device: "web", SocketID: "socket_abc123"}}); err != nil {
		return err
	}
	if _, err := t.Connect(ctx, "12345", presence.Conn{ID: "conn_456", Metadata: presence.Metadata{Device: "mobile"}}); err != nil {
		return err
	}
	if _, err := t.Connect(ctx, "67890", presence.Conn{ID: "conn_9", Metadata: presence.Metadata{Device: "desktop"}}); err != nil {
		return err
	}
	var online bool
	if err := e.node(ctx, "svcIsOnline", map[string]string{"user": "12345"}, &online); err != nil {
		return err
	}
	if !online {
		return diverge("the service reads 12345 offline after the library's Connect")
	}
	var users []string
	if err := e.node(ctx, "svcOnlineUsers", map[string][]string{"userIds": {"12345", "67890", "11111"}}, &users); err != nil {
		return err
	}
	if !slices.Equal(users, []string{"12345", "67890"}) {
		return diverge("the service's online users from the list: %q", users)
	}
	var devices []string
	if err := e.node(ctx, "svcDeviceTypes", map[string]string{"user": "12345"}, &devices); err != nil {
		return err
	}
	if !slices.Equal(devices, []string{"mobile", "web"}) {
		return diverge("the service's device types of 12345: %q", devices)
	}
	for _, c := range []string{"conn_123", "conn_456"} {
		if _, err := t.Disconnect(ctx, "12345", c); err != nil {
			return err
		}
	}
	if err := e.node(ctx, "svcIsOnline", map[string]string{"user": "12345"}, &online); err != nil {
		return err
	}
	if online {
		return diverge("the service reads 12345 online after the library's last Disconnect")
	}
	return nil
}

func compactTracker(e *env, opts ...presence.Option) (*presence.Tracker, error) {
	return presence.New(e.rdb, append([]presence.Option{presence.WithNamespace(bare), presence.WithProfile(presence.CompactProfile())}, opts...)...)
}

// compactNodeGo: the chat app sets a user online and deletes the key on
// disconnect; the library reads online, then offline.
func compactNodeGo(ctx context.Context, e *env) error {
	t, err := compactTracker(e)
	if err != nil {
		return err
	}
	user := map[string]string{"user": "user-123"}
	if err := e.node(ctx, "chatOnline", user, nil); err != nil {
		return err
	}
	p, err := t.Get(ctx, "user-123")
	if err != nil || !p.Online() || time.Since(p.LastSeen) > time.Minute {
		return diverge("Get of the chat app's presence: %+v, %v", p, err)
	}
	if err := e.node(ctx, "chatOffline", user, nil); err != nil {
		return err
	}
	if p, err = t.Get(ctx, "user-123"); err != nil || p.Online() {
		return diverge("Get after the chat app's DEL: %+v, %v", p, err)
	}
	return nil
}

// compactGoNode: the library connects a user and disconnects it; the chat
// app's status check follows.
func compactGoNode(ctx context.Context, e *env) error {
	t, err := compactTracker(e)
	if err != nil {
		return err
	}
	user := map[string]string{"user": "user-123"}
	check := func(want string) error {
		var got string
		if err := e.node(ctx, "chatStatus", user, &got); err != nil {
			return err
		}
		if got != want {
			return diverge("the chat app reads %q, want %q", got, want)
		}
		return nil
	}
	if _, err := t.Connect(ctx, "user-123", presence.Conn{ID: "socket-1"}); err != nil {
		return err
	}
	if err := check("online"); err != nil {
		return err
	}
	if _, err := t.Disconnect(ctx, "user-123", "socket-1"); err != nil {
		return err
	}
	return check("offline")
}

type nodeTyper struct {
	UserID    string `json:"userId"`
	Username  string `json:"username"`
	Timestamp int64  `json:"timestamp"`
}

// typingNodeGo: the chat app's SETEX typing:conv:user is listed by Typers
// (WithOtherWriters), and after its DEL it is not.
func typingNodeGo(ctx context.Context, e *env) error {
	t, err := compactTracker(e, presence.WithOtherWriters())
	if err != nil {
		return err
	}
	ty := t.Typing()
	start := map[string]string{"conversationId": "conv-456", "userId": "user-123", "username": "john_doe"}
	if err := e.node(ctx, "typingStart", start, nil); err != nil {
		return err
	}
	typers, err := ty.Typers(ctx, "conv-456")
	if err != nil || len(typers) != 1 || typers[0].UserID != "user-123" || typers[0].Username != "john_doe" {
		return diverge("Typers after the chat app's SETEX: %+v, %v", typers, err)
	}
	if err := e.node(ctx, "typingStop", start, nil); err != nil {
		return err
	}
	if typers, err = ty.Typers(ctx, "conv-456"); err != nil || len(typers) != 0 {
		return diverge("Typers after the chat app's DEL: %+v, %v", typers, err)
	}
	return nil
}

// typingGoNode: the library's Start is found by the chat app's KEYS+MGET,
// and its monitoring (KEYS typing:* | wc -l) counts each typer once; a
// Stop is seen too.
func typingGoNode(ctx context.Context, e *env) error {
	t, err := compactTracker(e, presence.WithOtherWriters())
	if err != nil {
		return err
	}
	ty := t.Typing()
	for _, u := range [][2]string{{"user-123", "john_doe"}, {"user-456", "jane_roe"}} {
		if ok, err := ty.Start(ctx, "conv-456", u[0], u[1]); err != nil || !ok {
			return fmt.Errorf("typing Start %s: %v %v", u[0], ok, err)
		}
	}
	conv := map[string]string{"conversationId": "conv-456"}
	var typers []nodeTyper
	if err := e.node(ctx, "typingUsers", conv, &typers); err != nil {
		return err
	}
	if len(typers) != 2 || typers[0].UserID != "user-123" || typers[0].Username != "john_doe" ||
		typers[1].UserID != "user-456" || typers[0].Timestamp == 0 {
		return diverge("the chat app's typing users: %+v", typers)
	}
	var n int
	if err := e.node(ctx, "typingKeyCount", nil, &n); err != nil {
		return err
	}
	if n != 2 {
		return diverge("KEYS typing:* | wc -l counts %d for 2 typers", n)
	}
	if _, err := ty.Stop(ctx, "conv-456", "user-123"); err != nil {
		return err
	}
	if err := e.node(ctx, "typingUsers", conv, &typers); err != nil {
		return err
	}
	if len(typers) != 1 || typers[0].UserID != "user-456" {
		return diverge("the chat app's typing users after Stop: %+v", typers)
	}
	return nil
}
