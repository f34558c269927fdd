package lock

import (
	"context"
	"errors"
	"fmt"
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
