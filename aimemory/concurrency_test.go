package aimemory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// 50 goroutines append to one conversation: the cap is never exceeded,
// the TTL is refreshed by every append, each writer's messages keep
// their order, and (with a summarizer) the summary and the conversation
// together hold every message exactly once, in order.
func TestConcurrentAppendsToOneConversation(t *testing.T) {
	for _, summarize := range []bool{false, true} {
		t.Run("summarizer="+strconv.FormatBool(summarize), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			const writers, each, limit = 50, 20, 50
			opts := []Option{WithMaxMessages(limit)}
			if summarize {
				// The summary is the evicted contents, comma-separated: the
				// whole history is summary + conversation.
				opts = append(opts, WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
					parts := contents(ev)
					if prev != "" {
						parts = append([]string{prev}, parts...)
					}
					return strings.Join(parts, ","), nil
				}))
			}
			m := newMemory(t, e, opts...)
			ck := key(t, e, convKey, "u", "c")
			_, err := m.Append(ctx, "u", "c", []Message{msg(System, "sys", 1)})
			require.NoError(t, err)

			var over, shortTTL atomic.Int64
			stop := make(chan struct{})
			var watch sync.WaitGroup
			watch.Add(1)
			go func() { // an observer: the cap holds at every moment
				defer watch.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if n, err := e.Client.LLen(ctx, ck).Result(); err == nil && n > limit {
						over.Add(1)
					}
				}
			}()
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						res, err := m.Append(ctx, "u", "c", []Message{msg(User, fmt.Sprintf("w%d:%d", w, i), 1)})
						if err != nil {
							errs <- err
							return
						}
						if res.SummaryErr != nil {
							errs <- res.SummaryErr
						}
						if res.Length > limit {
							over.Add(1)
						}
						// Refreshed by this append: at most a few seconds
						// of a loaded machine have passed since.
						if ttl := e.Client.PTTL(ctx, ck).Val(); ttl < time.Hour-30*time.Second {
							shortTTL.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			watch.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.Zero(t, over.Load(), "the cap was exceeded")
			assert.Zero(t, shortTTL.Load(), "an append did not refresh the TTL")

			w, err := m.Window(ctx, "u", "c")
			require.NoError(t, err)
			require.NotNil(t, w.System, "the system prompt survived %d evictions", writers*each)
			assert.Equal(t, limit, w.Length)
			history := contents(w.Messages)
			if summarize {
				s, err := m.Summarize(ctx, "u", "c") // fold in what is still pending
				require.NoError(t, err)
				assert.Zero(t, s.Pending)
				assert.Zero(t, s.Lost)
				assert.Equal(t, writers*each+1-limit, s.Covered)
				history = append(strings.Split(s.Text, ","), history...)
				require.Len(t, history, writers*each, "every message once")
			}
			last := map[string]int{}
			seen := map[string]bool{}
			for _, c := range history {
				require.False(t, seen[c], "duplicate %s", c)
				seen[c] = true
				w, i, _ := strings.Cut(c, ":")
				n, err := strconv.Atoi(i)
				require.NoError(t, err)
				if prev, ok := last[w]; ok {
					require.Greater(t, n, prev, "writer %s out of order", w)
				}
				last[w] = n
			}
		})
	}
}

// 100 concurrent appends count every token once; with a daily budget
// exactly the appends that fit are admitted.
func TestDailyAccountingUnderConcurrency(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(maxMessages))
	const n = 100
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Append(ctx, "u", "c"+strconv.Itoa(i%7), []Message{msg(User, "x", i+1)})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	u, err := m.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, int64(n*(n+1)/2), u.TokensToday)

	var admitted, refused atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.AppendWithBudget(ctx, "b", "c", []Message{msg(User, "x", 10)}, 505)
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.Is(err, ErrBudgetExceeded):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(50), admitted.Load())
	assert.Equal(t, int64(50), refused.Load())
	u, err = m.User(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, int64(500), u.TokensToday)
	w, err := m.Window(ctx, "b", "c")
	require.NoError(t, err)
	assert.Len(t, w.Messages, 50, "a refused append wrote nothing")
}
