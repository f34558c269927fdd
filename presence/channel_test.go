package presence_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

type roomData struct {
	Name string `json:"name"`
}

func newChannels(t *testing.T, e *harness.Env, opts ...presence.Option) *presence.Channels[roomData] {
	t.Helper()
	c, err := presence.NewChannels[roomData](e.Client, append([]presence.Option{presence.WithNamespace(e.NS), presence.WithProfile(short)}, opts...)...)
	require.NoError(t, err)
	return c
}

func chanSub(t *testing.T, e *harness.Env, c *presence.Channels[roomData], ch string) *presence.ChannelSubscription[roomData] {
	t.Helper()
	s, err := c.Subscribe(e.Ctx(), ch)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// next returns the next event that is not an occupancy event.
func next(t *testing.T, e *harness.Env, s *presence.ChannelSubscription[roomData]) presence.ChannelEvent[roomData] {
	t.Helper()
	for {
		ev, err := s.Next(e.Ctx())
		require.NoError(t, err)
		if ev.Type != presence.Occupancy {
			return ev
		}
	}
}

func TestChannelJoinLeaveDeduplicates(t *testing.T) {
	e := harness.New(t)
	c := newChannels(t, e, presence.WithOccupancyInterval(0))
	ctx := e.Ctx()
	s := chanSub(t, e, c, "room-1")

	r, err := c.Join(ctx, "room-1", "ann", "tab-1", roomData{"Ann"})
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{Changed: true, Devices: 1, Members: 1}, r)
	r, err = c.Join(ctx, "room-1", "ann", "phone", roomData{"Ann"})
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{Changed: false, Devices: 2, Members: 1}, r, "a second device is not a second member")
	r, err = c.Join(ctx, "room-1", "bob", "tab-1", roomData{"Bob"})
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{Changed: true, Devices: 1, Members: 2}, r)

	n, err := c.Count(ctx, "room-1")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	ms, err := c.Members(ctx, "room-1")
	require.NoError(t, err)
	assert.Equal(t, []presence.Member[roomData]{{UserID: "ann", Devices: 2, Data: roomData{"Ann"}}, {UserID: "bob", Devices: 1, Data: roomData{"Bob"}}}, ms)

	r, err = c.Leave(ctx, "room-1", "ann", "tab-1")
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{Changed: false, Devices: 1, Members: 2}, r, "ann still has her phone")
	r, err = c.Leave(ctx, "room-1", "ann", "phone")
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{Changed: true, Devices: 0, Members: 1}, r)
	r, err = c.Leave(ctx, "room-1", "ann", "phone")
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{Changed: false, Devices: 0, Members: 1}, r, "leaving twice is not an error")

	for _, want := range []struct {
		typ  presence.ChannelEventType
		user string
	}{{presence.Joined, "ann"}, {presence.Joined, "bob"}, {presence.Left, "ann"}} {
		ev := next(t, e, s)
		assert.Equal(t, want.typ, ev.Type)
		assert.Equal(t, want.user, ev.UserID)
		if ev.Type == presence.Left {
			assert.Equal(t, "leave", ev.Reason)
		} else {
			assert.Equal(t, want.user, map[string]string{"Ann": "ann", "Bob": "bob"}[ev.Data.Name])
		}
	}
	n, err = c.Count(ctx, "room-1")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	e.RequireTTLs(nil)
}

func TestChannelUpdateAndData(t *testing.T) {
	e := harness.New(t)
	c := newChannels(t, e, presence.WithOccupancyInterval(0))
	ctx := e.Ctx()
	s := chanSub(t, e, c, "doc")

	_, err := c.Update(ctx, "doc", "ann", roomData{"x"})
	assert.ErrorIs(t, err, presence.ErrNotMember)
	_, err = c.Join(ctx, "doc", "ann", "tab", roomData{"Ann"})
	require.NoError(t, err)
	changed, err := c.Update(ctx, "doc", "ann", roomData{"Ann (away)"})
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = c.Update(ctx, "doc", "ann", roomData{"Ann (away)"})
	require.NoError(t, err)
	assert.False(t, changed, "the same data is no change")
	_, err = c.Join(ctx, "doc", "ann", "phone", roomData{"Ann"})
	require.NoError(t, err)

	assert.Equal(t, presence.Joined, next(t, e, s).Type)
	ev := next(t, e, s)
	assert.Equal(t, presence.Updated, ev.Type)
	assert.Equal(t, "Ann (away)", ev.Data.Name)
	ev = next(t, e, s)
	assert.Equal(t, presence.Updated, ev.Type, "another device's Join with other data updates it")
	assert.Equal(t, "Ann", ev.Data.Name)
	ms, err := c.Members(ctx, "doc")
	require.NoError(t, err)
	assert.Equal(t, []presence.Member[roomData]{{UserID: "ann", Devices: 2, Data: roomData{"Ann"}}}, ms)
}

func TestChannelSilentLeave(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2300 * time.Millisecond)
	c := newChannels(t, e, presence.WithOccupancyInterval(0))
	ctx := e.Ctx()
	s := chanSub(t, e, c, "room")

	_, err := c.Join(ctx, "room", "ann", "tab", roomData{"Ann"})
	require.NoError(t, err)
	_, err = c.Join(ctx, "room", "bob", "tab", roomData{"Bob"})
	require.NoError(t, err)
	_, err = c.Join(ctx, "room", "bob", "phone", roomData{"Bob"})
	require.NoError(t, err)
	e.Advance(600 * time.Millisecond)
	require.NoError(t, c.Heartbeat(ctx, "room", "bob", "phone"))
	e.Advance(600 * time.Millisecond) // ann's tab and bob's tab are past the TTL

	n, err := c.Sweep(ctx, c.Shard("room"), 1)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "ann left; bob keeps his phone")
	n, err = c.Sweep(ctx, c.Shard("room"), 1)
	require.NoError(t, err)
	assert.Zero(t, n, "announced once")
	err = c.Heartbeat(ctx, "room", "ann", "tab")
	assert.ErrorIs(t, err, presence.ErrUnknownConnection)
	ms, err := c.Members(ctx, "room")
	require.NoError(t, err)
	assert.Equal(t, []presence.Member[roomData]{{UserID: "bob", Devices: 1, Data: roomData{"Bob"}}}, ms)

	assert.Equal(t, presence.Joined, next(t, e, s).Type)
	assert.Equal(t, presence.Joined, next(t, e, s).Type)
	ev := next(t, e, s)
	assert.Equal(t, presence.Left, ev.Type)
	assert.Equal(t, "ann", ev.UserID)
	assert.Equal(t, "timeout", ev.Reason)

	// a write to the channel settles expired devices itself
	e.Advance(1100 * time.Millisecond)
	_, err = c.Join(ctx, "room", "cat", "tab", roomData{"Cat"})
	require.NoError(t, err)
	ev = next(t, e, s)
	assert.Equal(t, presence.Left, ev.Type)
	assert.Equal(t, "bob", ev.UserID)
	assert.Equal(t, "timeout", ev.Reason)
	assert.Equal(t, presence.Joined, next(t, e, s).Type)
	n, err = c.Sweep(ctx, c.Shard("room"), 1)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestChannelOccupancyThrottled(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(800 * time.Millisecond)
	c := newChannels(t, e, presence.WithOccupancyInterval(300*time.Millisecond))
	ctx := e.Ctx()
	s := chanSub(t, e, c, "room")

	for _, u := range []string{"a", "b", "c"} {
		_, err := c.Join(ctx, "room", u, "tab", roomData{u})
		require.NoError(t, err)
	}
	var counts []int
	occ := func() {
		for {
			ev, err := s.Next(e.Ctx())
			require.NoError(t, err)
			if ev.Type == presence.Occupancy {
				counts = append(counts, ev.Count)
				return
			}
		}
	}
	occ()
	assert.Equal(t, []int{1}, counts, "the first change is published at once, the next two wait for the interval")
	e.Advance(400 * time.Millisecond)
	n, err := c.Sweep(ctx, c.Shard("room"), 1)
	require.NoError(t, err)
	assert.Zero(t, n)
	occ()
	assert.Equal(t, []int{1, 3}, counts, "the sweep publishes the pending count")

	_, err = c.Join(ctx, "room", "d", "tab", roomData{"d"})
	require.NoError(t, err)
	e.Advance(400 * time.Millisecond)
	require.NoError(t, c.Heartbeat(ctx, "room", "a", "tab"))
	occ()
	assert.Equal(t, []int{1, 3, 4}, counts, "a heartbeat publishes the pending count too")
	n, err = c.Count(ctx, "room")
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	e.RequireTTLs(nil)
}

func TestChannelInput(t *testing.T) {
	e := harness.New(t)
	c := newChannels(t, e)
	ctx := e.Ctx()
	_, err := c.Join(ctx, "", "u", "c", roomData{})
	assert.ErrorIs(t, err, presence.ErrInvalid)
	assert.ErrorIs(t, err, keys.ErrInvalid)
	_, err = c.Join(ctx, "r", "", "c", roomData{})
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = c.Join(ctx, "r", "u", "", roomData{})
	assert.ErrorIs(t, err, presence.ErrInvalid)
	big := roomData{Name: string(make([]byte, presence.DefaultMaxMetadata))}
	_, err = c.Join(ctx, "r", "u", "c", big)
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = presence.NewChannels[roomData](e.Client, presence.WithOccupancyInterval(-time.Second))
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = c.Sweep(ctx, presence.Shards, 1)
	assert.ErrorIs(t, err, presence.ErrInvalid)
	assert.Empty(t, e.Keys())

	c1 := newChannels(t, e, presence.WithMaxConnections(1))
	_, err = c1.Join(ctx, "r", "u", "c1", roomData{})
	require.NoError(t, err)
	_, err = c1.Join(ctx, "r", "u", "c2", roomData{})
	assert.True(t, errors.Is(err, presence.ErrTooManyConnections), err)
}

// Heartbeats of many channels made at once share pipelines
// (auto-pipelining, WithPipelining): fewer round trips than calls.
func TestChannelHeartbeatsSharePipelines(t *testing.T) {
	sharePipelines(t, 1, func(ctx context.Context, c *presence.Channels[roomData], i int) {
		assert.NoError(t, c.Heartbeat(ctx, "room-"+strconv.Itoa(i), "user-"+strconv.Itoa(i), "tab"))
	})
}

// Count and Members of many channels at once share pipelines too, each
// with its own channel's answer.
func TestChannelReadsSharePipelines(t *testing.T) {
	sharePipelines(t, 2, func(ctx context.Context, c *presence.Channels[roomData], i int) {
		room := "room-" + strconv.Itoa(i)
		n, err := c.Count(ctx, room)
		assert.NoError(t, err)
		assert.Equal(t, 1, n, room)
		ms, err := c.Members(ctx, room)
		assert.NoError(t, err)
		if assert.Len(t, ms, 1, room) {
			assert.Equal(t, "user-"+strconv.Itoa(i), ms[0].UserID)
			assert.Equal(t, roomData{"N" + strconv.Itoa(i)}, ms[0].Data)
		}
	})
}

// sharePipelines joins user-i to room-i for 200 rooms, then makes
// calls(i), which sends perRoom calls, for every room at once on a
// Channels with one lane over a client of its own, and checks that
// they went out in shared pipelines: fewer round trips than calls.
func sharePipelines(t *testing.T, perRoom int, calls func(ctx context.Context, c *presence.Channels[roomData], i int)) {
	e := harness.New(t)
	c0 := newChannels(t, e)
	ctx := e.Ctx()
	const rooms = 200
	for i := range rooms {
		_, err := c0.Join(ctx, "room-"+strconv.Itoa(i), "user-"+strconv.Itoa(i), "tab", roomData{"N" + strconv.Itoa(i)})
		require.NoError(t, err)
	}
	rdb := e.FreshClient()
	trips := harness.CountTrips(rdb)
	c, err := presence.NewChannels[roomData](rdb, presence.WithNamespace(e.NS), presence.WithProfile(short), presence.WithPipelining(1))
	require.NoError(t, err)
	calls(ctx, c, 0) // loads the scripts
	trips.Reset()
	harness.AllAtOnce(rooms, func(i int) { calls(ctx, c, i) })
	trips.CheckShared(t, 1, perRoom*rooms)
}

// A channel key of a foreign type fails the write before it writes
// anything: no member, no device, no event.
func TestChannelForeignTypeWritesNothing(t *testing.T) {
	for _, tmpl := range []string{"presence:channel:occupancy:{channel}", "presence:channel:due:{slot}"} {
		t.Run(tmpl, func(t *testing.T) {
			e := harness.New(t)
			c := newChannels(t, e)
			ctx := e.Ctx()
			arg := "room"
			if tmpl == "presence:channel:due:{slot}" {
				arg = keys.SlotTag(c.Shard("room"))
			}
			k := key(t, e, tmpl, arg)
			require.NoError(t, e.Client.HSet(ctx, k, "f", "v").Err())
			require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
			_, err := c.Join(ctx, "room", "ann", "tab", roomData{"Ann"})
			require.ErrorIs(t, err, keys.ErrCorrupt)
			assert.Equal(t, []string{k}, e.Keys(), "nothing written but the foreign key")
		})
	}
}

// RunSweeper announces a silent leave without any write to the channel,
// and refuses a cycle longer than the sweep window. Batches of 1024 shards
// every 10 ms, as TestRunSweeper: a pipeline of all 16384 scripts can
// outlast the read timeout on miniredis's Lua under -race.
func TestChannelRunSweeper(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(1200 * time.Millisecond)
	p := short
	p.Retention = 5 * time.Second // the window: a cycle may be slow on a loaded machine
	c := newChannels(t, e, presence.WithOccupancyInterval(0), presence.WithProfile(p))
	ctx := e.Ctx()
	s := chanSub(t, e, c, "room")
	_, err := c.Join(ctx, "room", "ann", "tab", roomData{"Ann"})
	require.NoError(t, err)
	assert.Equal(t, presence.Joined, next(t, e, s).Type)
	e.Advance(1100 * time.Millisecond)

	err = c.RunSweeper(ctx, time.Second, 1, nil)
	assert.ErrorIs(t, err, presence.ErrInvalid, "16384 x 1 s exceeds the 5 s window")
	run, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- c.RunSweeper(run, 10*time.Millisecond, presence.Shards/16, func(err error) { t.Error(err) })
	}()
	ev := next(t, e, s)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, presence.Left, ev.Type)
	assert.Equal(t, "timeout", ev.Reason)
	n, err := c.Count(ctx, "room")
	require.NoError(t, err)
	assert.Zero(t, n)
}

// The heads of Join and Leave (the *_fast.lua twins) keep the channel's
// due entry: an occupancy event left pending by the leave that empties
// the channel is published by the sweep, and a channel that emptied
// takes a Heartbeat as unknown.
func TestChannelEmptiedKeepsPendingOccupancy(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(800 * time.Millisecond)
	c := newChannels(t, e, presence.WithOccupancyInterval(300*time.Millisecond))
	ctx := e.Ctx()
	s := chanSub(t, e, c, "room")

	steps := []struct {
		join      bool
		user      string
		changed   bool
		devs, mem int
	}{
		{true, "a", true, 1, 1},  // an empty channel: count 1 published at once
		{true, "b", true, 1, 2},  // count 2 waits for the interval
		{true, "b", false, 1, 2}, // the same device again (the general join)
		{false, "b", true, 0, 1}, // count 1: nothing pending
		{false, "a", true, 0, 0}, // the channel empties: count 0 waits
	}
	for i, st := range steps {
		var r presence.JoinResult
		var err error
		if st.join {
			r, err = c.Join(ctx, "room", st.user, "tab", roomData{st.user})
		} else {
			r, err = c.Leave(ctx, "room", st.user, "tab")
		}
		require.NoError(t, err, i)
		assert.Equal(t, presence.JoinResult{Changed: st.changed, Devices: st.devs, Members: st.mem}, r, i)
	}
	e.Advance(400 * time.Millisecond)
	n, err := c.Sweep(ctx, c.Shard("room"), 1)
	require.NoError(t, err)
	assert.Zero(t, n)

	var got []string
	for len(got) < 6 {
		ev, err := s.Next(ctx)
		require.NoError(t, err)
		switch ev.Type {
		case presence.Occupancy:
			got = append(got, "occupancy "+strconv.Itoa(ev.Count))
		case presence.Joined:
			got = append(got, "join "+ev.UserID)
		case presence.Left:
			got = append(got, "leave "+ev.UserID)
		}
	}
	assert.Equal(t, []string{"join a", "occupancy 1", "join b", "leave b", "leave a", "occupancy 0"}, got)
	assert.ErrorIs(t, c.Heartbeat(ctx, "room", "a", "tab"), presence.ErrUnknownConnection)
	r, err := c.Leave(ctx, "room", "a", "tab")
	require.NoError(t, err)
	assert.Equal(t, presence.JoinResult{}, r, "not in the channel any more")
	n, err = c.Count(ctx, "room")
	require.NoError(t, err)
	assert.Zero(t, n)
	e.RequireTTLs(nil)
}
