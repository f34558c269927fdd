package sub_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/sub"
	"github.com/redschema/redschema/keys"
)

func atoi(s string) (int, error) { return strconv.Atoi(s) }

func TestNextDecodesAndReportsMalformed(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ch := e.NS.Prefix + "events"
	s, err := sub.Open(ctx, e.Client, []string{ch}, atoi, 0)
	require.NoError(t, err)
	defer s.Close()
	for _, p := range []string{"1", "x", "3"} {
		require.NoError(t, sub.Publish(ctx, e.Client, ch, p).Err())
	}
	m, err := s.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, m.Value)
	assert.Equal(t, ch, m.Channel)
	m, err = s.Next(ctx)
	require.NoError(t, err, "a malformed message is not Next's error")
	require.ErrorIs(t, m.Err, keys.ErrCorrupt)
	assert.Contains(t, m.Err.Error(), ch)
	assert.Equal(t, "x", m.Raw)
	m, err = s.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, m.Value, "the subscription goes on")

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = s.Next(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, sub.Publish(ctx, e.Client, ch, "4").Err())
	m, err = s.Next(ctx)
	require.NoError(t, err, "usable after a cancelled Next")
	assert.Equal(t, 4, m.Value)

	require.NoError(t, s.Close())
	_, err = s.Next(ctx)
	require.True(t, errors.Is(err, redis.ErrClosed), "%v", err)
}

// Values skips what does not decode (reporting it) and ends with its
// context.
func TestValuesSkipMalformedAndEndWithContext(t *testing.T) {
	e := harness.New(t)
	ctx, cancel := context.WithCancel(e.Ctx())
	ch := e.NS.Prefix + "values"
	s, err := sub.Open(ctx, e.Client, []string{ch}, atoi, 4)
	require.NoError(t, err)
	bad := make(chan sub.Msg[int], 1)
	out := s.Values(ctx, 4, func(m sub.Msg[int]) { bad <- m })
	require.NoError(t, sub.Publish(ctx, e.Client, ch, "x").Err())
	require.NoError(t, sub.Publish(ctx, e.Client, ch, "7").Err())
	assert.Equal(t, 7, <-out)
	m := <-bad
	assert.Equal(t, "x", m.Raw)
	assert.ErrorIs(t, m.Err, keys.ErrCorrupt)
	cancel()
	select {
	case _, ok := <-out:
		for ok {
			_, ok = <-out
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Values's channel not closed after the context ended")
	}
}

// A cut connection is re-established and the channels resubscribed; only
// messages published while it was down are lost.
func TestResubscribesAfterCut(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	ch := e.NS.Prefix + "{resub}"
	s, err := sub.Open(ctx, pc, []string{ch}, atoi, 0)
	require.NoError(t, err)
	defer s.Close()
	p.CutNow()
	got := make(chan int, 1)
	go func() {
		for {
			m, err := s.Next(ctx)
			if err != nil {
				return
			}
			if m.Value == 42 {
				got <- 42
				return
			}
		}
	}()
	deadline := time.After(10 * time.Second)
	for {
		require.NoError(t, sub.Publish(ctx, e.Client, ch, "42").Err())
		select {
		case <-got:
			return
		case <-deadline:
			t.Fatal("no message after the cut: not resubscribed")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestOpenNeedsChannels(t *testing.T) {
	e := harness.New(t)
	_, err := sub.Open(e.Ctx(), e.Client, nil, atoi, 0)
	require.Error(t, err)
}

// One publisher's messages arrive in the order they were published, on a
// cluster too, where Publish sends every message of a channel from the
// channel's node (a plain PUBLISH goes to any node, and messages from
// several nodes can overtake each other on the cluster bus).
func TestPublishKeepsOrder(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ch := e.NS.Prefix + "ordered"
	s, err := sub.Open(ctx, e.Client, []string{ch}, atoi, 0)
	require.NoError(t, err)
	defer s.Close()
	const n = 500
	for i := range n {
		require.NoError(t, sub.Publish(ctx, e.Client, ch, strconv.Itoa(i)).Err())
	}
	for i := range n {
		m, err := s.Next(ctx)
		require.NoError(t, err)
		require.NoError(t, m.Err)
		require.Equal(t, i, m.Value, "message %d arrived in place %d", m.Value, i)
	}
}
