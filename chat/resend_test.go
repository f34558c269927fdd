package chat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// A resent Append is recognised whatever ran on the conversation between
// its first run and the resend (issue 33: with a memo of the last 8
// requests, a user and an admin writing at once cached 17 of 1,001
// messages twice). A user writes through a proxy that loses every other
// reply; go-redis resends each lost one only after an admin, a system
// bot and another user have appended 24 messages (more than the old
// memo's 8) to the same conversation. Every message is cached once, and
// each resend reports the ID and timestamp its message was cached with.
func TestResendRecognisedUnderConcurrentWriters(t *testing.T) {
	const (
		lossy       = 10 // appends of the writer through the proxy
		interleaved = 24 // appends by the others before each resend
	)
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
	gate := harness.HoldResends(t, pc, p)
	c := newChatOn(t, e, pc, WithMessageCache(maxMessageCache))
	obs := newChat(t, e, WithMessageCache(maxMessageCache))
	team(t, obs, 1, 10)
	_, err := c.Admins(ctx)
	require.NoError(t, err)
	_, err = obs.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	require.NoError(t, appendOp.Load(ctx, e.Client), "EVALSHA, so the SHA is on the wire")

	tr := harness.NewTraffic(t)
	for _, w := range []struct {
		role   Role
		sender string
	}{{Admin, "a1"}, {System, ""}, {User, "u2"}} {
		tr.Writer(func(n int) error {
			_, err := obs.Append(ctx, "c1", Message{Content: fmt.Sprintf("%s%s-%d", w.role, w.sender, n), SenderRole: w.role, SenderID: w.sender})
			return err
		})
	}

	var mine []Message
	for i := range lossy {
		lose := i%2 == 0
		if lose {
			p.LoseReply(appendOp.Script().Hash())
		}
		type result struct {
			m   Message
			err error
		}
		res := make(chan result, 1)
		go func() {
			m, err := c.Append(ctx, "c1", Message{Content: fmt.Sprintf("u1-%d", i), SenderRole: User, SenderID: "u1"})
			res <- result{m, err}
		}()
		tr.Give(2) // the others write while this request runs
		if lose {
			gate.Between(t, func() { tr.Run(interleaved) })
		}
		r := <-res
		require.NoError(t, r.err, "append %d", i)
		mine = append(mine, r.m)
	}
	tr.Drain()
	require.EqualValues(t, lossy/2, p.Lost(), "every other reply lost, and each resend answered")

	page, err := obs.Messages(ctx, "c1", maxPage, 0) // also checks IDs go down by one
	require.NoError(t, err)
	stored := map[string][]Message{}
	for _, m := range page {
		stored[m.Content] = append(stored[m.Content], m)
	}
	for content, ms := range stored {
		assert.Len(t, ms, 1, "%q cached %d times", content, len(ms))
	}
	assert.Len(t, page, lossy+int(tr.Done()), "every append cached exactly once")
	for _, m := range mine {
		if assert.Len(t, stored[m.Content], 1, m.Content) {
			got := stored[m.Content][0]
			assert.Equal(t, got.ID, m.ID, "%s: the reply names the message as cached", m.Content)
			assert.True(t, got.Timestamp.Equal(m.Timestamp), "%s: cached at %v, reply says %v", m.Content, got.Timestamp, m.Timestamp)
		}
	}
}

// The request memo keeps every request of the last replayWindow, however
// many, and only those: a resend whose ID is 2,000 requests deep in the
// memo is answered with its recorded reply and caches nothing, and the
// next write drops the requests older than the window (and keeps the
// memo for the window).
func TestRequestMemoKeepsTheWindow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 1, 10)
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	rk, err := c.convKey("test", requestsKey, "c1")
	require.NoError(t, err)
	mk, err := c.convKey("test", messagesKey, "c1")
	require.NoError(t, err)
	now := e.Now().UnixMilli()
	window := replayWindow.Milliseconds()
	hexOf := func(n int64) string { return fmt.Sprintf("%x", fmt.Sprint(n)) }
	record := func(req string, at, id int64) []redis.Z {
		return []redis.Z{{Score: float64(at), Member: req}, {Score: float64(at), Member: req + "=" + hexOf(id) + "," + hexOf(at)}}
	}
	var zs []redis.Z
	zs = append(zs, record("ffffffffffffffff", now-window-1000, 1)...) // older than the window
	first := "0000000000000000"
	zs = append(zs, record(first, now-window+20_000, 7)...) // 20 s inside it
	for i := 1; i < 2000; i++ {
		zs = append(zs, record(fmt.Sprintf("%016x", i), now-window+20_000+int64(i), int64(7+i))...)
	}
	require.NoError(t, e.Client.ZAdd(ctx, rk, zs...).Err())
	before, err := e.Client.ZCard(ctx, rk).Result() // Open's request too
	require.NoError(t, err)

	append1 := func(req string) (int64, int64) {
		t.Helper()
		rep, err := c.route(ctx, appendOp, "append", req, "", []string{rk, mk}, "c1", "user", "hi", "", 100)
		require.NoError(t, err)
		require.NoError(t, rep.Err())
		return rep.Int(0), rep.Int(1)
	}
	id, at := append1(first)
	assert.Equal(t, [2]int64{7, now - window + 20_000}, [2]int64{id, at}, "the recorded reply")
	n, err := e.Client.LLen(ctx, mk).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a resend caches nothing")

	id, _ = append1(newRequestID())
	assert.EqualValues(t, 1, id)
	members, err := e.Client.ZRange(ctx, rk, 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, int(before), len(members), "the requests of the window, and the new one for the one dropped")
	assert.False(t, slices.Contains(members, "ffffffffffffffff"), "older than the window: dropped")
	ttl, err := e.Client.PTTL(ctx, rk).Result()
	require.NoError(t, err)
	assert.True(t, ttl > replayWindow-10*time.Second && ttl <= replayWindow, "TTL %v", ttl)
}

// A memo entry this package did not write (an ID without its reply) is
// corrupt data naming the key, on a resend of that ID.
func TestRequestMemoWithoutReplyIsCorrupt(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e)
	team(t, c, 1, 10)
	_, err := c.Open(ctx, "c1", Normal)
	require.NoError(t, err)
	rk, err := c.convKey("test", requestsKey, "c1")
	require.NoError(t, err)
	mk, err := c.convKey("test", messagesKey, "c1")
	require.NoError(t, err)
	req := newRequestID()
	require.NoError(t, e.Client.ZAdd(ctx, rk, redis.Z{Score: float64(e.Now().UnixMilli()), Member: req}).Err())
	_, err = c.route(ctx, appendOp, "append", req, "", []string{rk, mk}, "c1", "user", "hi", "", 100)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.ErrorContains(t, err, rk)
	n, err := e.Client.LLen(ctx, mk).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing cached")
}
