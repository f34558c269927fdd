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
// are the real server's, not miniredis's): one call hands out MaxDrain
// conversations to an admin of MaxCapacity, an offline admin of
// MaxCapacity is requeued and handed to another in one call, and a cache
// of MaxMessageCache messages is read in one page of MaxPage.
func TestAtTheMaxima(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newChat(t, e, WithMessageCache(MaxMessageCache))
	var wg sync.WaitGroup
	errs := make(chan error, MaxDrain)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < MaxDrain; i += 8 {
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
	require.NoError(t, c.AddAdmin(ctx, "big", MaxCapacity))
	require.NoError(t, c.AddAdmin(ctx, "spare", MaxCapacity))
	require.NoError(t, c.Availability().Set(ctx, "big", presence.Online))
	r, err := c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, MaxDrain, r.Assigned, "one call hands out MaxDrain")
	require.NoError(t, c.Availability().Set(ctx, "spare", presence.Online))
	require.NoError(t, c.Availability().Set(ctx, "big", presence.Offline))
	r, err = c.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, Reconciled{Requeued: MaxDrain, Assigned: MaxDrain}, r)
	s := c.snapshot(t)
	assert.Len(t, s.sets["spare"], MaxCapacity)
	s.check(t)

	e.Advance(time.Millisecond) // miniredis's clock stands still
	for i := range MaxMessageCache + 1 {
		_, err := c.Append(ctx, "c0", Message{Content: fmt.Sprint(i), SenderRole: User})
		require.NoError(t, err)
	}
	page, err := c.Messages(ctx, "c0", MaxPage)
	require.NoError(t, err)
	assert.Len(t, page, MaxMessageCache)
	assert.EqualValues(t, MaxMessageCache+1, page[0].ID)
	assert.EqualValues(t, 2, page[len(page)-1].ID)
	u, err := c.Backlog(ctx, MaxPage)
	require.NoError(t, err)
	assert.Empty(t, u)
	a, err := c.Active(ctx, MaxPage)
	require.NoError(t, err)
	assert.Len(t, a, MaxPage)
	assert.Equal(t, "c0", a[0].Conversation)
}
