package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/presence"
)

// newChat returns a Chat over the test's namespace and client (or c).
func newChat(t testing.TB, e *harness.Env, opts ...Option) *Chat {
	t.Helper()
	return newChatOn(t, e, e.Client, opts...)
}

func newChatOn(t testing.TB, e *harness.Env, rdb redis.UniversalClient, opts ...Option) *Chat {
	t.Helper()
	c, err := New(rdb, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return c
}

// team adds admins a1..an with capacity and sets each online.
func team(t testing.TB, c *Chat, n, capacity int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("a%d", i)
		require.NoError(t, c.AddAdmin(ctx, id, capacity))
		require.NoError(t, c.Availability().Set(ctx, id, presence.Online))
		ids = append(ids, id)
	}
	return ids
}

// snapshot is the deployment's routing state as stored.
type snapshot struct {
	sets    map[string][]string // admin -> conversations
	backlog []string            // highest score first
	states  map[string]string
	active  []string
	caps    map[string]int
}

func (c *Chat) snapshot(t testing.TB) snapshot {
	t.Helper()
	ctx := context.Background()
	rdb := c.run.Client()
	s := snapshot{sets: map[string][]string{}, caps: map[string]int{}}
	roster, err := rdb.HGetAll(ctx, c.global[4]).Result()
	require.NoError(t, err)
	for id, v := range roster {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		s.caps[id] = n
		q, err := c.adminKeys("test", id)
		require.NoError(t, err)
		m, err := rdb.SMembers(ctx, q[1]).Result()
		require.NoError(t, err)
		slices.Sort(m)
		s.sets[id] = m
	}
	s.backlog, err = rdb.ZRevRange(ctx, c.global[3], 0, -1).Result()
	require.NoError(t, err)
	s.states, err = rdb.HGetAll(ctx, c.global[0]).Result()
	require.NoError(t, err)
	s.active, err = rdb.ZRange(ctx, c.global[1], 0, -1).Result()
	require.NoError(t, err)
	return s
}

// check asserts the routing invariants: every open conversation is in
// exactly one place (one admin's set or the backlog) and its state names
// that place; no admin holds more than their capacity; states, the active
// set, and sets + backlog hold the same conversations. It returns the
// number assigned and in the backlog.
func (s snapshot) check(t testing.TB) (assigned, backlog int) {
	t.Helper()
	where := map[string]string{}
	for admin, convs := range s.sets {
		if len(convs) > s.caps[admin] {
			t.Errorf("admin %s holds %d conversations, capacity %d", admin, len(convs), s.caps[admin])
		}
		for _, c := range convs {
			if w, dup := where[c]; dup {
				t.Errorf("conversation %s is in %s's set and in %s's", c, w, admin)
			}
			where[c] = admin
		}
		assigned += len(convs)
	}
	for _, c := range s.backlog {
		if w, dup := where[c]; dup {
			t.Errorf("conversation %s is in the backlog and with %q", c, w)
		}
		where[c] = ""
	}
	backlog = len(s.backlog)
	if len(where) != len(s.states) || len(s.active) != len(s.states) {
		t.Errorf("%d placed (%d assigned + %d backlog), %d states, %d active", len(where), assigned, backlog, len(s.states), len(s.active))
	}
	for c, v := range s.states {
		st, ok := parseState(v, time.Now().UnixMilli()+1e9)
		if !ok {
			t.Errorf("state of %s: %q", c, v)
			continue
		}
		if w, ok := where[c]; !ok || w != st.admin {
			t.Errorf("state of %s names %q, it is placed with %q (placed: %v)", c, st.admin, w, ok)
		}
	}
	return assigned, backlog
}

// collect reads events from s until quiet passes without one.
func collect(t testing.TB, s *Subscription, quiet time.Duration) []Event {
	t.Helper()
	var out []Event
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		ev, err := s.Next(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
