package presence

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// chanEvents returns the channel events received within quiet (occupancy
// left out), as "type:user".
func chanEvents(t *testing.T, s *ChannelSubscription[string], quiet time.Duration) []string {
	t.Helper()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		ev, err := s.Next(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return out
		}
		if ev.Type != Occupancy {
			out = append(out, string(ev.Type)+":"+ev.UserID)
		}
	}
}

// A Join, Leave or Update whose reply is lost after it ran, and which
// go-redis sends again, reports its first run's outcome and publishes its
// event once.
func TestChannelReplayReportsFirstOutcome(t *testing.T) {
	const quiet = 300 * time.Millisecond
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		op   *call.Op
		run  func(t *testing.T, c *Channels[string], lose func(), s *ChannelSubscription[string])
	}{
		{"join", chanJoinOp, func(t *testing.T, c *Channels[string], lose func(), s *ChannelSubscription[string]) {
			lose()
			r, err := c.Join(ctx, "room", "u", "a", "Ann")
			require.NoError(t, err)
			assert.Equal(t, JoinResult{Changed: true, Devices: 1, Members: 1}, r, "joined, once")
			assert.Equal(t, []string{"join:u"}, chanEvents(t, s, quiet))
		}},
		{"leave", chanLeaveOp, func(t *testing.T, c *Channels[string], lose func(), s *ChannelSubscription[string]) {
			_, err := c.Join(ctx, "room", "u", "a", "Ann")
			require.NoError(t, err)
			lose()
			r, err := c.Leave(ctx, "room", "u", "a")
			require.NoError(t, err)
			assert.Equal(t, JoinResult{Changed: true}, r, "left, once")
			assert.Equal(t, []string{"join:u", "leave:u"}, chanEvents(t, s, quiet))
		}},
		{"update", chanUpdateOp, func(t *testing.T, c *Channels[string], lose func(), s *ChannelSubscription[string]) {
			_, err := c.Join(ctx, "room", "u", "a", "Ann")
			require.NoError(t, err)
			lose()
			changed, err := c.Update(ctx, "room", "u", "Ann B.")
			require.NoError(t, err)
			assert.True(t, changed, "changed, once")
			assert.Equal(t, []string{"join:u", "update:u"}, chanEvents(t, s, quiet))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := harness.New(t)
			rdb, p := e.ProxyClient(nil)
			c, err := NewChannels[string](rdb, WithNamespace(e.NS), WithOccupancyInterval(0))
			require.NoError(t, err)
			obs, err := NewChannels[string](e.Client, WithNamespace(e.NS))
			require.NoError(t, err)
			s, err := obs.Subscribe(e.Ctx(), "room")
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			lose := func() {
				require.NoError(t, tc.op.Load(e.Ctx(), e.Client))
				p.LoseReply(tc.op.Script().Hash())
			}
			tc.run(t, c, lose, s)
			assert.Zero(t, p.Pending(), "the armed loss was used")
			assert.EqualValues(t, 1, p.Lost(), "one reply lost")
		})
	}
}
