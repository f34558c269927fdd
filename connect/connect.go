package connect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Open returns a client for url and a function that closes it:
//
//   - "" starts an embedded miniredis in this process (stopped by the
//     close function);
//   - "redis://host:port/db" (or rediss://, with options as redis.ParseURL
//     takes them) is a standalone server;
//   - "host:port,host:port,..." is a Redis Cluster, reached through any of
//     the nodes listed.
//
// It pings the server, within ctx, before returning.
func Open(ctx context.Context, url string) (redis.UniversalClient, func(), error) {
	var c redis.UniversalClient
	stop := func() {}
	switch {
	case url == "":
		m, err := miniredis.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("connect: embedded redis: %w", err)
		}
		c = redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
		stop = m.Close
	case strings.Contains(url, ",") && !strings.Contains(url, "://"):
		c = redis.NewClusterClient(ClusterOptions(strings.Split(url, ",")))
	default:
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("connect: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		c = redis.NewClient(opt)
	}
	closeAll := func() { _ = c.Close(); stop() }
	if err := ready(ctx, c); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("connect: ping %s: %w", Describe(url), err)
	}
	return c, closeAll, nil
}

// ready pings c and, on a cluster, makes the client learn the commands'
// key positions now: go-redis fetches them (COMMAND) on a cluster
// client's first plain keyed command with a timeout of its own (5 s in
// v9.22), not the caller's deadline, so a first call made while a node
// hangs would outlive its context by that much. The warming command
// (EXISTS of a key nothing writes) reads nothing.
func ready(ctx context.Context, c redis.UniversalClient) error {
	if err := c.Ping(ctx).Err(); err != nil {
		return err
	}
	if _, ok := c.(*redis.ClusterClient); ok {
		return c.Exists(ctx, "redschema:connect:warm").Err()
	}
	return nil
}

// OpenLayout is Open for a keys.Layout: one client per database of the
// layout on a standalone server (or the embedded one), each with the
// settings Open gives, and the database the URL names (0 when it names
// none) for the areas the layout does not place; on a cluster one cluster
// client (ClusterOptions) for every area, in DB 0. It pings every client
// before returning.
func OpenLayout(ctx context.Context, url string, l keys.Layout) (*keys.Clients, func(), error) {
	var mini *miniredis.Miniredis
	var cluster []string
	var base *redis.Options
	switch {
	case url == "":
		m, err := miniredis.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("connect: embedded redis: %w", err)
		}
		mini, base = m, &redis.Options{Addr: m.Addr()}
	case strings.Contains(url, ",") && !strings.Contains(url, "://"):
		cluster = strings.Split(url, ",")
	default:
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("connect: %w", err)
		}
		base = o
	}
	def := 0
	if base != nil {
		def = base.DB // the URL's database holds the areas l does not name
	}
	cs := l.Open(def, cluster != nil, func(db int) redis.UniversalClient {
		if cluster != nil {
			return redis.NewClusterClient(ClusterOptions(cluster))
		}
		o := *base
		o.DB, o.ContextTimeoutEnabled = db, true
		return redis.NewClient(&o)
	})
	closeAll := func() {
		_ = cs.Close()
		if mini != nil {
			mini.Close()
		}
	}
	for _, db := range cs.DBs() {
		if err := ready(ctx, cs.ForDB(db)); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect: ping %s DB %d: %w", Describe(url), db, err)
		}
	}
	return cs, closeAll, nil
}

// ClusterOptions returns the cluster client settings for the nodes addrs,
// chosen so that a failover costs seconds, not a minute:
//
//   - ContextTimeoutEnabled, so that a call on a hung node ends at its
//     deadline;
//   - the slot map reloaded every ClusterStateReloadInterval instead of
//     go-redis's 60 s (the redschema packages also ask for a reload at
//     once when a node stops answering), so that calls find a promoted
//     replica soon after the promotion;
//   - a slot map read from the first node that answers within
//     SlotsTimeout: go-redis's own reload asks one node and waits for it
//     for the whole read timeout (3 s), which, when that node is the one
//     that hung, delays the recovery by as much.
//
// The go-redis defaults otherwise. Measured on a 3+3 cluster with a 1 s
// node timeout (internal/chaos): every package's calls work again within
// about one second of the replica's promotion.
func ClusterOptions(addrs []string) *redis.ClusterOptions {
	seeds := append([]string(nil), addrs...)
	return &redis.ClusterOptions{
		Addrs: addrs, ContextTimeoutEnabled: true,
		ClusterStateReloadInterval: ClusterStateReloadInterval,
		ClusterSlots: func(ctx context.Context) ([]redis.ClusterSlot, error) {
			return firstSlots(ctx, seeds)
		},
	}
}

// slotsOf reads a node's slot map with CLUSTER SHARDS (Redis 7), in the
// form go-redis takes: per slot range, the master first, then the replicas
// that are online. Servers without CLUSTER SHARDS are asked CLUSTER SLOTS.
func slotsOf(ctx context.Context, c *redis.Client) ([]redis.ClusterSlot, error) {
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		if strings.Contains(err.Error(), "unknown subcommand") || strings.Contains(err.Error(), "unknown command") {
			//lint:ignore SA1019 CLUSTER SLOTS serves the servers before 7.0, which have no CLUSTER SHARDS
			return c.ClusterSlots(ctx).Result()
		}
		return nil, err
	}
	var out []redis.ClusterSlot
	for _, sh := range shards {
		var nodes []redis.ClusterNode
		for _, role := range []string{"master", "replica"} {
			for _, n := range sh.Nodes {
				if n.Role != role || n.Health != "online" {
					continue
				}
				host := n.IP
				if host == "" {
					host = n.Endpoint
				}
				nodes = append(nodes, redis.ClusterNode{ID: n.ID, Addr: net.JoinHostPort(host, strconv.FormatInt(n.Port, 10))})
			}
		}
		if len(nodes) == 0 {
			continue
		}
		for _, r := range sh.Slots {
			out = append(out, redis.ClusterSlot{Start: int(r.Start), End: int(r.End), Nodes: nodes})
		}
	}
	return out, nil
}

// ClusterStateReloadInterval is how often a cluster client of
// ClusterOptions reloads its slot map: one CLUSTER SLOTS per interval.
const ClusterStateReloadInterval = 2 * time.Second

// SlotsTimeout bounds the wait for one node's CLUSTER SLOTS when a cluster
// client of ClusterOptions reloads its slot map.
const SlotsTimeout = 500 * time.Millisecond

// firstSlots asks the nodes for the slot map, one after another in a
// random order, each for at most SlotsTimeout, and returns the first
// answer.
func firstSlots(ctx context.Context, addrs []string) ([]redis.ClusterSlot, error) {
	var errs []error
	for _, i := range rand.Perm(len(addrs)) {
		c := redis.NewClient(&redis.Options{Addr: addrs[i], DialTimeout: SlotsTimeout, ReadTimeout: SlotsTimeout,
			WriteTimeout: SlotsTimeout, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1})
		tctx, cancel := context.WithTimeout(ctx, SlotsTimeout)
		slots, err := slotsOf(tctx, c)
		cancel()
		_ = c.Close()
		if err == nil && len(slots) > 0 {
			return slots, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addrs[i], err))
	}
	return nil, fmt.Errorf("connect: no node gave the slot map: %w", errors.Join(errs...))
}

// FromEnv is Open with the REDIS_URL environment variable, bounded by 5
// seconds, and prints one line to w saying which Redis it uses.
func FromEnv(ctx context.Context, w io.Writer) (redis.UniversalClient, func(), error) {
	url := os.Getenv("REDIS_URL")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, closeAll, err := Open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	if w != nil {
		note := ""
		if url == "" {
			note = " (set REDIS_URL to use a server)"
		}
		fmt.Fprintf(w, "redis: %s%s\n", Describe(url), note)
	}
	return c, closeAll, nil
}

// Describe says which Redis url names, without its password.
func Describe(url string) string {
	switch {
	case url == "":
		return "embedded miniredis"
	case strings.Contains(url, ",") && !strings.Contains(url, "://"):
		return "cluster " + url
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return "unparsable REDIS_URL"
	}
	return fmt.Sprintf("%s db %d", opt.Addr, opt.DB)
}

// HTTPAddr is the address an HTTP program listens on: the ADDR
// environment variable, or 127.0.0.1:8080.
func HTTPAddr() string {
	if a := os.Getenv("ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:8080"
}
