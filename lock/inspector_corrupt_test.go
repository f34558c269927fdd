package lock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// TestOverviewNamesTheWrongTypedKey: among many leases, one lock key of
// another type is left out of Overview and reported with keys.ErrCorrupt
// naming that key, whichever key the SCAN returned first; the leases are
// all there.
func TestOverviewNamesTheWrongTypedKey(t *testing.T) {
	e := harness.New(t)
	bad := leasesAndOneHash(t, e)
	requireOverviewNames(t, e, e.Client, bad, 30)
}

// leasesAndOneHash writes 30 leases and, among them, a lock key holding
// a hash, which it returns.
func leasesAndOneHash(t *testing.T, e *harness.Env) string {
	ctx := e.Ctx()
	for i := range 30 {
		k, err := lockKey.Key(e.NS, "report", fmt.Sprint(i))
		require.NoError(t, err)
		lease := fmt.Sprintf("w.%024x:%d:60000", i, time.Now().UnixMilli()) // owner:acquired ms:lease ms
		require.NoError(t, e.Client.Set(ctx, k, lease, time.Minute).Err())
	}
	bad, err := lockKey.Key(e.NS, "report", "bad")
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, bad, "f", "v").Err())
	return bad
}

// requireOverviewNames requires Overview through c to return held
// leases, and an error matching keys.ErrCorrupt naming bad.
func requireOverviewNames(t *testing.T, e *harness.Env, c redis.UniversalClient, bad string, held int) {
	in, err := NewInspector(c, WithNamespace(e.NS))
	require.NoError(t, err)
	ov, err := in.Overview(e.Ctx(), 100)
	assert.Len(t, ov.Held, held, "the other keys are read")
	require.Error(t, err)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.True(t, strings.Contains(err.Error(), fmt.Sprintf("%q", bad)), "%v does not name %s", err, bad)
}

// vanishHook makes a lease run out between Overview's SCAN and its
// reads: before the pipeline that reads bad is sent it deletes the key of
// its first other GET, and sends bad's GET last, so the nil reply comes
// first.
type vanishHook struct {
	bad  string
	del  func(key string)
	gone *string
}

func (vanishHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (vanishHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h vanishHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var sent, last []redis.Cmder
		for _, c := range cmds {
			if args := c.Args(); len(args) == 2 && args[0] == "get" && args[1] == h.bad {
				last = append(last, c)
			} else {
				sent = append(sent, c)
			}
		}
		if len(last) == 0 { // another node's pipeline
			return next(ctx, cmds)
		}
		for _, c := range sent {
			if args := c.Args(); len(args) == 2 && args[0] == "get" {
				*h.gone = args[1].(string)
				h.del(*h.gone)
				break
			}
		}
		return next(ctx, append(sent, last...))
	}
}

// TestOverviewWrongTypedKeyAfterVanishedLease: a lease gone since the SCAN
// reads as nil, which go-redis's Exec returns as the pipeline's first
// error; a wrong-typed key after it still fails Overview naming that key.
func TestOverviewWrongTypedKeyAfterVanishedLease(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	bad := leasesAndOneHash(t, e)
	c := e.FreshClient()
	var gone string
	hook := vanishHook{bad: bad, gone: &gone, del: func(k string) { require.NoError(t, e.Client.Del(ctx, k).Err()) }}
	if cc, ok := c.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(hook) }) // Overview pipelines on each master's own client
	} else {
		c.AddHook(hook)
	}
	requireOverviewNames(t, e, c, bad, 29)
	require.NotEmpty(t, gone, "no lease's GET was sent")
}

// failHook fails every pipeline of a node after a pause: a master that is
// down, answering after another master has met a key of another type.
type failHook struct{}

func (failHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (failHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		time.Sleep(50 * time.Millisecond)
		err := errors.New("node down")
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
}

// TestOverviewMasterDownIsNotHiddenByCorrupt: on a cluster, a master that
// fails outright fails Overview even when another master met a key of
// another type first (go-redis's ForEachMaster keeps one error).
func TestOverviewMasterDownIsNotHiddenByCorrupt(t *testing.T) {
	e := harness.New(t)
	if e.Backend != harness.Cluster {
		t.Skip("a cluster's masters")
	}
	bad := leasesAndOneHash(t, e)
	badNode, err := e.Client.(*redis.ClusterClient).MasterForKey(e.Ctx(), bad)
	require.NoError(t, err)
	c := e.FreshClient().(*redis.ClusterClient)
	c.OnNewNode(func(n *redis.Client) {
		if n.Options().Addr != badNode.Options().Addr {
			n.AddHook(failHook{})
		}
	})
	in, err := NewInspector(c, WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = in.Overview(e.Ctx(), 100)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node down", "the master that failed is reported")
}

// Everything the package writes under lock:* reads back without an
// error; a lock value that is not a lease, a lock without a TTL and a
// last run that is not Unix ms are each left out and named, beside the
// locks that are read.
func TestOverviewNamesForeignValues(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c, err := New(e.Client, WithNamespace(e.NS), WithOwner("w"))
	require.NoError(t, err)
	_, err = c.TryAcquire(ctx, File, "a.pdf", time.Minute)
	require.NoError(t, err)
	_, err = c.TryAcquire(ctx, "report", "fair", time.Minute, WithFairness(time.Minute))
	require.NoError(t, err)
	rw, err := c.RWMutex("doc", "1")
	require.NoError(t, err)
	_, err = rw.TryRLock(ctx, time.Minute)
	require.NoError(t, err)
	rw2, err := c.RWMutex("doc", "2")
	require.NoError(t, err)
	_, err = rw2.TryLock(ctx, time.Minute)
	require.NoError(t, err)
	sem, err := c.Semaphore("gpu", "pool", 2)
	require.NoError(t, err)
	_, err = sem.TryAcquire(ctx, time.Minute)
	require.NoError(t, err)
	el, err := c.Election("leader", time.Minute)
	require.NoError(t, err)
	_, err = el.Campaign(ctx)
	require.NoError(t, err)
	leased, err := c.Interval("hourly", time.Hour, time.Minute)
	require.NoError(t, err)
	run, err := leased.Claim(ctx)
	require.NoError(t, err)
	require.True(t, run.Claimed)
	bare, err := c.Interval("nightly", time.Hour, 0) // a claim record without a lease
	require.NoError(t, err)
	ran, err := bare.Do(ctx, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, ran)

	in, err := NewInspector(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	clean, err := in.Overview(ctx, 100)
	require.NoError(t, err, "all of it this package's")
	require.NotEmpty(t, clean.Held)
	require.Len(t, clean.LastRuns, 2)

	key := func(tp *keys.Template, a ...string) string {
		k, err := tp.Key(e.NS, a...)
		require.NoError(t, err)
		return k
	}
	notLease := key(lockKey, "report", "token")
	noTTL := key(lockKey, "report", "forever")
	badRun := key(cronKey, "weekly")
	require.NoError(t, e.Client.Set(ctx, notLease, "5f2c1e", time.Minute).Err())
	require.NoError(t, e.Client.Set(ctx, noTTL, fmt.Sprintf("w.%024x:%d:60000", 1, time.Now().UnixMilli()), 0).Err())
	require.NoError(t, e.Client.Set(ctx, badRun, "yesterday", 0).Err())

	ov, err := in.Overview(ctx, 100)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	for _, k := range []string{notLease, noTTL, badRun} {
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", k))
	}
	assert.Equal(t, timeless(clean.Held), timeless(ov.Held), "the rest as before")
	assert.Equal(t, clean.Semaphores, ov.Semaphores)
	assert.Equal(t, clean.LastRuns, ov.LastRuns)
	held, err := in.Held(ctx, 100)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Equal(t, timeless(clean.Held), timeless(held))
}

// timeless returns the held locks sorted by resource, without their
// remaining TTLs, which run down between two reads.
func timeless(hs []HeldLock) []HeldLock {
	out := make([]HeldLock, len(hs))
	for i, h := range hs {
		h.Remaining = 0
		out[i] = h
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].ResourceType+":"+out[i].ResourceID < out[j].ResourceType+":"+out[j].ResourceID
	})
	return out
}
