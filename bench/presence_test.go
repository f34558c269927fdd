package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// The seed's own example data (seed 002, "Data Structures").
var (
	seedUA   = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)"
	seedMeta = presence.Metadata{Device: "web", UserAgent: seedUA, IP: "192.168.1.1", SocketID: "socket_abc123"}
)

const presenceUsers = 1000

// seed002 is a faithful implementation of seed 002's layout with its own
// commands and JSON (as JSON.stringify writes it): HSET + EXPIRE + SETEX
// per connect and heartbeat, pipelined GETs for a list of users.
type seed002 struct {
	c      redis.UniversalClient
	prefix string
}

type seedConnMeta struct {
	Device    string `json:"device"`
	UserAgent string `json:"userAgent"`
	IP        string `json:"ip"`
	SocketID  string `json:"socketId"`
}

type seedConn struct {
	ConnectedAt int64        `json:"connectedAt"`
	LastSeen    int64        `json:"lastSeen"`
	Metadata    seedConnMeta `json:"metadata"`
}

type seedPresenceMeta struct {
	Device       string `json:"device"`
	UserAgent    string `json:"userAgent"`
	LastActivity string `json:"lastActivity"`
}

type seedPresence struct {
	Status            string           `json:"status"`
	LastSeen          int64            `json:"lastSeen"`
	ActiveConnections int              `json:"activeConnections"`
	Metadata          seedPresenceMeta `json:"metadata"`
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// beat is the seed's connect/heartbeat: HSET the connection, EXPIRE the
// hash, SETEX the presence, one pipeline.
func (s seed002) beat(ctx context.Context, user, conn string, connectedAt int64, active int) error {
	now := time.Now().UnixMilli()
	c := seedConn{ConnectedAt: connectedAt, LastSeen: now, Metadata: seedConnMeta{Device: seedMeta.Device, UserAgent: seedMeta.UserAgent, IP: seedMeta.IP, SocketID: seedMeta.SocketID}}
	p := seedPresence{Status: "online", LastSeen: now, ActiveConnections: active, Metadata: seedPresenceMeta{Device: seedMeta.Device, UserAgent: seedMeta.UserAgent, LastActivity: "active"}}
	pipe := s.c.Pipeline()
	pipe.HSet(ctx, s.prefix+"connections:"+user, conn, marshal(c))
	pipe.Expire(ctx, s.prefix+"connections:"+user, 60*time.Second)
	pipe.SetEx(ctx, s.prefix+"presence:"+user, marshal(p), 60*time.Second)
	_, err := pipe.Exec(ctx)
	return err
}

// getMany is the seed's "Get Online Users from List": pipelined GETs,
// each value parsed.
func (s seed002) getMany(ctx context.Context, users []string) ([]seedPresence, error) {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(users))
	for i, u := range users {
		cmds[i] = pipe.Get(ctx, s.prefix+"presence:"+u)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	out := make([]seedPresence, len(users))
	for i, c := range cmds {
		b, err := c.Bytes()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func userIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "user-" + strconv.Itoa(i)
	}
	return out
}

// parallel runs fn(i) for i in [0, n) on 16 goroutines.
func parallel(n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func connectAll(ctx context.Context, tr *presence.Tracker, users []string) error {
	return parallel(len(users), func(i int) error {
		for _, c := range []string{"conn_123", "conn_456"} {
			if _, err := tr.Connect(ctx, users[i], presence.Conn{ID: c, Metadata: seedMeta, Activity: "active"}); err != nil {
				return err
			}
		}
		return nil
	})
}

func seedConnectAll(ctx context.Context, s seed002, users []string) error {
	return parallel(len(users), func(i int) error {
		now := time.Now().UnixMilli()
		if err := s.beat(ctx, users[i], "conn_123", now, 1); err != nil {
			return err
		}
		return s.beat(ctx, users[i], "conn_456", now, 2)
	})
}

const presenceParallelism = 8 // x GOMAXPROCS goroutines, same for both sides

// layouts are the redschema variants the benchmarks compare with seed002:
// the default (seed 002's keys, byte-compatible) and the single-key layout.
var layouts = []struct {
	name   string
	layout presence.Layout
}{{"redschema", presence.LayoutHash}, {"redschema-singlekey", presence.LayoutSingleKey}}

// presenceRun times op(i), i counting up from 1, on presenceParallelism
// goroutines per CPU (the same for every side), reporting allocations and
// round trips.
func presenceRun(b *testing.B, e *benchutil.Env, op func(i int) error) {
	var i atomic.Int64
	e.Warm(b)
	b.ReportAllocs()
	b.SetParallelism(presenceParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(int(i.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	e.ReportTrips(b)
}

// benchTracker runs op with presenceRun on a tracker of layout (and opts)
// over 1000 users with two connections each.
func benchTracker(b *testing.B, layout presence.Layout, op func(ctx context.Context, tr *presence.Tracker, i int) error, opts ...presence.Option) {
	e := benchutil.New(b)
	ctx := context.Background()
	tr, err := presence.New(e.Client, append([]presence.Option{presence.WithNamespace(e.NS), presence.WithLayout(layout)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := connectAll(ctx, tr, userIDs(presenceUsers)); err != nil {
		b.Fatal(err)
	}
	presenceRun(b, e, func(i int) error { return op(ctx, tr, i) })
}

// benchSeed runs op with presenceRun on the seed002 implementation over
// 1000 users with two connections each.
func benchSeed(b *testing.B, op func(ctx context.Context, s seed002, i int) error) {
	e := benchutil.New(b)
	ctx := context.Background()
	s := seed002{c: e.Client, prefix: e.NS.Prefix}
	if err := seedConnectAll(ctx, s, userIDs(presenceUsers)); err != nil {
		b.Fatal(err)
	}
	presenceRun(b, e, func(i int) error { return op(ctx, s, i) })
}

// BenchmarkPresenceHeartbeat: one heartbeat of one of 1000 users with two
// connections each. redschema: one script (prune, refresh, index, events),
// in each layout, auto-pipelined (the default) and not, and without the
// online index; seed002: the seed's HSET + EXPIRE + SETEX pipeline (no
// pruning, not atomic).
func BenchmarkPresenceHeartbeat(b *testing.B) {
	users := userIDs(presenceUsers)
	heartbeat := func(ctx context.Context, tr *presence.Tracker, i int) error {
		_, err := tr.Heartbeat(ctx, users[i%len(users)], "conn_123")
		return err
	}
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) { benchTracker(b, l.layout, heartbeat) })
	}
	b.Run("redschema-unpipelined", func(b *testing.B) {
		benchTracker(b, presence.LayoutHash, heartbeat, presence.WithPipelining(0))
	})
	// Without the online index (OnlineNow, OnlineCount), which the seed
	// does not have either: two writes fewer per heartbeat.
	b.Run("redschema-noindex", func(b *testing.B) {
		benchTracker(b, presence.LayoutHash, heartbeat, presence.WithoutOnlineIndex())
	})
	start := time.Now().UnixMilli()
	b.Run("seed002", func(b *testing.B) {
		benchSeed(b, func(ctx context.Context, s seed002, i int) error {
			return s.beat(ctx, users[i%len(users)], "conn_123", start, 2)
		})
	})
}

// BenchmarkPresenceGetMany1000: the presence of 1000 users in one call.
func BenchmarkPresenceGetMany1000(b *testing.B) {
	users := userIDs(presenceUsers)
	// The single-key layout's GETs carry the connections too.
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			benchTracker(b, l.layout, func(ctx context.Context, tr *presence.Tracker, _ int) error {
				ps, err := tr.GetMany(ctx, users)
				if err == nil && !ps[0].Online() {
					err = fmt.Errorf("%+v not online", ps[0])
				}
				return err
			})
		})
	}
	// Online is the seed's "Get Online Users from List": GETs only, no
	// last-seen lookup in the index.
	b.Run("redschema-Online", func(b *testing.B) {
		benchTracker(b, presence.LayoutHash, func(ctx context.Context, tr *presence.Tracker, _ int) error {
			on, err := tr.Online(ctx, users)
			if err == nil && len(on) != len(users) {
				err = fmt.Errorf("%d of %d online", len(on), len(users))
			}
			return err
		})
	})
	b.Run("seed002", func(b *testing.B) {
		benchSeed(b, func(ctx context.Context, s seed002, _ int) error {
			ps, err := s.getMany(ctx, users)
			if err == nil && ps[0].Status != "online" {
				err = fmt.Errorf("%+v not online", ps[0])
			}
			return err
		})
	})
}

type memResult struct {
	perUser, indexPerUser float64
	err                   error
}

var (
	memOnce  sync.Once
	memCache map[string]memResult
)

// measurePresenceMemory writes 1000 online users with two connections each
// (the seed's example metadata) with the seed's commands and with
// redschema in both layouts, with and without the online index, and
// measures MEMORY USAGE per user. "dense-index" measures the index at the density of one million
// online users (61 per cluster slot).
func measurePresenceMemory(b *testing.B) map[string]memResult {
	memOnce.Do(func() {
		memCache = map[string]memResult{}
		e := benchutil.New(b)
		ctx := context.Background()
		users := userIDs(presenceUsers)
		per := func(prefix string, n int) (float64, error) {
			bytes, _, err := benchutil.MemoryUnder(ctx, e.Client, prefix)
			return float64(bytes) / float64(n), err
		}

		// Every variant's prefix has the same length, so key names cost
		// the same but for redschema's two hash-tag braces.
		sp := e.NS.Prefix + "seed002:"
		if err := seedConnectAll(ctx, seed002{c: e.Client, prefix: sp}, users); err != nil {
			memCache["seed002"] = memResult{err: err}
			return
		}
		v, err := per(sp, len(users))
		memCache["seed002"] = memResult{perUser: v, err: err}

		for _, v := range []struct {
			name, sub string
			layout    presence.Layout
			noIndex   bool
		}{
			{"redschema", "rsindex:", presence.LayoutHash, false},
			{"redschema-noindex", "rsnoidx:", presence.LayoutHash, true},
			{"redschema-singlekey", "rssgidx:", presence.LayoutSingleKey, false},
			{"redschema-singlekey-noindex", "rssgnoi:", presence.LayoutSingleKey, true},
		} {
			variant := v.name
			ns := e.NS.Sub(v.sub)
			opts := []presence.Option{presence.WithNamespace(ns), presence.WithLayout(v.layout)}
			if v.noIndex {
				opts = append(opts, presence.WithoutOnlineIndex())
			}
			tr, err := presence.New(e.Client, opts...)
			if err == nil {
				err = connectAll(ctx, tr, users)
			}
			if err != nil {
				memCache[variant] = memResult{err: err}
				continue
			}
			all, err1 := per(ns.Prefix, len(users))
			idx, err2 := per(ns.Prefix+"presence:online:", len(users))
			if err1 == nil {
				err1 = err2
			}
			memCache[variant] = memResult{perUser: all, indexPerUser: idx, err: err1}
		}

		// 61 users in one slot: an index shard as dense as with 1M users.
		ns := e.NS.Sub("rsdense:")
		tr, err := presence.New(e.Client, presence.WithNamespace(ns))
		if err != nil {
			memCache["dense-index"] = memResult{err: err}
			return
		}
		var dense []string
		for i := 0; len(dense) < 61; i++ {
			u := "user-" + strconv.Itoa(i)
			if keys.Slot("{"+u+"}") == keys.Slot("{user-0}") {
				dense = append(dense, u)
			}
		}
		if err := connectAll(ctx, tr, dense); err != nil {
			memCache["dense-index"] = memResult{err: err}
			return
		}
		idx, err := per(ns.Prefix+"presence:online:", len(dense))
		memCache["dense-index"] = memResult{indexPerUser: idx, err: err}
	})
	return memCache
}

// BenchmarkPresenceMemory reports Redis bytes per online user with two
// connections (B/user) and the online index's share (index-B/user). The
// timed loop is empty; the numbers are the metrics.
func BenchmarkPresenceMemory(b *testing.B) {
	for _, name := range []string{"seed002", "redschema", "redschema-noindex", "redschema-singlekey", "redschema-singlekey-noindex", "dense-index"} {
		b.Run(name, func(b *testing.B) {
			r := measurePresenceMemory(b)[name]
			if r.err != nil {
				b.Fatal(r.err)
			}
			for i := 0; i < b.N; i++ {
			}
			if name != "dense-index" {
				b.ReportMetric(r.perUser, "B/user")
			}
			if name != "seed002" {
				b.ReportMetric(r.indexPerUser, "index-B/user")
			}
		})
	}
}
