package presence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// forEach runs fn(i) for i in [0, n) on 16 goroutines and returns the
// first error.
func forEach(n int, fn func(i int) error) error {
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// MaxConnections live connections per user: accepted, pruned all at once
// when they go stale (one HDEL of 1023 fields, batched), and one more is
// refused. All but one are planted as Connect writes them (a thousand
// scripts take seconds on miniredis); the scripts then work on all of
// them.
func TestMaxConnections(t *testing.T) {
	eachLayout(t, func(t *testing.T, l layout) {
		e := harness.New(t)
		tr := newTracker(t, e, l.opt(), presence.WithProfile(short), presence.WithMaxConnections(presence.MaxConnections))
		ctx := e.Ctx()
		now := e.Now().UnixMilli()
		pk, ck := key(t, e, "presence:{user_id}", "u"), key(t, e, "connections:{user_id}", "u")
		var fields []any
		var members []string
		for i := 1; i < presence.MaxConnections; i++ {
			id := fmt.Sprint("c", i)
			fields = append(fields, id, fmt.Sprintf(`{"connectedAt":%d,"lastSeen":%d,"metadata":{"device":"web"}}`, now, now))
			members = append(members, fmt.Sprintf(`%q:[%d,%d,{"device":"web"}]`, id, now, now))
		}
		pv := fmt.Sprintf(`{"status":"online","lastSeen":%d,"activeConnections":%d}`, now, presence.MaxConnections-1)
		if l.single() {
			pv = strings.TrimSuffix(pv, "}") + `,"connections":{` + strings.Join(members, ",") + `}}`
		} else {
			require.NoError(t, e.Client.HSet(ctx, ck, fields...).Err())
			require.NoError(t, e.Client.PExpire(ctx, ck, short.TTL).Err())
		}
		require.NoError(t, e.Client.Set(ctx, pk, pv, short.TTL).Err())

		r, err := tr.Connect(ctx, "u", presence.Conn{ID: "c0", Metadata: presence.Metadata{Device: "web"}})
		require.NoError(t, err)
		assert.Equal(t, presence.MaxConnections, r.Connections)
		r, err = tr.Connect(ctx, "u", presence.Conn{ID: "one-more"})
		require.ErrorIs(t, err, presence.ErrTooManyConnections)
		assert.Equal(t, presence.MaxConnections, r.Connections)
		cs, err := tr.Connections(ctx, "u")
		require.NoError(t, err)
		assert.Len(t, cs, presence.MaxConnections)
		e.Advance(600 * time.Millisecond)
		_, err = tr.Heartbeat(ctx, "u", "c0")
		require.NoError(t, err)
		e.Advance(500 * time.Millisecond) // every other connection is stale
		r, err = tr.Heartbeat(ctx, "u", "c0")
		require.NoError(t, err)
		assert.Equal(t, 1, r.Connections)
		assert.Len(t, l.conns(t, e, "u"), 1, "the stale ones are gone")
	})
}

// GetMany and Online at MaxUsers; one more is ErrInvalid before any I/O.
func TestMaxUsers(t *testing.T) {
	e := harness.New(t)
	tr := newTracker(t, e)
	ctx := e.Ctx()
	users := make([]string, presence.MaxUsers)
	for i := range users {
		users[i] = fmt.Sprint("user-", i)
	}
	require.NoError(t, forEach(100, func(i int) error {
		_, err := tr.Connect(ctx, users[i*100], presence.Conn{ID: "c"})
		return err
	}))
	ps, err := tr.GetMany(ctx, users)
	require.NoError(t, err)
	online := 0
	for _, p := range ps {
		if p.Online() {
			online++
		}
	}
	assert.Equal(t, 100, online)
	on, err := tr.Online(ctx, users)
	require.NoError(t, err)
	assert.Len(t, on, 100)
	_, err = tr.GetMany(ctx, append(users, "one-more"))
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = tr.Online(ctx, append(users, "one-more"))
	assert.ErrorIs(t, err, presence.ErrInvalid)
}

// Sweep announces at most 256 users per shard and visit, the rest on the
// next visit.
func TestSweepLimit(t *testing.T) {
	e := harness.New(t)
	tr := newTracker(t, e, presence.WithProfile(short))
	ctx := e.Ctx()
	const n = 300
	// n users in one slot
	slot := keys.Slot("user-0")
	users := []string{"user-0"}
	for i := 1; len(users) < n; i++ {
		if u := fmt.Sprint("user-", i); keys.Slot(u) == slot {
			users = append(users, u)
		}
	}
	sub, err := tr.Subscribe(ctx)
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, forEach(n, func(i int) error {
		_, err := tr.Connect(ctx, users[i], presence.Conn{ID: "c"})
		return err
	}))
	e.Advance(1100 * time.Millisecond)
	pk := key(t, e, "presence:{user_id}", "user-0")
	first, err := tr.Sweep(ctx, keys.Slot(pk), 1)
	require.NoError(t, err)
	assert.Equal(t, 256, first)
	second, err := tr.Sweep(ctx, keys.Slot(pk), 1)
	require.NoError(t, err)
	assert.Equal(t, n-256, second)
	evs := collect(t, sub, 2*n, 200*time.Millisecond)
	assert.Len(t, byUser(evs), n)
}

// Input at its documented maximum is accepted; one byte more is ErrInvalid
// and writes nothing.
func TestInputAtMaximum(t *testing.T) {
	e := harness.New(t)
	tr := newTracker(t, e, presence.WithMaxMetadata(presence.MaxMetadata))
	typing := newTyping(t, e)
	ctx := e.Ctx()
	overhead := len(`{"userAgent":""}`)
	md := presence.Metadata{UserAgent: strings.Repeat("m", presence.MaxMetadata-overhead)}
	id := strings.Repeat("i", presence.MaxConnIDLen)
	_, err := tr.Connect(ctx, "u", presence.Conn{ID: id, Metadata: md})
	require.NoError(t, err)
	cs, err := tr.Connections(ctx, "u")
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, md, cs[0].Metadata)
	md.UserAgent += "m"
	_, err = tr.Connect(ctx, "u", presence.Conn{ID: "other", Metadata: md})
	assert.ErrorIs(t, err, presence.ErrInvalid)
	_, err = tr.Connect(ctx, "u", presence.Conn{ID: id + "i"})
	assert.ErrorIs(t, err, presence.ErrInvalid)
	long := strings.Repeat("u", 1024)
	_, err = tr.Connect(ctx, long, presence.Conn{ID: "c"})
	require.NoError(t, err)

	ok, err := typing.Start(ctx, long, long, strings.Repeat("n", presence.MaxUsernameLen))
	require.NoError(t, err)
	assert.True(t, ok)
	_, err = typing.Start(ctx, "c", "u", strings.Repeat("n", presence.MaxUsernameLen+1))
	assert.ErrorIs(t, err, presence.ErrInvalid)
	cs, err = tr.Connections(ctx, "u")
	require.NoError(t, err)
	assert.Len(t, cs, 1, "nothing written by the refused calls")
}

// RunSweeper's interval and batch are bounded by the sweep window.
func TestRunSweeperBounds(t *testing.T) {
	e := harness.New(t)
	tr := newTracker(t, e, presence.WithProfile(short))
	ctx, cancel := context.WithTimeout(e.Ctx(), 50*time.Millisecond)
	defer cancel()
	for _, c := range []struct {
		every time.Duration
		batch int
	}{{time.Duration(1<<63 - 1), presence.Shards}, {short.Retention + 1, presence.Shards}, {-1, 1}, {time.Millisecond, presence.Shards + 1}} {
		err := tr.RunSweeper(ctx, c.every, c.batch, nil)
		assert.ErrorIs(t, err, presence.ErrInvalid, "%v", c)
	}
	err := tr.RunSweeper(ctx, short.Retention, presence.Shards, nil)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "a cycle of exactly the window runs: %v", err)
}
