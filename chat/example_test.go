package chat_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/presence"
)

// Example runs a conversation from opening to resolution: the admin with
// room gets it, messages are cached with the unread state, the
// dashboard counts it.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	c, err := chat.New(rdb, chat.WithTag("support"))
	if err != nil {
		panic(err)
	}
	_ = c.AddAdmin(ctx, "123", 10)
	_ = c.Availability().Set(ctx, "123", presence.Online)

	a, _ := c.Open(ctx, "456", chat.High)
	fmt.Println("assigned to", a.Admin)
	_, _ = c.Append(ctx, "456", chat.Message{Content: "My heater is off", SenderRole: chat.User, SenderID: "u1"})
	unread, _ := c.Unread(ctx, 10)
	fmt.Println("unread:", unread[0].Conversation, unread[0].Priority)
	_, _ = c.Append(ctx, "456", chat.Message{Content: "How can I help?", SenderRole: chat.Admin, SenderID: "123"})
	page, _ := c.Messages(ctx, "456", 20, 0)
	for _, msg := range page {
		fmt.Println(msg.ID, msg.SenderRole, msg.Content)
	}
	d, _ := c.Dashboard(ctx, "123")
	fmt.Println("assigned_to_me:", d.AssignedToMe, "unread_count:", d.UnreadCount)
	admin, _ := c.Resolve(ctx, "456")
	fmt.Println("resolved by", admin)
	_, err = c.Conversation(ctx, "456")
	fmt.Println(errors.Is(err, chat.ErrNotFound))
	// Output:
	// assigned to 123
	// unread: 456 high
	// 2 admin How can I help?
	// 1 user My heater is off
	// assigned_to_me: 1 unread_count: 0
	// resolved by 123
	// true
}

// ExampleChat_Backlog shows the backlog's order: by priority, oldest first
// within one, whatever the order of arrival; an admin coming online takes
// it in that order up to their capacity.
func ExampleChat_Backlog() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	c, _ := chat.New(rdb)
	_ = c.AddAdmin(ctx, "123", 2)

	_, _ = c.Open(ctx, "a", chat.Low)
	_, _ = c.Open(ctx, "b", chat.Normal)
	_, _ = c.Open(ctx, "c", chat.Urgent)
	_, _ = c.Open(ctx, "d", chat.Normal)
	w, _ := c.Backlog(ctx, 10)
	for _, x := range w {
		fmt.Printf("%s:%s\n", x.Conversation, x.Priority)
	}

	_ = c.Availability().Set(ctx, "123", presence.Online)
	r, _ := c.Reconcile(ctx)
	fmt.Println("handed out:", r.Assigned)
	w, _ = c.Backlog(ctx, 10)
	fmt.Println("left:", w[0].Conversation, w[1].Conversation)
	// Output:
	// c:urgent
	// b:normal
	// d:normal
	// a:low
	// handed out: 2
	// left: d a
}

// ExampleChat_Reconcile shows an admin going offline: their conversations
// go back to the backlog and to the admins with room.
func ExampleChat_Reconcile() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	c, _ := chat.New(rdb)
	for _, id := range []string{"ann", "bob"} {
		_ = c.AddAdmin(ctx, id, 3)
		_ = c.Availability().Set(ctx, id, presence.Online)
	}
	for _, id := range []string{"1", "2", "3", "4"} {
		_, _ = c.Open(ctx, id, chat.Normal)
	}

	_ = c.Availability().Set(ctx, "ann", presence.Offline)
	r, _ := c.Reconcile(ctx)
	fmt.Printf("requeued %d, handed out %d\n", r.Requeued, r.Assigned)
	admins, _ := c.Admins(ctx)
	for _, a := range admins {
		fmt.Println(a.ID, a.Availability, a.Assigned)
	}
	w, _ := c.Backlog(ctx, 10)
	fmt.Println("waiting:", len(w))
	// Output:
	// requeued 2, handed out 1
	// ann offline 0
	// bob online 3
	// waiting: 1
}

// ExampleChat_Subscribe receives a deployment's events.
func ExampleChat_Subscribe() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	c, _ := chat.New(rdb)
	_ = c.AddAdmin(ctx, "123", 10)
	_ = c.Availability().Set(ctx, "123", presence.Online)

	sub, _ := c.Subscribe(ctx, chat.EventAssigned, chat.EventMessage)
	defer sub.Close()
	_, _ = c.Open(ctx, "456", chat.Normal)
	_, _ = c.Append(ctx, "456", chat.Message{Content: "hi", SenderRole: chat.User})
	for range 3 {
		ev, _ := sub.Next(ctx)
		switch ev.Kind {
		case chat.EventAssigned:
			fmt.Printf("%s %s to %q (%s)\n", ev.Kind, ev.Conversation, ev.Admin, ev.Reason)
		case chat.EventMessage:
			fmt.Println(ev.Kind, ev.Conversation, ev.Message.Content)
		}
	}
	// Output:
	// assigned 456 to "" (opened)
	// assigned 456 to "123" (backlog)
	// message 456 hi
}

// An admin page reads the support chat's roster and queues, and who is
// online: each package's Inspector reads its view in one pipeline, and
// the two are read at once.
func ExampleNewInspector() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	c, err := chat.New(rdb)
	if err != nil {
		panic(err)
	}
	tr, err := presence.New(rdb)
	if err != nil {
		panic(err)
	}
	_ = c.AddAdmin(ctx, "a1", 1)
	_ = c.Availability().Set(ctx, "a1", presence.Online)
	_, _ = tr.Connect(ctx, "u1", presence.Conn{ID: "c1"})
	for _, id := range []string{"c1", "c2"} {
		_, _ = c.Open(ctx, id, chat.Normal)
	}

	ci, err := chat.NewInspector(rdb) // the Chat's options
	if err != nil {
		panic(err)
	}
	pi, err := presence.NewInspector(rdb) // the Tracker's options
	if err != nil {
		panic(err)
	}
	var cv chat.View
	var pv presence.View
	var g errgroup.Group
	g.Go(func() (err error) { cv, err = ci.ReadView(ctx, 10); return err })
	g.Go(func() (err error) { pv, err = pi.ReadView(ctx, ""); return err })
	if err := g.Wait(); err != nil {
		panic(err)
	}
	fmt.Println(cv.Admins[0].ID, cv.Admins[0].Assigned, len(cv.Backlog), cv.Backlog[0].Conversation, pv.Online)
	// Output:
	// a1 1 1 c2 [u1]
}
