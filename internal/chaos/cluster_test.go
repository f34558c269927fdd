//go:build chaos

// Package chaos holds the cluster chaos tier: tests that reshard, leave
// slots migrating and fail masters over on a Redis Cluster of their own
// (scripts/chaos-up.sh: 3 masters + 3 replicas on 127.0.0.1:7101-7106),
// named by REDIS_CHAOS_ADDRS, and assert the library's invariants through
// its public API. They build only with the tag "chaos" (they would break
// the cluster other tests share, and are a tier of their own, not skips of
// the suite); CI runs them after the suite:
//
//	bash scripts/chaos-up.sh
//	REDIS_CHAOS_ADDRS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 go test -tags chaos ./internal/chaos/
package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
)

// env is the chaos cluster: a client made the way connect makes them,
// admin clients per node, and a namespace for the test.
type env struct {
	t      *testing.T
	addrs  []string
	client *redis.ClusterClient
	ns     keys.Namespace
}

func newEnv(t *testing.T) *env {
	t.Helper()
	list := os.Getenv("REDIS_CHAOS_ADDRS")
	if list == "" {
		t.Skip("chaos: set REDIS_CHAOS_ADDRS (scripts/chaos-up.sh) to run the cluster chaos tier")
	}
	e := &env{t: t, addrs: strings.Split(list, ","), ns: keys.Namespace{Prefix: "chaos" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}}
	e.client = redis.NewClusterClient(connect.ClusterOptions(e.addrs))
	t.Cleanup(func() { _ = e.client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.waitHealthy(ctx)
	return e
}

// node is one cluster node as CLUSTER NODES describes it.
type node struct {
	id, addr string
	master   bool
	masterID string // for a replica
	slots    [][2]int
}

func (e *env) admin(addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// nodes reads the topology from the first node that answers.
func (e *env) nodes(ctx context.Context) []node {
	e.t.Helper()
	for _, a := range e.addrs {
		out, err := e.admin(a).ClusterNodes(ctx).Result()
		if err != nil {
			continue
		}
		var ns []node
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 || strings.Contains(f[2], "fail") || strings.Contains(f[2], "noaddr") {
				continue
			}
			n := node{id: f[0], addr: strings.SplitN(f[1], "@", 2)[0], master: strings.Contains(f[2], "master"), masterID: f[3]}
			for _, s := range f[8:] {
				if strings.HasPrefix(s, "[") {
					continue // migrating/importing markers
				}
				lo, hi, _ := strings.Cut(s, "-")
				a, _ := strconv.Atoi(lo)
				b := a
				if hi != "" {
					b, _ = strconv.Atoi(hi)
				}
				n.slots = append(n.slots, [2]int{a, b})
			}
			ns = append(ns, n)
		}
		return ns
	}
	e.t.Fatal("chaos: no node answers")
	return nil
}

// owner returns the master that serves slot.
func (e *env) owner(ctx context.Context, slot int) node {
	e.t.Helper()
	for _, n := range e.nodes(ctx) {
		for _, r := range n.slots {
			if n.master && slot >= r[0] && slot <= r[1] {
				return n
			}
		}
	}
	e.t.Fatalf("chaos: no master serves slot %d", slot)
	return node{}
}

// otherMaster returns a master that is not n.
func (e *env) otherMaster(ctx context.Context, n node) node {
	e.t.Helper()
	for _, m := range e.nodes(ctx) {
		if m.master && m.id != n.id && len(m.slots) > 0 {
			return m
		}
	}
	e.t.Fatal("chaos: one master only")
	return node{}
}

// waitHealthy waits until every node says cluster_state:ok and every
// master has a replica again (after a failover the old master rejoins as
// one).
func (e *env) waitHealthy(ctx context.Context) {
	e.t.Helper()
	for {
		ok := true
		for _, a := range e.addrs {
			info, err := e.admin(a).ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("chaos: cluster not healthy: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tagInSlotOf returns a hash-tag value (an entity ID) whose keys land in
// the same slot as id's, different from id, so a test can put several
// entities on the slot it breaks.
func tagsInSlot(slot, n int, prefix string) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		v := prefix + strconv.Itoa(i)
		if keys.Slot("{"+v+"}") == slot {
			out = append(out, v)
		}
	}
	return out
}

func fmtNode(n node) string { return fmt.Sprintf("%s (%s)", n.addr, n.id[:8]) }
