package chat

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/presence"
)

// TestAtTheMaxima runs the documented maxima on the backend (Lua's limits
// are the real server's, not miniredis's): one call hands out maxDrain
// conversations to an admin of maxCapacity, an offline admin of
// maxCapacity is requeued and handed to another in one call, and a cache
// of maxMessageCache messages is read in one page of maxPage.
func TestAtTheMaxima(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithMessageCache(maxMessageCache))
	var wg sync.WaitGroup
	errs := make(chan error, maxDrain)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < maxDrain; i += 8 {
				_, err := c.Open(ctx, fmt.Sprint("c", i), bands[i%4])
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, c.AddAdmin(ctx, "big", maxCapacity))
	require.NoError(t, c.AddAdmin(ctx, "spare", maxCapacity))
	require.NoError(t, c.Availability().Set(ctx, "big", presence.Online))
	r, err := c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, maxDrain, r.Assigned, "one call hands out maxDrain")
	require.NoError(t, c.Availability().Set(ctx, "spare", presence.Online))
	require.NoError(t, c.Availability().Set(ctx, "big", presence.Offline))
	r, err = c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, Reconciled{Requeued: maxDrain, Assigned: maxDrain}, r)
	s := c.snapshot(t)
	assert.Len(t, s.sets["spare"], maxCapacity)
	s.check(t)

	e.Advance(time.Millisecond) // miniredis's clock stands still
	for i := range maxMessageCache + 1 {
		_, err := c.Append(ctx, "c0", Message{Content: fmt.Sprint(i), SenderRole: User})
		require.NoError(t, err)
	}
	page, err := c.Messages(ctx, "c0", maxPage, 0)
	require.NoError(t, err)
	assert.Len(t, page, maxMessageCache)
	assert.EqualValues(t, maxMessageCache+1, page[0].ID)
	assert.EqualValues(t, 2, page[len(page)-1].ID)
	u, err := c.Backlog(ctx, maxPage)
	require.NoError(t, err)
	assert.Empty(t, u)
	a, err := c.Active(ctx, maxPage)
	require.NoError(t, err)
	assert.Len(t, a, maxPage)
	assert.Equal(t, "c0", a[0].Conversation)
}
