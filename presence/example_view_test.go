package presence_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/presence"
)

// An admin page reads who is online and one user's presence and
// connections in one pipeline, through an Inspector built with the
// Tracker's options.
func ExampleNewInspector() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	tr, err := presence.New(rdb)
	if err != nil {
		panic(err)
	}
	_, _ = tr.Connect(ctx, "bob", presence.Conn{ID: "c1", Metadata: presence.Metadata{Device: "web"}})
	_, _ = tr.Connect(ctx, "alice", presence.Conn{ID: "c1", Metadata: presence.Metadata{Device: "web"}})
	_, _ = tr.Connect(ctx, "alice", presence.Conn{ID: "c2", Metadata: presence.Metadata{Device: "mobile"}})
	in, err := presence.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	v, err := in.ReadView(ctx, "alice")
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Online, v.User.Status, len(v.Connections), v.Connections[1].Metadata.Device)
	// Output:
	// [alice bob] online 2 mobile
}
