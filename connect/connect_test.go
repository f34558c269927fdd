package connect

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

func TestOpenEmbedded(t *testing.T) {
	ctx := context.Background()
	c, closeAll, err := Open(ctx, "")
	require.NoError(t, err)
	defer closeAll()
	require.NoError(t, c.Set(ctx, "k", "v", time.Minute).Err())
	assert.True(t, c.(*redis.Client).Options().ContextTimeoutEnabled)
	assert.Equal(t, "embedded miniredis", Describe(""))
	assert.Equal(t, "cluster a:1,b:2", Describe("a:1,b:2"))
	assert.Equal(t, "h:7 db 3", Describe("redis://:secret@h:7/3"), "no password")
	_, _, err = Open(ctx, "bad://x")
	require.Error(t, err)
}

func TestHTTPAddr(t *testing.T) {
	t.Setenv("ADDR", "")
	assert.Equal(t, "127.0.0.1:8080", HTTPAddr())
	t.Setenv("ADDR", ":9")
	assert.Equal(t, ":9", HTTPAddr())
}

// The slot map comes from the first node that answers: a dead node first
// in the list costs at most SlotsTimeout.
func TestFirstSlotsSkipsDeadNodes(t *testing.T) {
	addrs := os.Getenv("REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		t.Skip("needs a cluster (REDIS_CLUSTER_ADDRS)")
	}
	ctx := context.Background()
	start := time.Now()
	slots, err := firstSlots(ctx, append([]string{"127.0.0.1:1"}, strings.Split(addrs, ",")...))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 4*SlotsTimeout)
	covered := 0
	for _, s := range slots {
		covered += s.End - s.Start + 1
		require.NotEmpty(t, s.Nodes)
	}
	assert.Equal(t, 16384, covered)
	_, err = firstSlots(ctx, []string{"127.0.0.1:1"})
	require.Error(t, err)

	c := redis.NewClusterClient(ClusterOptions(strings.Split(addrs, ",")))
	defer c.Close()
	require.NoError(t, c.Set(ctx, "connect-test", "v", time.Minute).Err())

	// ready teaches a cluster client the commands' key positions (COMMAND)
	// at once, so that no later call waits for them past its deadline.
	w := redis.NewClusterClient(ClusterOptions(strings.Split(addrs, ",")))
	defer w.Close()
	var commands atomic.Int64
	w.OnNewNode(func(n *redis.Client) { n.AddHook(commandCounter{&commands}) })
	require.NoError(t, ready(ctx, w))
	learned := commands.Load()
	assert.Positive(t, learned, "COMMAND sent by ready")
	require.NoError(t, w.Get(ctx, "connect-test").Err())
	assert.Equal(t, learned, commands.Load(), "no COMMAND on the first call after ready")
}

// commandCounter counts the COMMAND calls a client sends.
type commandCounter struct{ n *atomic.Int64 }

func (commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "command" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestOpenLayout(t *testing.T) {
	ctx := context.Background()
	cs, closeAll, err := OpenLayout(ctx, "", keys.SeedLayout())
	require.NoError(t, err)
	defer closeAll()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, cs.DBs())
	assert.False(t, cs.Cluster())
	require.NoError(t, cs.For(keys.Locks).Set(ctx, "k", "locks", time.Minute).Err())
	v, err := cs.For(keys.Sessions).Get(ctx, "k").Result()
	assert.ErrorIs(t, err, redis.Nil, "another database: %q", v)
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		cc, closeC, err := OpenLayout(ctx, addrs, keys.SeedLayout())
		require.NoError(t, err)
		defer closeC()
		assert.True(t, cc.Cluster())
		assert.Equal(t, []int{0}, cc.DBs())
		assert.Same(t, cc.For(keys.Locks), cc.For(keys.Sessions))
	}
}

// The database a URL names holds the areas the layout does not place:
// OpenLayout used to replace it with DB 0.
func TestOpenLayoutKeepsTheURLsDatabase(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	cs, closeAll, err := OpenLayout(ctx, "redis://"+m.Addr()+"/9", keys.SeedLayout())
	require.NoError(t, err)
	defer closeAll()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 9}, cs.DBs())
	assert.Equal(t, 9, cs.DB(keys.Presence), "an area the layout does not place")
	assert.Equal(t, 6, cs.DB(keys.Locks), "an area the layout places")
	require.NoError(t, cs.For(keys.Presence).Set(ctx, "k", "presence", time.Minute).Err())
	m.Select(9)
	v, err := m.Get("k")
	require.NoError(t, err, "the key is in DB 9")
	assert.Equal(t, "presence", v)

	one, closeOne, err := OpenLayout(ctx, "redis://"+m.Addr()+"/5", nil)
	require.NoError(t, err)
	defer closeOne()
	assert.Equal(t, []int{5}, one.DBs(), "no layout: the URL's database alone")
}
