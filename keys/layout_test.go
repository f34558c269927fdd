package keys_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// dbOf returns the database a standalone client of cs selects.
func dbOf(t *testing.T, c redis.UniversalClient) int {
	t.Helper()
	sc, ok := c.(*redis.Client)
	require.True(t, ok, "a standalone client, got %T", c)
	return sc.Options().DB
}

// Layout.Clients keeps the database its options select: the areas the
// layout does not name are there, the ones it names are in their own
// databases, and no database number is dropped or replaced.
func TestLayoutClientsKeepOptionsDB(t *testing.T) {
	addr := []string{"127.0.0.1:1"} // never dialled: the test only builds clients
	for _, tc := range []struct {
		name   string
		layout keys.Layout
		db     int
		dbs    []int
		areas  map[keys.Area]int
	}{
		{"no layout, DB 0", nil, 0, []int{0}, map[keys.Area]int{keys.Locks: 0, keys.Presence: 0}},
		{"no layout, DB 3", nil, 3, []int{3}, map[keys.Area]int{keys.Locks: 3, keys.Sessions: 3, keys.Presence: 3}},
		{"empty layout, DB 5", keys.Layout{}, 5, []int{5}, map[keys.Area]int{keys.Metrics: 5}},
		{"seed, DB 0", keys.SeedLayout(), 0, []int{0, 1, 2, 3, 4, 5, 6, 7},
			map[keys.Area]int{keys.Sessions: 0, keys.Locks: 6, keys.Presence: 0}},
		{"seed, DB 3", keys.SeedLayout(), 3, []int{0, 1, 2, 3, 4, 5, 6, 7},
			map[keys.Area]int{keys.Sessions: 0, keys.PubSub: 3, keys.Locks: 6, keys.Presence: 3, keys.Chat: 3}},
		{"seed, DB 9", keys.SeedLayout(), 9, []int{0, 1, 2, 3, 4, 5, 6, 7, 9},
			map[keys.Area]int{keys.Sessions: 0, keys.Sensors: 9}},
		{"one area moved, DB 3", keys.Layout{keys.Cache: 4}, 3, []int{3, 4},
			map[keys.Area]int{keys.Cache: 4, keys.Sessions: 3, keys.Queues: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := tc.layout.Clients(&redis.UniversalOptions{Addrs: addr, DB: tc.db})
			require.NoError(t, err)
			defer cs.Close()
			assert.False(t, cs.Cluster())
			assert.Equal(t, tc.dbs, cs.DBs())
			for _, db := range cs.DBs() {
				assert.Equal(t, db, dbOf(t, cs.ForDB(db)), "ForDB(%d) selects its database", db)
			}
			for a, want := range tc.areas {
				assert.Equal(t, want, cs.DB(a), "area %s", a)
				assert.Equal(t, want, dbOf(t, cs.For(a)), "the client of area %s", a)
				assert.Same(t, cs.ForDB(want), cs.For(a))
			}
			if tc.db != 0 && !contains(tc.dbs, 0) {
				assert.Nil(t, cs.ForDB(0), "no client for a database nothing is in")
			}
		})
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Layout.Clients refuses what it cannot keep: a database on a cluster,
// which has only DB 0, and negative numbers. Sentinel addresses are not a
// cluster: their databases are kept.
func TestLayoutClientsRefuse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout keys.Layout
		opts   redis.UniversalOptions
		want   string
	}{
		{"cluster by addresses", nil, redis.UniversalOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, DB: 3}, "options select DB 3, but a cluster has only DB 0"},
		{"cluster by mode", keys.SeedLayout(), redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, IsClusterMode: true, DB: 1}, "a cluster has only DB 0"},
		{"negative DB", nil, redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, DB: -1}, "options select DB -1"},
		{"negative area", keys.Layout{keys.Locks: -2}, redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}, "area locks in DB -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := tc.layout.Clients(&tc.opts)
			assert.Nil(t, cs)
			assert.ErrorIs(t, err, keys.ErrInvalid)
			assert.ErrorContains(t, err, tc.want)
		})
	}

	cs, err := keys.SeedLayout().Clients(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}})
	require.NoError(t, err, "a cluster with DB 0 is fine")
	assert.True(t, cs.Cluster())
	assert.Equal(t, 0, cs.DB(keys.Locks))
	require.NoError(t, cs.Close())

	cs, err = keys.SeedLayout().Clients(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, MasterName: "m", DB: 3})
	require.NoError(t, err)
	assert.False(t, cs.Cluster(), "two Sentinel addresses are not a cluster")
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, cs.DBs())
	assert.Equal(t, 3, cs.DB(keys.Presence))
	require.NoError(t, cs.Close())
}

// Layout.Open calls open once per database (DB 0, where the areas the
// layout does not name are, included), or once on a cluster.
func TestLayoutOpen(t *testing.T) {
	var opened []int
	cs := keys.Layout{keys.Locks: 6}.Open(0, false, func(db int) redis.UniversalClient {
		opened = append(opened, db)
		return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DB: db})
	})
	assert.ElementsMatch(t, []int{0, 6}, opened)
	assert.Equal(t, 0, cs.DB(keys.Presence))
	assert.Equal(t, 6, cs.DB(keys.Locks))
	require.NoError(t, cs.Close())

	opened = nil
	one := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	cs = keys.SeedLayout().Open(0, true, func(db int) redis.UniversalClient { opened = append(opened, db); return one })
	assert.Equal(t, []int{0}, opened)
	assert.True(t, cs.Cluster())
	assert.Same(t, one, cs.For(keys.Locks))
	assert.Same(t, one, cs.ForDB(0))
	assert.Nil(t, cs.ForDB(6), "a cluster has no DB 6")
	require.NoError(t, cs.Close())
	assert.ErrorIs(t, one.Ping(context.Background()).Err(), redis.ErrClosed, "Close closed it")
}

// Close closes every client and reports the first failure.
func TestClientsCloseReportsError(t *testing.T) {
	var closed []redis.UniversalClient
	cs := keys.Layout{keys.Locks: 6}.Open(0, false, func(db int) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DB: db})
		closed = append(closed, c)
		return c
	})
	require.NoError(t, closed[0].Close()) // closing it again fails
	assert.ErrorIs(t, cs.Close(), redis.ErrClosed)
	for _, c := range closed {
		assert.ErrorIs(t, c.Ping(context.Background()).Err(), redis.ErrClosed)
	}
}

// AuditLayout audits every database of the clients and counts the keys
// outside their area's database, as Clients.DB places areas: with the
// options' DB 3, presence (which seed 001 does not place) belongs in
// DB 3, locks in DB 6.
func TestAuditLayout(t *testing.T) {
	m := miniredis.RunT(t)
	r := &keys.Registry{}
	lockT := r.MustRegister(keys.Pattern{Template: "lock:{id}", Type: keys.String, TTL: time.Minute, Tag: "id", Owner: "lock", Area: keys.Locks, Purpose: "a lock"})
	presT := r.MustRegister(keys.Pattern{Template: "presence:{id}", Type: keys.String, TTL: time.Minute, Tag: "id", Owner: "presence", Area: keys.Presence, Purpose: "presence"})
	put := func(db int, tp *keys.Template, id string) {
		k, err := tp.Key(keys.Namespace{}, id)
		require.NoError(t, err)
		require.NoError(t, m.DB(db).Set(k, "v"))
		m.DB(db).SetTTL(k, time.Minute)
	}
	put(6, lockT, "a") // in place
	put(3, presT, "1") // in place: the options' database
	put(0, presT, "2") // out of place
	put(3, lockT, "b") // out of place
	put(3, presT, "3") // in place
	require.NoError(t, m.DB(5).Set("stray", "x"))

	cs, err := keys.SeedLayout().Clients(&redis.UniversalOptions{Addrs: []string{m.Addr()}, DB: 3})
	require.NoError(t, err)
	defer cs.Close()
	reps, err := r.AuditLayout(context.Background(), cs, keys.AuditOptions{})
	require.NoError(t, err)
	require.Len(t, reps, 8)
	byDB := map[int]*keys.AuditReport{}
	for _, rep := range reps {
		byDB[rep.DB] = rep
	}
	stat := func(db int, tp *keys.Template) keys.PatternStats {
		for _, s := range byDB[db].Patterns {
			if s.Template == tp {
				return s
			}
		}
		t.Fatalf("no stats for %s in DB %d", tp, db)
		return keys.PatternStats{}
	}
	assert.EqualValues(t, 1, stat(6, lockT).Keys)
	assert.Zero(t, stat(6, lockT).WrongDB)
	assert.EqualValues(t, 2, stat(3, presT).Keys)
	assert.Zero(t, stat(3, presT).WrongDB, "presence belongs in the options' DB 3")
	assert.EqualValues(t, 1, stat(0, presT).WrongDB)
	assert.EqualValues(t, 1, stat(3, lockT).WrongDB)
	assert.Contains(t, byDB[0].Problems(), `1 "presence:{id}" keys are outside DB 3`)
	assert.Contains(t, byDB[3].Problems(), `1 "lock:{id}" keys are outside DB 6`)
	assert.EqualValues(t, 1, byDB[5].Unmatched)
	assert.Empty(t, byDB[7].Problems())

	// One database: nothing is out of place.
	cs3, err := keys.Layout(nil).Clients(&redis.UniversalOptions{Addrs: []string{m.Addr()}, DB: 3})
	require.NoError(t, err)
	defer cs3.Close()
	reps, err = r.AuditLayout(context.Background(), cs3, keys.AuditOptions{})
	require.NoError(t, err)
	require.Len(t, reps, 1)
	assert.Equal(t, 3, reps[0].DB)
	assert.EqualValues(t, 3, reps[0].Scanned, "DB 3's keys, not DB 0's")
	assert.Empty(t, reps[0].Problems())
}

// AuditLayout reports which database failed.
func TestAuditLayoutError(t *testing.T) {
	m := miniredis.RunT(t)
	cs, err := keys.Layout{keys.Locks: 6}.Clients(&redis.UniversalOptions{Addrs: []string{m.Addr()}, MaxRetries: -1})
	require.NoError(t, err)
	defer cs.Close()
	m.Close()
	_, err = (&keys.Registry{}).AuditLayout(context.Background(), cs, keys.AuditOptions{})
	assert.ErrorContains(t, err, "keys: audit DB 0")
}

// ForEachNode visits every master of a cluster, every shard of a ring,
// or the one server.
func TestForEachNode(t *testing.T) {
	ctx := context.Background()
	visit := func(c redis.UniversalClient) (int, error) {
		var mu sync.Mutex
		n := 0
		err := keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
			mu.Lock()
			defer mu.Unlock()
			n++
			return node.Ping(ctx).Err()
		})
		return n, err
	}
	a, b := miniredis.RunT(t), miniredis.RunT(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr(), "b": b.Addr()}})
	defer ring.Close()
	n, err := visit(ring)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "both shards of the ring")
	err = keys.ForEachNode(ctx, ring, func(ctx context.Context, node redis.UniversalClient) error {
		return fmt.Errorf("node %s failed", node.(*redis.Client).Options().Addr)
	})
	assert.ErrorContains(t, err, "node "+a.Addr()+" failed", "every node's error")
	assert.ErrorContains(t, err, "node "+b.Addr()+" failed")

	one := redis.NewClient(&redis.Options{Addr: a.Addr()})
	defer one.Close()
	n, err = visit(one)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	e := harness.New(t)
	if e.Backend != harness.Cluster {
		return
	}
	var mu sync.Mutex
	masters, err := e.Client.(*redis.ClusterClient).ClusterShards(ctx).Result()
	require.NoError(t, err)
	n, err = visit(e.Client)
	require.NoError(t, err)
	assert.Equal(t, len(masters), n, "every master of the cluster")
	var failed []string
	err = keys.ForEachNode(ctx, e.Client, func(ctx context.Context, node redis.UniversalClient) error {
		addr := node.(*redis.Client).Options().Addr
		mu.Lock()
		failed = append(failed, addr)
		mu.Unlock()
		return fmt.Errorf("node %s failed", addr)
	})
	require.Len(t, failed, len(masters))
	for _, addr := range failed {
		assert.ErrorContains(t, err, "node "+addr+" failed", "every master's error")
	}
}
