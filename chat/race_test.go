package chat

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// instances returns n Chats of one deployment, each on its own client on
// the real backends (separate app instances), as a stale-roster start.
func instances(t *testing.T, e *harness.Env, n int, opts ...Option) []*Chat {
	out := make([]*Chat, n)
	for i := range out {
		rdb := e.Client
		if e.Real() {
			rdb = e.FreshClient()
		}
		out[i] = newChatOn(t, e, rdb, opts...)
	}
	return out
}

// atomicSnapshot reads every admin's set, the backlog and the states in
// one script: a consistent view while writers run.
var atomicSnapshot = redis.NewScript(`
local out = {}
for i = 4, #KEYS do out[#out + 1] = redis.call('SMEMBERS', KEYS[i]) end
return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('HGETALL', KEYS[2]), redis.call('ZRANGE', KEYS[3], 0, -1), out}`)

func (c *Chat) atomicSnapshot(t testing.TB, admins []string, caps map[string]int) snapshot {
	t.Helper()
	ks := []string{c.global[3], c.global[0], c.global[1]}
	for _, a := range admins {
		q, err := c.adminKeys("test", a)
		require.NoError(t, err)
		ks = append(ks, q[1])
	}
	v, err := atomicSnapshot.Run(context.Background(), c.run.Client(), ks).Slice()
	require.NoError(t, err)
	strs := func(x any) []string {
		var out []string
		for _, s := range x.([]any) {
			out = append(out, s.(string))
		}
		return out
	}
	s := snapshot{sets: map[string][]string{}, caps: caps, backlog: strs(v[0]), active: strs(v[2]), states: map[string]string{}}
	kv := strs(v[1])
	for i := 0; i+1 < len(kv); i += 2 {
		s.states[kv[i]] = kv[i+1]
	}
	for i, m := range v[3].([]any) {
		s.sets[admins[i]] = strs(m)
	}
	return s
}

// TestConcurrentAssignments is the proof of the assignment invariant:
// 200 concurrent Opens over 5 admins of capacity 10, from 4 app
// instances: no admin above 10, no conversation with two admins, and
// assignments + backlog = conversations exactly.
func TestConcurrentAssignments(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	cs := instances(t, e, 4)
	admins := team(t, cs[0], 5, 10)
	caps := map[string]int{}
	for _, a := range admins {
		caps[a] = 10
	}
	const n = 200
	var wg sync.WaitGroup
	got := make([]Assignment, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = cs[i%len(cs)].Open(ctx, fmt.Sprint("conv-", i), bands[i%4])
		}()
	}
	close(start)
	wg.Wait()
	perAdmin := map[string]int{}
	for i := range n {
		require.NoError(t, errs[i])
		require.True(t, got[i].Opened)
		perAdmin[got[i].Admin]++
	}
	s := cs[0].snapshot(t)
	assigned, backlog := s.check(t)
	t.Logf("%s: %d opens over 5 admins of capacity 10: %d assigned (%v), %d in the backlog", e.Backend, n, assigned, perAdmin, backlog)
	assert.Equal(t, 50, assigned)
	assert.Equal(t, 150, backlog)
	assert.Equal(t, n, assigned+backlog)
	for _, a := range admins {
		assert.Len(t, s.sets[a], 10, a)
		assert.Equal(t, 10, perAdmin[a], "replies agree with the sets")
	}
	// The backlog is what is left, most urgent first.
	w, err := cs[0].Backlog(ctx, 150)
	require.NoError(t, err)
	for i := 1; i < len(w); i++ {
		assert.GreaterOrEqual(t, w[i-1].Priority.Weight(), w[i].Priority.Weight())
	}
}

// Appends made at once share pipelines (WithPipelining), or go out one
// round trip each with WithPipelining(0); either way every conversation
// numbers its messages 1..n, each once.
func TestAppendsSharePipelines(t *testing.T) {
	for _, lanes := range []int{1, 0} {
		t.Run(fmt.Sprint("lanes=", lanes), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			rdb := e.FreshClient()
			c := newChatOn(t, e, rdb, WithPipelining(lanes))
			const convs, per = 20, 10
			for i := range convs {
				_, err := c.Open(ctx, fmt.Sprint("conv-", i), Normal)
				require.NoError(t, err)
			}
			trips := harness.CountTrips(rdb)
			got := make([]int64, convs*per) // message IDs, by call
			harness.AllAtOnce(convs*per, func(i int) {
				m, err := c.Append(ctx, fmt.Sprint("conv-", i%convs), Message{Content: "hi", SenderRole: User})
				assert.NoError(t, err)
				got[i] = m.ID
			})
			for conv := range convs {
				var ids []int64
				for i := conv; i < len(got); i += convs {
					ids = append(ids, got[i])
				}
				assert.ElementsMatch(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ids, "conv-%d", conv)
			}
			trips.CheckShared(t, lanes, convs*per)
		})
	}
}

// TestConcurrentChurn runs every routing path at once (open, resolve,
// unassign, assign, transfer, availability going offline and back,
// reconcile) from 4 instances while a monitor reads the whole routing
// state atomically: the invariants hold at every sample and at the end.
func TestConcurrentChurn(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	cs := instances(t, e, 4)
	admins := team(t, cs[0], 5, 10)
	caps := map[string]int{}
	for _, a := range admins {
		caps[a] = 10
	}
	const workers, rounds = 40, 25
	var opened atomic.Int64
	var resolved atomic.Int64
	stop := make(chan struct{})
	var samples atomic.Int64
	mon := make(chan struct{})
	go func() {
		defer close(mon)
		for {
			select {
			case <-stop:
				return
			default:
			}
			cs[0].atomicSnapshot(t, admins, caps).check(t)
			samples.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[w%len(cs)]
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				conv := fmt.Sprintf("c%d", r.IntN(120))
				admin := admins[r.IntN(len(admins))]
				var err error
				switch r.IntN(9) {
				case 0, 1, 2:
					var a Assignment
					a, err = c.Open(ctx, fmt.Sprintf("c%d", w*rounds+i), bands[r.IntN(4)])
					if a.Opened {
						opened.Add(1)
					}
				case 3:
					if _, err = c.Resolve(ctx, conv); err == nil {
						resolved.Add(1)
					}
				case 4:
					_, err = c.Unassign(ctx, conv)
				case 5:
					_, err = c.Assign(ctx, conv, admin)
				case 6:
					_, err = c.Transfer(ctx, conv, admin, admins[r.IntN(len(admins))])
				case 7:
					st := []presence.Status{presence.Online, presence.Offline, presence.Busy}[r.IntN(3)]
					err = c.Availability().Set(ctx, admin, st)
				case 8:
					_, err = c.Reconcile(ctx)
				}
				switch {
				case err == nil, errorsIsAny(err, ErrNotFound, ErrFull, ErrUnavailable, ErrNotAssigned):
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-mon
	for _, a := range admins {
		require.NoError(t, cs[0].Availability().Set(ctx, a, presence.Online))
	}
	_, err := cs[0].Reconcile(ctx)
	require.NoError(t, err)
	s := cs[0].snapshot(t)
	assigned, backlog := s.check(t)
	t.Logf("%s: %d opened, %d resolved; end: %d assigned + %d in the backlog; %d atomic samples held the invariants",
		e.Backend, opened.Load(), resolved.Load(), assigned, backlog, samples.Load())
	assert.EqualValues(t, opened.Load()-resolved.Load(), assigned+backlog, "assignments + backlog = open conversations")
	assert.Equal(t, min(50, assigned+backlog), assigned, "everyone online: the backlog only holds what exceeds 5 x 10")
}
