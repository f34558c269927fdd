package pubsub_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/pubsub"
)

// WorkflowCompleted is the payload of seed 001's pubsub:workflow:completed.
type WorkflowCompleted struct {
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status"`
	Result      any    `json:"result"`
}

var workflowCompleted = pubsub.MustTopic[WorkflowCompleted]("workflow", "completed")

func Example() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	bus, err := pubsub.New(rdb, pubsub.WithSource("n8n-worker"))
	if err != nil {
		panic(err)
	}
	events, err := pubsub.Subscribe(ctx, bus, workflowCompleted)
	if err != nil {
		panic(err)
	}
	if _, err := pubsub.Publish(ctx, bus, workflowCompleted, WorkflowCompleted{ExecutionID: "e1", Status: "success"}); err != nil {
		panic(err)
	}
	ev := <-events
	fmt.Println(ev.Channel, ev.Event, ev.Source, ev.Payload.ExecutionID, ev.Payload.Status, ev.Err)
	// Output:
	// pubsub:workflow:completed completed n8n-worker e1 success <nil>
}
