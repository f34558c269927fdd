package presence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	tr, err := presence.New(rdb) // DetailedProfile: 60 s TTL, 600 s retention
	if err != nil {
		panic(err)
	}
	r, _ := tr.Connect(ctx, "12345", presence.Conn{ID: "conn_123", Metadata: presence.Metadata{Device: "web"}})
	fmt.Println("came online:", r.Changed, "connections:", r.Connections)
	r, _ = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_456", Metadata: presence.Metadata{Device: "mobile"}})
	fmt.Println("came online:", r.Changed, "connections:", r.Connections)

	r, _ = tr.Disconnect(ctx, "12345", "conn_123")
	fmt.Println("went offline:", r.Changed, "left:", r.Connections)
	r, _ = tr.Disconnect(ctx, "12345", "conn_456")
	fmt.Println("went offline:", r.Changed, "left:", r.Connections)

	p, _ := tr.Get(ctx, "12345")
	fmt.Println(p.Status, "last seen known:", !p.LastSeen.IsZero())
	// Output:
	// came online: true connections: 1
	// came online: false connections: 2
	// went offline: false left: 1
	// went offline: true left: 0
	// offline last seen known: true
}

// The single-key layout keeps a user's connections inside the presence
// JSON: readers of the presence key still work, connection readers move to
// the "connections" member or to Connections.
func ExampleWithLayout() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, _ := presence.New(rdb, presence.WithLayout(presence.LayoutSingleKey))

	_, _ = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_123", Metadata: presence.Metadata{Device: "web"}})
	_, _ = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_456", Metadata: presence.Metadata{Device: "mobile"}})

	// A reader of the presence key: GET presence:12345, JSON.parse(v).status.
	raw, _ := rdb.Get(ctx, "presence:{12345}").Result()
	var v struct {
		Status            string                     `json:"status"`
		ActiveConnections int                        `json:"activeConnections"`
		Connections       map[string]json.RawMessage `json:"connections"`
	}
	_ = json.Unmarshal([]byte(raw), &v)
	fmt.Println(v.Status, v.ActiveConnections, "connections in the value:", len(v.Connections))
	fmt.Println("connections hash exists:", rdb.Exists(ctx, "connections:{12345}").Val() == 1)

	cs, _ := tr.Connections(ctx, "12345")
	for _, c := range cs {
		fmt.Println(c.ID, c.Metadata.Device)
	}
	// Output:
	// online 2 connections in the value: 2
	// connections hash exists: false
	// conn_123 web
	// conn_456 mobile
}

func ExampleTracker_Heartbeat_unknownConnection() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, _ := presence.New(rdb)

	// A heartbeat for a connection the tracker does not know (pruned after
	// missing heartbeats, or never connected) asks the client to connect.
	_, err := tr.Heartbeat(ctx, "12345", "conn_999")
	if errors.Is(err, presence.ErrUnknownConnection) {
		_, err = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_999"})
	}
	fmt.Println(err)
	// Output:
	// <nil>
}

func ExampleTracker_SetStatus_invisible() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, _ := presence.New(rdb)

	_, _ = tr.Connect(ctx, "ann", presence.Conn{ID: "c1"})
	_, _ = tr.SetStatus(ctx, "ann", presence.Invisible)
	p, _ := tr.Get(ctx, "ann")
	fmt.Println("system sees:", p.Status, p.Online())
	fmt.Println("others see:", p.Public().Status)
	listed, _ := tr.OnlineNow(ctx)
	fmt.Println("listed online:", len(listed))
	// Output:
	// system sees: invisible true
	// others see: offline
	// listed online: 0
}

func ExampleTyping_Start() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, err := presence.New(rdb)
	if err != nil {
		panic(err)
	}
	typing := tr.Typing()

	ok, _ := typing.Start(ctx, "conv-456", "user-123", "john_doe")
	fmt.Println("written:", ok)
	ok, _ = typing.Start(ctx, "conv-456", "user-123", "john_doe")
	fmt.Println("written:", ok, "(throttled: one write per 2 s)")
	typers, _ := typing.Typers(ctx, "conv-456")
	for _, ty := range typers {
		fmt.Println(ty.Username, "is typing")
	}
	// Output:
	// written: true
	// written: false (throttled: one write per 2 s)
	// john_doe is typing
}

func ExampleSubscription_Next() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, _ := presence.New(rdb)

	sub, err := tr.Subscribe(ctx)
	if err != nil {
		panic(err)
	}
	defer sub.Close()
	_, _ = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_123"})
	_, _ = tr.SetStatus(ctx, "12345", presence.Away)
	for i := 0; i < 2; i++ {
		ev, _ := sub.Next(ctx)
		fmt.Printf("%s: %s -> %s\n", ev.UserID, ev.Previous, ev.Status)
	}
	// Output:
	// 12345: offline -> online
	// 12345: online -> away
}

func ExampleTracker_Sweep() {
	m, _ := miniredis.Run()
	defer m.Close()
	now := time.Now()
	m.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, _ := presence.New(rdb)
	sub, err := tr.Subscribe(ctx)
	if err != nil {
		panic(err)
	}
	defer sub.Close()

	_, _ = tr.Connect(ctx, "12345", presence.Conn{ID: "conn_123"})
	// The device dies: no heartbeat, no Disconnect. A minute later the
	// presence key expires, which publishes nothing by itself.
	m.SetTime(now.Add(61 * time.Second))
	m.FastForward(61 * time.Second)

	// A sweep announces it, once. RunSweeper cycles through all shards;
	// here we sweep only the user's shard (with hash tags, the cluster slot
	// of the user ID).
	n, _ := tr.Sweep(ctx, keys.Slot("12345"), 1)
	fmt.Println("announced:", n)
	n, _ = tr.Sweep(ctx, keys.Slot("12345"), 1)
	fmt.Println("announced again:", n)
	for i := 0; i < 2; i++ {
		ev, _ := sub.Next(ctx)
		fmt.Printf("%s: %s -> %s\n", ev.UserID, ev.Previous, ev.Status)
	}
	// Output:
	// announced: 1
	// announced again: 0
	// 12345: offline -> online
	// 12345: online -> offline
}

// Admin availability is the bare word a chat assignment reads. With a
// deployment-wide tag every admin's key is in the slot of the chat's own
// keys, so one script can read them all on a Redis Cluster.
func ExampleAvailability() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	tr, err := presence.New(rdb, presence.WithAvailabilityTag("support"))
	if err != nil {
		panic(err)
	}
	av := tr.Availability()

	_ = av.Set(ctx, "123", presence.Online)
	_ = av.Set(ctx, "456", presence.Busy)
	s, _ := av.Get(ctx, "789")
	fmt.Println("never set:", s)

	// What a chat script does: GET each candidate's key from its KEYS.
	k1, _ := av.Key("123")
	k2, _ := av.Key("456")
	fmt.Println(k1)
	online, _ := rdb.Eval(ctx, `
		local out = {}
		for i = 1, #KEYS do
			if redis.call('GET', KEYS[i]) == 'online' then out[#out + 1] = KEYS[i] end
		end
		return out`, []string{k1, k2}).StringSlice()
	fmt.Println("available:", online)
	// Output:
	// never set: offline
	// admin:{support}:123:presence
	// available: [admin:{support}:123:presence]
}

// Channel presence: a user with two devices in a room is one member;
// joining with the first device and leaving with the last publish one
// event each.
func ExampleChannels() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	type member struct {
		Name string `json:"name"`
	}
	rooms, err := presence.NewChannels[member](rdb, presence.WithOccupancyInterval(0))
	if err != nil {
		panic(err)
	}
	events, _ := rooms.Subscribe(ctx, "room-1")
	defer events.Close()

	r, _ := rooms.Join(ctx, "room-1", "ann", "laptop", member{"Ann"})
	fmt.Println("joined:", r.Changed, "members:", r.Members)
	r, _ = rooms.Join(ctx, "room-1", "ann", "phone", member{"Ann"})
	fmt.Println("joined:", r.Changed, "devices:", r.Devices, "members:", r.Members)
	_, _ = rooms.Leave(ctx, "room-1", "ann", "laptop")
	r, _ = rooms.Leave(ctx, "room-1", "ann", "phone")
	fmt.Println("left:", r.Changed, "members:", r.Members)

	for range 2 {
		ev, _ := events.Next(ctx)
		fmt.Println(ev.Type, ev.UserID, ev.Data.Name)
	}
	// Output:
	// joined: true members: 1
	// joined: false devices: 2 members: 1
	// left: true members: 0
	// join ann Ann
	// leave ann
}

// Silent leaves: a device that stops heartbeating leaves when its TTL
// passes; Sweep (or RunSweeper, or any later write to the channel)
// announces it, once.
func ExampleChannels_Sweep() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	m.SetTime(time.Now()) // the scripts read TIME; miniredis's moves with SetTime

	rooms, _ := presence.NewChannels[struct{}](rdb, presence.WithOccupancyInterval(time.Second))
	_, _ = rooms.Join(ctx, "room-1", "ann", "laptop", struct{}{})
	_, _ = rooms.Join(ctx, "room-1", "bob", "phone", struct{}{})
	n, _ := rooms.Count(ctx, "room-1")
	fmt.Println("members:", n)

	// Ann's laptop keeps heartbeating; Bob's phone goes quiet and its
	// 60 s TTL (DetailedProfile) passes.
	start := time.Now()
	for _, at := range []time.Duration{30 * time.Second, 55 * time.Second} {
		m.SetTime(start.Add(at))
		_ = rooms.Heartbeat(ctx, "room-1", "ann", "laptop")
	}
	m.SetTime(start.Add(65 * time.Second))
	left, _ := rooms.Sweep(ctx, rooms.Shard("room-1"), 1)
	fmt.Println("silent leaves:", left)
	left, _ = rooms.Sweep(ctx, rooms.Shard("room-1"), 1)
	fmt.Println("silent leaves:", left)
	n, _ = rooms.Count(ctx, "room-1")
	fmt.Println("members:", n)
	// Output:
	// members: 2
	// silent leaves: 1
	// silent leaves: 0
	// members: 1
}

// Typed member data, its update event, the O(1) Count and the throttled
// occupancy event (at most one per WithOccupancyInterval per channel).
func ExampleChannels_Update() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	type editor struct {
		Name   string `json:"name"`
		Cursor int    `json:"cursor"`
	}
	docs, _ := presence.NewChannels[editor](rdb, presence.WithOccupancyInterval(time.Second))
	events, _ := docs.Subscribe(ctx, "doc-7")
	defer events.Close()

	_, _ = docs.Join(ctx, "doc-7", "ann", "tab-1", editor{Name: "Ann", Cursor: 0})
	changed, _ := docs.Update(ctx, "doc-7", "ann", editor{Name: "Ann", Cursor: 42})
	n, _ := docs.Count(ctx, "doc-7")
	fmt.Println("updated:", changed, "members:", n)

	for range 3 {
		ev, _ := events.Next(ctx)
		switch ev.Type {
		case presence.Occupancy:
			fmt.Println(ev.Type, ev.Count)
		default:
			fmt.Println(ev.Type, ev.UserID, ev.Data.Name, ev.Data.Cursor)
		}
	}
	// Output:
	// updated: true members: 1
	// join ann Ann 0
	// occupancy 1
	// update ann Ann 42
}
