// Command presence simulates a few devices: they connect, heartbeat, one
// drops without saying goodbye and is pruned, a user types in a
// conversation, statuses change, everyone leaves but one whose desktop
// crashes, and a sweeper announces that silent offline. Then a room: two
// users join (one with two devices, one member), leave, and a silent
// leave is announced by a sweep. Presence events are printed as another
// app instance would receive them.
//
//	go run ./examples/presence                 # embedded Redis
//	go run ./examples/presence -layout single-key  # connections inside presence:{user}
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/presence
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

// quick is the detailed format with lifetimes short enough to watch: a
// connection is stale after 1.5 s without a heartbeat (DetailedProfile:
// 60 s).
var quick = presence.Profile{
	Format:         presence.FormatDetailed,
	TTL:            1500 * time.Millisecond,
	Heartbeat:      500 * time.Millisecond,
	Retention:      10 * time.Second,
	TypingTTL:      3 * time.Second,
	TypingThrottle: 2 * time.Second,
}

func run() error {
	layoutName := flag.String("layout", "hash", `where connections live: "hash" (the hash connections:{user}) or "single-key" (inside presence:{user})`)
	flag.Parse()
	layout := presence.LayoutHash
	switch *layoutName {
	case "hash":
	case "single-key":
		layout = presence.LayoutSingleKey
	default:
		return fmt.Errorf("unknown -layout %q", *layoutName)
	}
	ctx := context.Background()
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()

	opts := []presence.Option{presence.WithProfile(quick), presence.WithNamespace(keys.Namespace{Prefix: "demo:"}), presence.WithLayout(layout)}
	tr, err := presence.New(rdb, opts...)
	if err != nil {
		return err
	}
	typing := tr.Typing() // the same options

	// Another app instance would run this loop and push diffs to its
	// websocket clients.
	sub, err := tr.Subscribe(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	offline := make(chan string, 16) // users announced offline
	go func() {
		defer wg.Done()
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				return // closed
			}
			fmt.Printf("  event: %s %s -> %s\n", ev.UserID, ev.Previous, ev.Status)
			if ev.Status == presence.Offline {
				select {
				case offline <- ev.UserID:
				default:
				}
			}
		}
	}()
	defer func() { _ = sub.Close(); wg.Wait() }()

	ua := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)"
	devices := []struct {
		user string
		conn presence.Conn
	}{
		{"alice", presence.Conn{ID: "conn_web", Metadata: presence.Metadata{Device: "web", UserAgent: ua, IP: "192.168.1.1", SocketID: "socket_a1"}}},
		{"alice", presence.Conn{ID: "conn_phone", Metadata: presence.Metadata{Device: "mobile", SocketID: "socket_a2"}}},
		{"bob", presence.Conn{ID: "conn_desk", Metadata: presence.Metadata{Device: "desktop", SocketID: "socket_b1"}}},
		{"carol", presence.Conn{ID: "conn_web", Metadata: presence.Metadata{Device: "web"}, Status: presence.Invisible}},
	}
	fmt.Println("connecting 4 devices")
	for _, d := range devices {
		if _, err := tr.Connect(ctx, d.user, d.conn); err != nil {
			return err
		}
	}
	pause()
	if err := show(ctx, tr); err != nil {
		return err
	}

	fmt.Println("heartbeating for 2 s; alice's phone went into a tunnel and stays silent")
	for i := 0; i < 4; i++ {
		time.Sleep(quick.Heartbeat)
		for _, d := range devices {
			if d.conn.ID == "conn_phone" {
				continue
			}
			if _, err := tr.Heartbeat(ctx, d.user, d.conn.ID); err != nil {
				return err
			}
		}
	}
	p, err := tr.Get(ctx, "alice")
	if err != nil {
		return err
	}
	fmt.Printf("  alice's live connections after pruning: %d (device shown: %s)\n", p.Connections, p.Device)
	if _, err := tr.Heartbeat(ctx, "alice", "conn_phone"); errors.Is(err, presence.ErrUnknownConnection) {
		fmt.Println("alice's phone is back: its heartbeat is refused (pruned), so it connects again")
		if _, err := tr.Connect(ctx, "alice", devices[1].conn); err != nil {
			return err
		}
	}
	if _, err := tr.SetStatus(ctx, "bob", presence.Busy); err != nil {
		return err
	}
	pause()
	if err := show(ctx, tr); err != nil {
		return err
	}

	fmt.Println("typing in conversation conv-456")
	for _, u := range []string{"bob", "bob", "alice"} {
		ok, err := typing.Start(ctx, "conv-456", u, strings.ToUpper(u[:1])+u[1:])
		if err != nil {
			return err
		}
		fmt.Printf("  typing.Start(%s): written=%v\n", u, ok)
	}
	typers, err := typing.Typers(ctx, "conv-456")
	if err != nil {
		return err
	}
	var names []string
	for _, ty := range typers {
		names = append(names, ty.Username)
	}
	sort.Strings(names)
	fmt.Printf("  typing now: %s\n", strings.Join(names, ", "))
	if _, err := typing.Stop(ctx, "conv-456", "bob"); err != nil {
		return err
	}
	typers, err = typing.Typers(ctx, "conv-456")
	if err != nil {
		return err
	}
	fmt.Printf("  after bob stops: %d typing\n", len(typers))

	fmt.Println("everyone disconnects, except bob: his desktop crashes")
	for _, d := range devices {
		if d.user == "bob" {
			continue
		}
		r, err := tr.Disconnect(ctx, d.user, d.conn.ID)
		if err != nil {
			return err
		}
		fmt.Printf("  %s %s: %d left, went offline=%v\n", d.user, d.conn.ID, r.Connections, r.Changed)
	}
	pause()
	for len(offline) > 0 {
		<-offline
	}
	time.Sleep(quick.TTL)
	// (the embedded miniredis does not expire keys in real time, so Get
	// would still show bob's key; the scripts and the index go by TIME)
	fmt.Println("bob's presence expired silently: nothing ran, no event")

	// One or more app instances run a sweeper: it visits every index shard
	// once per cycle (here 16384/2048 x 100 ms; with the 60 s TTL of
	// DetailedProfile one would use e.g. 512 shards a second) and announces each silent offline once.
	fmt.Println("a sweeper runs")
	sweep, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- tr.RunSweeper(sweep, 100*time.Millisecond, presence.Shards/8, nil) }()
	select {
	case <-offline:
	case <-sweep.Done():
		fmt.Println("  no announcement within 30 s")
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	pause()
	on, err := tr.OnlineNow(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("  online list: %v\n", on)
	return lobby(ctx, rdb, opts)
}

// lobby shows channel presence: who is in a room, one member per user
// however many devices, with join and leave events, a silent leave
// included.
func lobby(ctx context.Context, rdb redis.UniversalClient, opts []presence.Option) error {
	type member struct {
		Name string `json:"name"`
	}
	rooms, err := presence.NewChannels[member](rdb, append(opts, presence.WithOccupancyInterval(0))...)
	if err != nil {
		return err
	}
	events, err := rooms.Subscribe(ctx, "lobby")
	if err != nil {
		return err
	}
	defer events.Close()
	printEvents := func(n int) {
		for range n {
			wait, cancel := context.WithTimeout(ctx, 5*time.Second)
			ev, err := events.Next(wait)
			cancel()
			if err != nil {
				fmt.Println("  no event:", err)
				return
			}
			fmt.Printf("  room event: %s %s %s\n", ev.Type, ev.UserID, ev.Reason)
		}
	}

	fmt.Println("alice (web and phone) and bob join the lobby")
	for _, j := range []struct{ user, conn, name string }{{"alice", "conn_web", "Alice"}, {"alice", "conn_phone", "Alice"}, {"bob", "conn_desk", "Bob"}} {
		if _, err := rooms.Join(ctx, "lobby", j.user, j.conn, member{j.name}); err != nil {
			return err
		}
	}
	printEvents(2)
	n, err := rooms.Count(ctx, "lobby")
	if err != nil {
		return err
	}
	fmt.Printf("  members: %d (alice's two devices are one member)\n", n)

	fmt.Println("alice closes her web tab (she stays: her phone is in), then her phone")
	for _, conn := range []string{"conn_web", "conn_phone"} {
		if _, err := rooms.Leave(ctx, "lobby", "alice", conn); err != nil {
			return err
		}
	}
	printEvents(1)

	fmt.Println("bob's desktop stops heartbeating; a sweep announces his leave once")
	time.Sleep(quick.TTL)
	for range 2 {
		left, err := rooms.Sweep(ctx, rooms.Shard("lobby"), 1)
		if err != nil {
			return err
		}
		fmt.Printf("  sweep: %d left\n", left)
	}
	printEvents(1)
	return nil
}

// pause lets the event printer catch up so the output reads in order.
func pause() { time.Sleep(100 * time.Millisecond) }

func show(ctx context.Context, tr *presence.Tracker) error {
	users := []string{"alice", "bob", "carol"}
	ps, err := tr.GetMany(ctx, users)
	if err != nil {
		return err
	}
	for _, p := range ps {
		pub := p.Public()
		seen := "unknown" // as others see it
		if !pub.LastSeen.IsZero() {
			seen = "just now"
		}
		fmt.Printf("  %-5s system: %-9s others see: %-7s connections: %d  last seen: %s\n", p.UserID, p.Status, pub.Status, p.Connections, seen)
	}
	online, err := tr.OnlineNow(ctx)
	if err != nil {
		return err
	}
	sort.Strings(online)
	fmt.Printf("  online list: [%s]\n", strings.Join(online, " "))
	return nil
}
