package aimemory

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// A resent Append is recognised whatever ran on the conversation between
// its first run and the resend (issue 33: with a memo of the last 128
// request IDs, four writers on one conversation appended 55 of 8,003
// messages twice and counted 174 tokens twice against the daily
// budget). One writer appends through a proxy that loses every other
// reply; go-redis resends each lost one only after three other writers
// have appended 160 messages (more than the old memo's 128) to the same
// conversation. Every message is stored once, the day's tokens are the
// sum of the messages' tokens, and each resend reports its first outcome:
// the length and the day's tokens just after its own message.
func TestResendRecognisedUnderConcurrentWriters(t *testing.T) {
	const (
		lossy       = 6   // appends of the writer through the proxy
		interleaved = 160 // appends by the others before each resend
	)
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
	gate := harness.HoldResends(t, pc, p)
	m, err := New(pc, WithNamespace(e.NS), WithMaxMessages(maxMessages))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	obs := newMemory(t, e, WithMaxMessages(maxMessages))
	require.NoError(t, appendOp.Load(ctx, e.Client), "EVALSHA, so the SHA is on the wire")

	tr := harness.NewTraffic(t)
	var othersTokens atomic.Int64
	for w := 1; w <= 3; w++ {
		tr.Writer(func(n int) error {
			tokens := 1 + (w+n)%5
			_, err := obs.Append(ctx, "u", "c", []Message{msg(User, fmt.Sprintf("w%d-%d", w, n), tokens)})
			if err == nil {
				othersTokens.Add(int64(tokens))
			}
			return err
		})
	}

	replies := map[string]Appended{}
	var mineTokens int64
	for i := range lossy {
		lose := i%2 == 0
		if lose {
			p.LoseReply(appendOp.Script().Hash())
		}
		content, tokens := fmt.Sprintf("mine-%d", i), 10+i
		type result struct {
			a   Appended
			err error
		}
		res := make(chan result, 1)
		go func() {
			a, err := m.Append(ctx, "u", "c", []Message{msg(Assistant, content, tokens)})
			res <- result{a, err}
		}()
		tr.Give(2) // the others write while this request runs
		if lose {
			gate.Between(t, func() { tr.Run(interleaved) })
		}
		r := <-res
		require.NoError(t, r.err, "append %d", i)
		replies[content] = r.a
		mineTokens += int64(tokens)
	}
	tr.Drain()
	require.EqualValues(t, lossy/2, p.Lost(), "every other reply lost, and each resend answered")

	raw, err := e.Client.LRange(ctx, key(t, e, convKey, "u", "c"), 0, -1).Result()
	require.NoError(t, err)
	seen := map[string]int{}
	var sum int64
	for i, s := range raw {
		msg, err := decodeMessage(s)
		require.NoError(t, err)
		seen[msg.Content]++
		sum += int64(msg.Tokens)
		if a, ok := replies[msg.Content]; ok && seen[msg.Content] == 1 {
			assert.Equal(t, Appended{Length: i + 1, TokensToday: sum, Tokens: msg.Tokens}, a,
				"%s: the reply is the outcome of its first run", msg.Content)
		}
	}
	for content, n := range seen {
		assert.Equal(t, 1, n, "%q stored %d times", content, n)
	}
	assert.Equal(t, lossy+int(tr.Done()), len(raw), "every append stored exactly once")
	u, err := obs.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, mineTokens+othersTokens.Load(), u.TokensToday, "every append counted exactly once")
	assert.Equal(t, sum, u.TokensToday)
}

// The request memo keeps every append of the last replayWindow, however
// many, and only those: a resend whose ID is 2,000 appends deep in the
// memo reports its recorded outcome and appends and counts nothing, and
// the next append drops the requests older than the window (and keeps
// the memo for the window).
func TestRequestMemoKeepsTheWindow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	rk := key(t, e, reqsKey, "u", "c")
	now := e.Now().UnixMilli()
	window := replayWindow.Milliseconds()
	record := func(req string, at int64, reply string) []redis.Z {
		return []redis.Z{{Score: float64(at), Member: req}, {Score: float64(at), Member: req + "=" + reply}}
	}
	old := "ffffffffffffffffffffffff"
	zs := record(old, now-window-1000, "1,0,1,0") // older than the window
	first := fmt.Sprintf("%024x", 0)
	zs = append(zs, record(first, now-window+20_000, "7,2,300,5")...) // 20 s inside it
	for i := 1; i < 2000; i++ {
		zs = append(zs, record(fmt.Sprintf("%024x", i), now-window+20_000+int64(i), fmt.Sprintf("%d,0,%d,0", 7+i, 300+i))...)
	}
	require.NoError(t, e.Client.ZAdd(ctx, rk, zs...).Err())

	res, err := m.append(ctx, "append", "u", "c", []Message{msg(User, "hi", 3)}, first, m.opt.budget)
	require.NoError(t, err)
	assert.Equal(t, Appended{Length: 7, Evicted: 2, TokensToday: 300, Tokens: 3, Pending: 5}, res, "the recorded outcome")
	n, err := e.Client.LLen(ctx, key(t, e, convKey, "u", "c")).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a resend appends nothing")
	u, err := m.User(ctx, "u")
	require.NoError(t, err)
	assert.Zero(t, u.TokensToday, "and counts nothing")

	res, err = m.Append(ctx, "u", "c", []Message{msg(User, "hi", 3)})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Length)
	card, err := e.Client.ZCard(ctx, rk).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2*2000+2, card, "the 2,000 requests of the window and the new one")
	_, err = e.Client.ZScore(ctx, rk, old).Result()
	assert.ErrorIs(t, err, redis.Nil, "older than the window: dropped")
	ttl, err := e.Client.PTTL(ctx, rk).Result()
	require.NoError(t, err)
	assert.True(t, ttl > replayWindow-10*time.Second && ttl <= replayWindow, "TTL %v", ttl)
}

// A memo entry this package did not write (a request ID without its
// reply, or with a reply that does not parse) is corrupt data naming the
// key, on a resend of that ID, and nothing is appended.
func TestRequestMemoWithoutReplyIsCorrupt(t *testing.T) {
	for name, members := range map[string][]string{
		"no reply":  {"%s"},
		"bad reply": {"%s", "%s=1,2,x,4"},
	} {
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			m := newMemory(t, e)
			rk := key(t, e, reqsKey, "u", "c")
			req := newID()
			for _, f := range members {
				require.NoError(t, e.Client.ZAdd(ctx, rk, redis.Z{Score: float64(e.Now().UnixMilli()), Member: fmt.Sprintf(f, req)}).Err())
			}
			_, err := m.append(ctx, "append", "u", "c", []Message{msg(User, "hi", 3)}, req, m.opt.budget)
			assert.ErrorIs(t, err, keys.ErrCorrupt)
			assert.ErrorContains(t, err, rk)
			n, err := e.Client.LLen(ctx, key(t, e, convKey, "u", "c")).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "nothing appended")
		})
	}
}
