package pubsub_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/pubsub"
)

func Example() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	bus, err := pubsub.New(rdb, pubsub.WithSource("n8n-worker"))
	if err != nil {
		panic(err)
	}
	events, err := pubsub.Subscribe(ctx, bus, pubsub.TopicWorkflowCompleted())
	if err != nil {
		panic(err)
	}
	if _, err := pubsub.Publish(ctx, bus, pubsub.TopicWorkflowCompleted(), pubsub.WorkflowCompleted{ExecutionID: "e1", Status: "success"}); err != nil {
		panic(err)
	}
	ev := <-events
	fmt.Println(ev.Channel, ev.Event, ev.Source, ev.Payload.ExecutionID, ev.Payload.Status, ev.Err)
	// Output:
	// pubsub:workflow:completed completed n8n-worker e1 success <nil>
}
