package presence_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/presence"
)

// chanSnap reads a channel's members and devices atomically (MULTI on the
// channel's slot) and checks the layout's invariant: every member's device
// count is the number of its devices, and no device lacks its member.
func chanSnap(t *testing.T, e *harness.Env, ch string) (map[string]string, error) {
	ctx := e.Ctx()
	mk, dk := key(t, e, "presence:channel:{channel}", ch), key(t, e, "presence:channel:devices:{channel}", ch)
	var h *redis.MapStringStringCmd
	var z *redis.StringSliceCmd
	if _, err := e.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HGetAll(ctx, mk)
		z = p.ZRange(ctx, dk, 0, -1)
		return nil
	}); err != nil {
		return nil, err
	}
	devs := map[string]int{}
	for _, d := range z.Val() {
		n, rest, _ := strings.Cut(d, ":")
		l, _ := strconv.Atoi(n)
		devs[rest[:l]]++
	}
	for u, v := range h.Val() {
		n, _, _ := strings.Cut(v, ":")
		if c, _ := strconv.Atoi(n); c != devs[u] {
			return nil, fmt.Errorf("member %s counts %d devices, %d stored", u, c, devs[u])
		}
		delete(devs, u)
	}
	if len(devs) > 0 {
		return nil, fmt.Errorf("devices without a member: %v", devs)
	}
	return h.Val(), nil
}

// TestChannelChurnExactlyOnce: 120 goroutines (40 users x 3 devices) join,
// heartbeat, leave and go silent (stop heartbeating past the TTL) on one
// channel while two sweepers run and an observer takes atomic snapshots.
// Every user's events alternate join, leave, join, ... exactly: no second
// join without a leave, no leave without a join; the join events are the
// Joins that reported Changed, the "leave" leaves the Leaves that did, and
// the "timeout" leaves at least those the sweeps reported (writes settle
// the others); at the end, after the last devices expire and a sweep,
// every user has as many leaves as joins and the channel is empty.
func TestChannelChurnExactlyOnce(t *testing.T) {
	e := harness.New(t)
	c := newChannels(t, e)
	const ch, users, devices, ops = "churn", 40, 3, 20
	s := chanSub(t, e, c, ch)
	ctx := e.Ctx()

	var mu sync.Mutex
	seq := map[string][]string{} // user -> "join", "leave", "timeout"
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := s.Next(ctx)
			if err != nil {
				t.Errorf("events: %v", err)
				return
			}
			if ev.Type == presence.Occupancy || ev.Type == presence.Updated {
				continue
			}
			if ev.UserID == "zz-end" {
				return
			}
			what := "join"
			if ev.Type == presence.Left {
				what = ev.Reason
			}
			mu.Lock()
			seq[ev.UserID] = append(seq[ev.UserID], what)
			mu.Unlock()
		}
	}()

	var joins, leaves, swept atomic.Int64
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var violations atomic.Value
	bg.Add(3)
	for range 2 {
		go func() { // sweepers
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				n, err := c.Sweep(ctx, c.Shard(ch), 1)
				if err != nil {
					t.Errorf("sweep: %v", err)
					return
				}
				swept.Add(int64(n))
			}
		}()
	}
	go func() { // observer; on miniredis also the clock
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if _, err := chanSnap(t, e, ch); err != nil {
				violations.Store(err.Error())
			}
			if !e.Real() {
				e.Advance(20 * time.Millisecond)
			}
		}
	}()

	var wg sync.WaitGroup
	for u := range users {
		for d := range devices {
			wg.Add(1)
			go func() {
				defer wg.Done()
				user, dev := fmt.Sprintf("u%02d", u), fmt.Sprintf("d%d", d)
				for range ops {
					switch r := rand.IntN(100); {
					case r < 40:
						res, err := c.Join(ctx, ch, user, dev, roomData{user})
						if err != nil {
							t.Errorf("join: %v", err)
							return
						}
						if res.Changed {
							joins.Add(1)
						}
					case r < 70:
						if err := c.Heartbeat(ctx, ch, user, dev); err != nil && !errors.Is(err, presence.ErrUnknownConnection) {
							t.Errorf("heartbeat: %v", err)
							return
						}
					case r < 95:
						res, err := c.Leave(ctx, ch, user, dev)
						if err != nil {
							t.Errorf("leave: %v", err)
							return
						}
						if res.Changed {
							leaves.Add(1)
						}
					default: // go silent past the TTL (on miniredis the clock goroutine moves time)
						if e.Real() {
							time.Sleep(short.TTL + 100*time.Millisecond)
						} else {
							time.Sleep(30 * time.Millisecond)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if v := violations.Load(); v != nil {
		t.Fatalf("snapshot invariant broken: %v", v)
	}

	// Every device left is silent now: let them expire and sweep.
	if e.Real() {
		time.Sleep(short.TTL + 100*time.Millisecond)
	} else {
		e.Advance(short.TTL + 100*time.Millisecond)
	}
	n, err := c.Sweep(ctx, c.Shard(ch), 1)
	require.NoError(t, err)
	swept.Add(int64(n))
	_, err = c.Join(ctx, ch, "zz-end", "x", roomData{}) // its event closes the stream
	require.NoError(t, err)
	<-done

	mu.Lock()
	defer mu.Unlock()
	var nJoin, nLeave, nTimeout int64
	for u, evs := range seq {
		for i, what := range evs {
			if want := i%2 == 0; want != (what == "join") {
				t.Fatalf("user %s: events %v are not join, leave, join, ...", u, evs)
			}
			switch what {
			case "join":
				nJoin++
			case "leave":
				nLeave++
			default:
				nTimeout++
			}
		}
		require.Equal(t, 0, len(evs)%2, "user %s ends a member: %v", u, evs)
	}
	assert.Equal(t, joins.Load(), nJoin, "join events = Joins that reported Changed")
	assert.Equal(t, leaves.Load(), nLeave, "leave events = Leaves that reported Changed")
	assert.Equal(t, nJoin, nLeave+nTimeout)
	assert.GreaterOrEqual(t, nTimeout, swept.Load(), "every leave a sweep reported was published")
	assert.Positive(t, nTimeout, "some leaves were silent")
	t.Logf("%d joins, %d leaves, %d silent leaves (%d found by sweeps)", nJoin, nLeave, nTimeout, swept.Load())
	ms, err := c.Members(ctx, ch)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "zz-end", ms[0].UserID)
	_, err = chanSnap(t, e, ch)
	require.NoError(t, err)
	e.RequireTTLs(nil)
}
