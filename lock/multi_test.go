package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// ownedBy reports which of rs hold a lease whose owner ID starts with
// label and a dot.
func ownedBy(t *testing.T, e *harness.Env, label string, rs []Resource) []string {
	t.Helper()
	var out []string
	for _, r := range rs {
		k, err := lockKey.Key(e.NS, r.Type, r.ID)
		require.NoError(t, err)
		v, err := e.Client.Get(e.Ctx(), k).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		require.NoError(t, err)
		if strings.HasPrefix(v, label+".") {
			out = append(out, k)
		}
	}
	return out
}

func TestMultiOneSlotIsOneScript(t *testing.T) {
	e := harness.New(t)
	c, err := New(e.FreshClient(), WithNamespace(e.NS), WithOwner("a"))
	require.NoError(t, err)
	followServerClock(e, c)
	trips := harness.CountTrips(c.run.Client())
	ctx := e.Ctx()
	// One ID, three types: one hash tag, so one slot.
	rs := []Resource{{File, "42"}, {Workflow, "42"}, {"report", "42"}, {File, "42"}}
	groups, res, err := c.multiGroups("test", rs)
	require.NoError(t, err)
	require.Len(t, groups, 1)
	require.Len(t, res, 3, "duplicates count once")

	for _, op := range []interface {
		Load(context.Context, redis.UniversalClient) error
	}{multiAcquireOp, refreshOp, releaseOp} {
		require.NoError(t, op.Load(ctx, c.run.Client()))
	}
	trips.Reset()
	m, err := c.TryAcquireMulti(ctx, rs, 5*time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 1, trips.Total(), "one round trip")
	require.Len(t, m.Locks(), 3)
	for i, l := range m.Locks() {
		require.Positive(t, l.Fence())
		require.Equal(t, m.Fences()[i], l.Fence())
		require.Equal(t, res[i].lock, l.Key())
	}
	require.Len(t, ownedBy(t, e, "a", rs[:3]), 3)

	// Another set overlapping one resource gets nothing, not even its free one.
	b, err := New(e.Client, WithNamespace(e.NS), WithOwner("b"))
	require.NoError(t, err)
	followServerClock(e, b)
	other := []Resource{{"other", "42"}, {Workflow, "42"}}
	_, err = b.TryAcquireMulti(ctx, other, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.Empty(t, ownedBy(t, e, "b", other))

	trips.Reset()
	require.NoError(t, m.Refresh(ctx, 6*time.Second))
	require.NoError(t, m.Release(ctx))
	require.EqualValues(t, 2, trips.Total(), "refresh and release: one pipeline each")
	<-m.Context().Done()
	require.ErrorIs(t, context.Cause(m.Context()), context.Canceled)
	require.Empty(t, ownedBy(t, e, "a", rs))

	m2, err := b.TryAcquireMulti(ctx, other, time.Second)
	require.NoError(t, err)
	require.Greater(t, m2.Fences()[1], m.Fences()[1], "fences of a resource keep increasing")
	require.NoError(t, m2.Release(ctx))
	e.RequireTTLs(nil)
}

func TestMultiAcrossSlotsRollsBack(t *testing.T) {
	e := harness.New(t)
	a := newClient(t, e, WithOwner("a"))
	b := newClient(t, e, WithOwner("b"))
	ctx := e.Ctx()
	var rs []Resource
	for i := range 8 {
		rs = append(rs, Resource{"doc", fmt.Sprint("d", i)})
	}
	groups, _, err := a.multiGroups("test", rs)
	require.NoError(t, err)
	require.Greater(t, len(groups), 1, "the resources span several slots")

	// b holds the resource of the last group: a takes the earlier groups,
	// finds it held and gives them back.
	last := groups[len(groups)-1]
	var held Resource
	for _, r := range rs {
		k, _ := lockKey.Key(e.NS, r.Type, r.ID)
		if k == last.keys[0] {
			held = r
		}
	}
	hl, err := b.TryAcquire(ctx, held.Type, held.ID, 5*time.Second)
	require.NoError(t, err)
	_, err = a.TryAcquireMulti(ctx, rs, 5*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.Empty(t, ownedBy(t, e, "a", rs), "nothing kept after a refusal")

	// AcquireMulti waits until the resource is free, then holds them all.
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = hl.Release(context.Background())
	}()
	m, err := a.AcquireMulti(ctx, rs, 5*time.Second, WithRetry(LinearBackoff(5*time.Millisecond)))
	require.NoError(t, err)
	require.Len(t, ownedBy(t, e, "a", rs), len(rs))
	for _, f := range m.Fences() {
		require.Positive(t, f)
	}
	require.Greater(t, m.Fences()[0], int64(0))
	require.NoError(t, m.Release(ctx))
	require.Empty(t, ownedBy(t, e, "a", rs))

	// A wait that runs out holds nothing either. The wait is long enough
	// for a first attempt to see the resource held on a loaded machine
	// (an attempt the deadline meets on the wire before any saw it held
	// is that attempt's error, not ErrNotObtained).
	hl, err = b.TryAcquire(ctx, held.Type, held.ID, 5*time.Second)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = a.AcquireMulti(wctx, rs, 5*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// A deadline met by an attempt on the wire leaves its clean-up to the
	// background.
	harness.WaitFor(t, "nothing held after the wait", func() bool { return len(ownedBy(t, e, "a", rs)) == 0 })
	require.NoError(t, hl.Release(ctx))
}

func TestMultiBadInputAndCorruptFence(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e, WithOwner("a"))
	ctx := e.Ctx()
	many := make([]Resource, maxMulti+1)
	for i := range many {
		many[i] = Resource{"doc", fmt.Sprint(i)}
	}
	for name, call := range map[string]func() error{
		"none":     func() error { _, err := c.TryAcquireMulti(ctx, nil, time.Second); return err },
		"too many": func() error { _, err := c.TryAcquireMulti(ctx, many, time.Second); return err },
		"empty id": func() error { _, err := c.TryAcquireMulti(ctx, []Resource{{"doc", ""}}, time.Second); return err },
		"fair":     func() error { _, err := c.AcquireMulti(ctx, many[:2], time.Second, WithFairness(0)); return err },
		"ttl":      func() error { _, err := c.TryAcquireMulti(ctx, many[:2], 0); return err },
	} {
		require.ErrorIs(t, call(), ErrInvalid, name)
	}
	require.Empty(t, e.Keys())

	// A corrupt fence on the second resource of one slot: nothing written.
	rs := []Resource{{"doc", "7"}, {"img", "7"}}
	fk, err := fenceKey.Key(e.NS, "img", "7")
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, fk, "not a token", time.Minute).Err())
	_, err = c.TryAcquireMulti(ctx, rs, time.Second)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.ErrorContains(t, err, fk)
	require.Empty(t, ownedBy(t, e, "a", rs))
	v, err := e.Client.Get(ctx, fk).Result()
	require.NoError(t, err)
	require.Equal(t, "not a token", v)
}

// TestMultiAllOrNothingUnderContention: many goroutines take random
// overlapping sets of resources (some sets in one slot, most across
// slots). A resource never has two holders, every set is held whole or
// not at all (a refused caller holds none of its set), and each
// resource's fencing tokens increase from holder to holder.
func TestMultiAllOrNothingUnderContention(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const (
		goroutines = 24
		rounds     = 40
	)
	// Resources: 6 IDs × 2 types; one ID's two types share a slot.
	var all []Resource
	for i := range 6 {
		all = append(all, Resource{"doc", fmt.Sprint("r", i)}, Resource{"img", fmt.Sprint("r", i)})
	}
	holders := make([]atomic.Int32, len(all))
	var fmu sync.Mutex
	lastFence := make([]int64, len(all))
	var overlap, partial, backwards, wins, refusals atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		label := fmt.Sprint("g", g)
		c := newClient(t, e, WithOwner(label))
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 23))
			for range rounds {
				idx := rng.Perm(len(all))[:1+rng.IntN(4)]
				set := make([]Resource, len(idx))
				for i, j := range idx {
					set[i] = all[j]
				}
				var m *MultiLock
				var err error
				if rng.IntN(2) == 0 {
					m, err = c.TryAcquireMulti(ctx, set, 5*time.Second)
				} else {
					// The strategy, not a deadline, ends the wait: a
					// deadline met on the wire leaves the clean-up to the
					// background, and the check below would race it.
					m, err = c.AcquireMulti(ctx, set, 5*time.Second, WithRetry(LimitRetry(LinearBackoff(2*time.Millisecond), 10)))
				}
				if errors.Is(err, ErrNotObtained) {
					refusals.Add(1)
					if len(ownedBy(t, e, label, set)) != 0 {
						partial.Add(1)
					}
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				wins.Add(1)
				if len(ownedBy(t, e, label, set)) != len(set) {
					partial.Add(1)
				}
				for i, j := range idx {
					if holders[j].Add(1) != 1 {
						overlap.Add(1)
					}
					fmu.Lock()
					if f := m.Fences()[i]; f <= lastFence[j] {
						backwards.Add(1)
					} else {
						lastFence[j] = f
					}
					fmu.Unlock()
				}
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				for _, j := range idx {
					holders[j].Add(-1)
				}
				if err := m.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, overlap.Load(), "two holders of one resource")
	require.Zero(t, partial.Load(), "a set held in part")
	require.Zero(t, backwards.Load(), "a fence not above the last holder's")
	require.Positive(t, wins.Load())
	require.Positive(t, refusals.Load(), "the sets contended")
	require.EqualValues(t, goroutines*rounds, wins.Load()+refusals.Load())
	for _, r := range all {
		k, _ := lockKey.Key(e.NS, r.Type, r.ID)
		require.Zero(t, e.Client.Exists(ctx, k).Val(), "%s left held", k)
	}
	e.RequireTTLs(nil)
}
