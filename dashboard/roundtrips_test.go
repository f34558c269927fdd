package dashboard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/internal/harness"
)

// nodeTrips counts round trips per server: each command sent on its own
// and each pipeline is one (a cluster client's pipeline is split per
// node, and each part counts on its node). The connection handshake and
// the cluster client's topology reads are not counted.
type nodeTrips struct {
	mu      sync.Mutex
	n       map[string]int
	scanned map[string]bool
}

// add counts a round trip to node; of the round trips made only of SCANs
// it counts the first after take: how many steps a SCAN takes depends on
// the whole keyspace, which other tests share on a real server.
func (c *nodeTrips) add(node string, scan bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if scan && c.scanned[node] {
		return
	}
	if scan {
		c.scanned[node] = true
	}
	c.n[node]++
}

func (c *nodeTrips) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n, c.scanned = map[string]int{}, map[string]bool{}
	return n
}

type nodeHook struct {
	c    *nodeTrips
	node string
}

func background(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "readonly", "cluster", "command", "ping":
		return true
	}
	return false
}

func (h nodeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !background(cmd) {
			h.c.add(h.node, cmd.Name() == "scan")
		}
		return next(ctx, cmd)
	}
}

func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		counted, scans := false, true
		for _, cmd := range cmds {
			if !background(cmd) {
				counted = true
				scans = scans && cmd.Name() == "scan"
			}
		}
		if counted {
			h.c.add(h.node, scans)
		}
		return next(ctx, cmds)
	}
}

// countPerNode returns a fresh client of env's backend whose round trips
// are counted per node.
func countPerNode(env *harness.Env) (redis.UniversalClient, *nodeTrips) {
	c := env.FreshClient()
	trips := &nodeTrips{n: map[string]int{}, scanned: map[string]bool{}}
	if cc, ok := c.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(nodeHook{c: trips, node: n.Options().Addr}) })
	} else {
		c.AddHook(nodeHook{c: trips, node: "server"})
	}
	return c, trips
}

// TestRoundTripsPerRefresh counts what one refresh of each page costs
// Redis once the page has been loaded (scripts cached): the pages whose
// packages have a batch read (Inspector.Overview, metrics.Reader.Read,
// session.Inspector.IndexedUsers, sensor.Inspector.ReadView,
// aimemory.Inspector.ReadView, presence.Inspector and chat.Inspector
// ReadView) make one SCAN pipeline and one read pipeline per node at
// most (the sensor and AI memory pages, with what they show named, one
// pipeline; the presence and chat page one pipeline per inspector, the
// two sent at once),
// the schema page reuses its scan for
// schemaReuse; the others are logged.
func TestRoundTripsPerRefresh(t *testing.T) {
	env := harness.New(t)
	require.NoError(t, demo.Fill(env.Ctx(), env.Client, env.NS))
	c, trips := countPerNode(env)
	h, err := dashboard.New(dashboard.WithClient(c), dashboard.WithNamespace(env.NS), dashboard.WithToken(testToken))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	f := &fixture{env: env, srv: newServer(t, h)}
	for _, p := range []struct {
		path    string
		perNode int // at most, on each node; -1: logged only
		total   int // at least, over the nodes
	}{
		{"/api/schema", 0, 0}, // reused within schemaReuse
		{"/api/ratelimits", 2, 2},
		{"/api/locks", 2, 2},
		{"/api/cache", 2, 2},
		{"/api/metrics", 1, 1},
		{"/api/sessions", 2, 1},
		{"/api/queues", 2, 2}, // Names' SCAN, then every queue's stats
		{"/api/queue?name=" + demo.Queue, 1, 1},
		{"/api/presence", 2, 2},                   // the presence and the chat inspector, at once
		{"/api/presence?user=" + demo.User, 2, 2}, // idem
		{"/api/aimemory?user=" + demo.User, 2, 2}, // the context, then the last conversation's window
		{"/api/aimemory?user=" + demo.User + "&last=" + demo.Conv, 1, 1},
		{"/api/aimemory?user=" + demo.User + "&conv=" + demo.Conv, 1, 1},
		{"/api/sensors", 3, 3}, // Locations and Types find the defaults, then one pipeline
		{"/api/sensors?location=" + demo.Location + "&type=temperature", 1, 1},
	} {
		require.Equal(t, 200, f.get(t, p.path, nil), p.path) // loads the scripts
		trips.take()
		require.Equal(t, 200, f.get(t, p.path, nil), p.path)
		got := trips.take()
		total := 0
		for node, n := range got {
			total += n
			if p.perNode >= 0 {
				require.LessOrEqual(t, n, p.perNode, "%s: round trips on %s", p.path, node)
			}
		}
		require.GreaterOrEqual(t, total, p.total, "%s: counted on %v", p.path, got)
		t.Logf("%s: %d round trips (%v)", p.path, total, got)
	}
}
