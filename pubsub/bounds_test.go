package pubsub_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/sub"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/pubsub"
)

// Input is bounded on both sides: a message above the max size is refused
// before it is sent, and one received (from another publisher) arrives as
// ErrMalformed; no malformed message, however large or odd, stops the
// subscription.
func TestBoundedInputAndMalformedFlood(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	b := newBus(t, e, pubsub.WithMaxMessage(512))
	_, err := pubsub.Publish(ctx, b, uploaded, fileUploaded{Name: strings.Repeat("n", 600)})
	require.ErrorIs(t, err, pubsub.ErrInvalid)
	events, err := pubsub.Subscribe(ctx, b, uploaded)
	require.NoError(t, err)
	ch := uploaded.Channel(e.NS)
	bad := []string{strings.Repeat("x", 4096), "", "null", "[]", `{"payload":null}`, `{"payload":"x"}`, "\xff\xfe", `{"payload":{"file_id":[]}}`}
	for _, m := range bad {
		require.NoError(t, sub.Publish(ctx, e.Client, ch, m).Err())
	}
	for range bad {
		ev := next(t, events)
		require.ErrorIs(t, ev.Err, pubsub.ErrMalformed)
		require.ErrorIs(t, ev.Err, keys.ErrCorrupt)
		assert.LessOrEqual(t, len(ev.Raw), 512)
	}
	_, err = pubsub.Publish(ctx, b, uploaded, fileUploaded{FileID: "after"})
	require.NoError(t, err)
	ev := next(t, events)
	require.NoError(t, ev.Err)
	assert.Equal(t, "after", ev.Payload.FileID)
}

// byteCodec stores strings as raw bytes: not JSON.
type byteCodec struct{}

func (byteCodec) Marshal(v any) ([]byte, error) { return []byte(*v.(*string) + "!"), nil }
func (byteCodec) Unmarshal(d []byte, v any) error {
	*v.(*string) = string(d)
	return nil
}

func TestInjectedCodec(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	b := newBus(t, e, pubsub.WithCodec(ptrCodec{}))
	topic := pubsub.MustTopic[string]("raw", "bytes")
	events, err := pubsub.Subscribe(ctx, b, topic)
	require.NoError(t, err)
	_, err = pubsub.Publish(ctx, b, topic, "hello")
	require.NoError(t, err)
	ev := next(t, events)
	require.NoError(t, ev.Err)
	assert.Equal(t, "hello!", ev.Payload)
}

// ptrCodec adapts byteCodec to the values Publish passes (a T, not a *T).
type ptrCodec struct{}

func (ptrCodec) Marshal(v any) ([]byte, error) {
	s := v.(string)
	return byteCodec{}.Marshal(&s)
}
func (ptrCodec) Unmarshal(d []byte, v any) error { return byteCodec{}.Unmarshal(d, v) }
