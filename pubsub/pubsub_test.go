package pubsub_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/pubsub"
)

type fileUploaded struct {
	FileID string `json:"file_id"`
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

var uploaded = pubsub.MustTopic[fileUploaded]("files", "uploaded")

func newBus(t *testing.T, e *harness.Env, opts ...pubsub.Option) *pubsub.Bus {
	t.Helper()
	b, err := pubsub.New(e.Client, append([]pubsub.Option{pubsub.WithNamespace(e.NS), pubsub.WithSource("files-api")}, opts...)...)
	require.NoError(t, err)
	return b
}

func next[T any](t *testing.T, ch <-chan pubsub.Event[T]) pubsub.Event[T] {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "channel closed")
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	panic("unreachable")
}

func TestChannelNames(t *testing.T) {
	assert.Equal(t, "pubsub:files:uploaded", uploaded.Channel(keys.Namespace{}))
	assert.Equal(t, "ha:pubsub:workflow:completed", pubsub.MustTopic[int]("workflow", "completed").Channel(keys.Namespace{Prefix: "ha:"}))
	odd := pubsub.MustTopic[int]("a:b", "c*{d}")
	assert.Equal(t, "pubsub:a%3Ab:c%2A%7Bd%7D", odd.Channel(keys.Namespace{}))
	for _, c := range [][2]string{{"", "x"}, {"x", ""}, {"\xff", "x"}, {"x", strings.Repeat("y", keys.MaxSegmentLen+1)}} {
		_, err := pubsub.NewTopic[int](c[0], c[1])
		assert.ErrorIs(t, err, pubsub.ErrInvalid)
	}
}

func TestPublishSubscribe(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	b := newBus(t, e)
	events, err := pubsub.Subscribe(ctx, b, uploaded)
	require.NoError(t, err)
	// A raw subscriber sees the seed's envelope.
	raw := e.Client.Subscribe(ctx, uploaded.Channel(e.NS))
	defer raw.Close()
	_, err = raw.Receive(ctx)
	require.NoError(t, err)

	n, err := pubsub.Publish(ctx, b, uploaded, fileUploaded{FileID: "f1", UserID: "u1", Name: "a.txt"})
	require.NoError(t, err)
	if e.Backend != harness.Cluster { // a cluster counts the publishing node's subscribers only
		assert.Equal(t, int64(2), n)
	}
	ev := next(t, events)
	require.NoError(t, ev.Err)
	assert.Equal(t, "uploaded", ev.Event)
	assert.Equal(t, "files-api", ev.Source)
	assert.Equal(t, fileUploaded{FileID: "f1", UserID: "u1", Name: "a.txt"}, ev.Payload)
	assert.Equal(t, uploaded.Channel(e.NS), ev.Channel)
	assert.WithinDuration(t, time.Now(), ev.Timestamp, 5*time.Second)

	m, err := raw.ReceiveMessage(ctx)
	require.NoError(t, err)
	var env map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(m.Payload), &env))
	assert.Len(t, env, 4)
	assert.JSONEq(t, `"uploaded"`, string(env["event"]))
	assert.JSONEq(t, `{"file_id":"f1","user_id":"u1","name":"a.txt"}`, string(env["payload"]))
	assert.JSONEq(t, `"files-api"`, string(env["source"]))
	assert.True(t, strings.HasSuffix(string(env["timestamp"]), `Z"`), string(env["timestamp"]))
	assert.Empty(t, e.Keys(), "pub/sub writes no keys")
}

func TestMalformedMessagesAreReported(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	b := newBus(t, e)
	events, err := pubsub.Subscribe(ctx, b, uploaded, uploaded) // duplicate topics are fine
	require.NoError(t, err)
	ch := uploaded.Channel(e.NS)
	for _, bad := range []string{"not json", `{"event":"uploaded"}`, `{"event":"uploaded","payload":{"file_id":42}}`} {
		require.NoError(t, e.Client.Publish(ctx, ch, bad).Err())
		ev := next(t, events)
		assert.ErrorIs(t, ev.Err, pubsub.ErrMalformed)
		assert.Equal(t, bad, ev.Raw)
	}
	_, err = pubsub.Publish(ctx, b, uploaded, fileUploaded{FileID: "ok"})
	require.NoError(t, err)
	ev := next(t, events)
	require.NoError(t, ev.Err)
	assert.Equal(t, "ok", ev.Payload.FileID)
}

func TestSubscribeClosedByContext(t *testing.T) {
	e := harness.New(t)
	b := newBus(t, e)
	ctx, cancel := context.WithCancel(e.Ctx())
	events, err := pubsub.Subscribe(ctx, b, uploaded)
	require.NoError(t, err)
	cancel()
	select {
	case _, ok := <-events:
		assert.False(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed")
	}
}

func TestBadInput(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	_, err := pubsub.New(nil)
	assert.ErrorIs(t, err, pubsub.ErrInvalid)
	_, err = pubsub.New(e.Client, pubsub.WithNamespace(keys.Namespace{Prefix: "}"}))
	assert.ErrorIs(t, err, keys.ErrInvalidNamespace)
	_, err = pubsub.New(e.Client, pubsub.WithBuffer(0))
	assert.ErrorIs(t, err, pubsub.ErrInvalid)
	b := newBus(t, e)
	_, err = pubsub.Subscribe[int](ctx, b)
	assert.ErrorIs(t, err, pubsub.ErrInvalid)
	_, err = pubsub.Subscribe(ctx, b, pubsub.Topic[int]{})
	assert.ErrorIs(t, err, pubsub.ErrInvalid)
	_, err = pubsub.Publish(ctx, b, pubsub.Topic[int]{}, 1)
	assert.ErrorIs(t, err, pubsub.ErrInvalid)
	_, err = pubsub.Publish(ctx, b, pubsub.MustTopic[func()]("a", "b"), func() {})
	assert.ErrorIs(t, err, pubsub.ErrInvalid)
}

func TestReconnectAfterCut(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, proxy := e.ProxyClient(nil)
	sub, err := pubsub.New(pc, pubsub.WithNamespace(e.NS))
	require.NoError(t, err)
	pub := newBus(t, e)
	events, err := pubsub.Subscribe(ctx, sub, uploaded)
	require.NoError(t, err)
	_, err = pubsub.Publish(ctx, pub, uploaded, fileUploaded{FileID: "before"})
	require.NoError(t, err)
	assert.Equal(t, "before", next(t, events).Payload.FileID)

	proxy.CutNow()
	// go-redis notices the broken connection, reconnects and resubscribes;
	// messages sent meanwhile are lost, so publish until one arrives.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := pubsub.Publish(ctx, pub, uploaded, fileUploaded{FileID: "after"})
		require.NoError(t, err)
		select {
		case ev, ok := <-events:
			require.True(t, ok, "closed after a cut")
			require.NoError(t, ev.Err)
			assert.Equal(t, "after", ev.Payload.FileID)
			assert.Greater(t, proxy.Cuts(), int64(0))
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no message after the cut")
		}
	}
}
