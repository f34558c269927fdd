package pubsub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/sub"
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
	for _, c := range [][2]string{{"", "x"}, {"x", ""}, {"\xff", "x"}, {"x", strings.Repeat("y", 1025)}} {
		_, err := pubsub.NewTopic[int](c[0], c[1])
		assert.ErrorIs(t, err, pubsub.ErrInvalid)
		assert.ErrorIs(t, err, keys.ErrInvalid)
	}
	// The named channels keep their exact names.
	assert.Equal(t, "pubsub:files:uploaded", pubsub.TopicFileUploaded().Channel(keys.Namespace{}))
	assert.Equal(t, "pubsub:files:processed", pubsub.TopicFileProcessed().Channel(keys.Namespace{}))
	assert.Equal(t, "pubsub:ai:response", pubsub.TopicAIResponse().Channel(keys.Namespace{}))
	assert.Equal(t, "pubsub:workflow:started", pubsub.TopicWorkflowStarted().Channel(keys.Namespace{}))
	assert.Equal(t, "pubsub:workflow:completed", pubsub.TopicWorkflowCompleted().Channel(keys.Namespace{}))
	assert.Equal(t, "pubsub:system:notification", pubsub.TopicSystemNotification().Channel(keys.Namespace{}))
	assert.Equal(t, "pubsub:audit:event", pubsub.TopicAuditEvent().Channel(keys.Namespace{}))
	// Every channel is the registered pattern's.
	tm, vals, ok := harness.Registry(t, pubsub.Schema()).MatchChannel(keys.Namespace{Prefix: "ha:"}, odd.Channel(keys.Namespace{Prefix: "ha:"}))
	require.True(t, ok)
	assert.Equal(t, "pubsub:{domain}:{event_type}", tm.String())
	assert.Equal(t, []string{"a:b", "c*{d}"}, vals)
}

func TestPublishSubscribe(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	b := newBus(t, e)
	events, err := pubsub.Subscribe(ctx, b, uploaded)
	require.NoError(t, err)
	// A raw subscriber sees the seed's envelope, and the message ID.
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
	assert.Len(t, env, 5)
	assert.Regexp(t, `^"[0-9a-f]{24}"$`, string(env["id"]))
	assert.JSONEq(t, string(env["id"]), `"`+ev.ID+`"`)
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
		require.NoError(t, sub.Publish(ctx, e.Client, ch, bad).Err())
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
	assert.ErrorIs(t, err, keys.ErrInvalid)
	for _, o := range []pubsub.Option{pubsub.WithBuffer(0), pubsub.WithBuffer(1<<20 + 1), pubsub.WithMaxMessage(0),
		pubsub.WithMaxMessage(512<<20 + 1), pubsub.WithSource("\xff"), pubsub.WithSource(strings.Repeat("s", 257)), pubsub.WithCodec(nil)} {
		_, err = pubsub.New(e.Client, o)
		assert.ErrorIs(t, err, pubsub.ErrInvalid)
	}
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

// A Publish whose reply is lost after the server ran it is sent again by
// go-redis: the caller sees success, not an error, and the subscriber
// drops the resent copy by its message ID, so it sees the message once.
// On all three backends.
func TestLostPublishReplyIsResent(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	pub, err := pubsub.New(pc, pubsub.WithNamespace(e.NS))
	require.NoError(t, err)
	events, err := pubsub.Subscribe(ctx, newBus(t, e), uploaded)
	require.NoError(t, err)
	p.LoseReply("lost-reply-file")
	n, err := pubsub.Publish(ctx, pub, uploaded, fileUploaded{FileID: "lost-reply-file"})
	require.NoError(t, err, "the resend's outcome is the caller's")
	require.Equal(t, int64(1), p.Lost())
	_, err = pubsub.Publish(ctx, pub, uploaded, fileUploaded{FileID: "marker"})
	require.NoError(t, err)
	seen := 0
	for {
		ev := next(t, events)
		require.NoError(t, ev.Err)
		if ev.Payload.FileID == "marker" {
			break
		}
		require.Equal(t, "lost-reply-file", ev.Payload.FileID)
		seen++
	}
	t.Logf("%s: the lost-reply message arrived %d times; the resend reported %d subscriber(s)", e.Backend, seen, n)
	assert.Equal(t, 1, seen, "the resent PUBLISH is delivered once")
}

// A subscription drops a message whose ID it has seen among the last
// DedupWindow, keeps messages without an ID (the seed's publishers), and
// forgets IDs beyond the window.
func TestDuplicateMessageIDsDropped(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	events, err := pubsub.Subscribe(ctx, newBus(t, e), uploaded)
	require.NoError(t, err)
	ch := uploaded.Channel(e.NS)
	msg := func(file, id string) string {
		return `{"event":"uploaded","timestamp":"2026-01-16T10:00:00Z","payload":{"file_id":"` + file + `"},"source":"seed","id":"` + id + `"}`
	}
	// One connection publishes everything, so the messages arrive in
	// order (a cluster client may send each PUBLISH to another node).
	var pub redis.Cmdable = e.Client
	if cc, ok := e.Client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, ch)
		require.NoError(t, err)
		pub = n
	}
	send := func(m string) { require.NoError(t, pub.Publish(ctx, ch, m).Err()) }
	send(msg("a", "id-a"))
	send(msg("a-again", "id-a"))
	send(strings.Replace(msg("no-id-1", ""), `,"id":""`, "", 1))
	send(strings.Replace(msg("no-id-2", ""), `,"id":""`, "", 1))
	for i := 0; i < pubsub.DedupWindow; i++ {
		send(msg(fmt.Sprint("fill-", i), fmt.Sprint("fill-", i)))
	}
	send(msg("a-late", "id-a")) // beyond the window: delivered
	var got []string
	for len(got) < 4+pubsub.DedupWindow {
		ev := next(t, events)
		require.NoError(t, ev.Err)
		got = append(got, ev.Payload.FileID)
	}
	assert.Equal(t, []string{"a", "no-id-1", "no-id-2"}, got[:3])
	assert.Equal(t, "a-late", got[len(got)-1])
}
