// Package benchutil is the shared plumbing of the benchmarks: a client for
// the real Redis under test, a fresh key prefix per benchmark, clean-up, a
// round-trip counter, and memory probes.
//
// The server is REDIS_ADDR (default 127.0.0.1:6379), or the cluster named by
// REDIS_CLUSTER_ADDRS. Benchmarks never run on miniredis: its numbers would
// say nothing about Redis.
package benchutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Counter is the go-redis hook that counts round trips: one per command
// sent on its own, one per pipeline (or transaction); the connection
// handshake is not counted (see harness.Trips).
type Counter = harness.Trips

// Env is one benchmark's Redis.
type Env struct {
	Client redis.UniversalClient
	NS     keys.Namespace
	Trips  *Counter
	cpu0   time.Duration // the servers' CPU time at Warm
	self0  time.Duration // this process's CPU time at Warm
}

// New connects to the Redis under test, attaches a Counter, and removes the
// benchmark's keys when it ends. It skips when no server answers.
func New(b testing.TB) *Env {
	b.Helper()
	var c redis.UniversalClient
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 128, ContextTimeoutEnabled: true})
	} else {
		addr := os.Getenv("REDIS_ADDR")
		if addr == "" {
			addr = "127.0.0.1:6379"
		}
		c = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128, ContextTimeoutEnabled: true})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		b.Skipf("benchutil: no Redis: %v", err)
	}
	e := &Env{Client: c, NS: keys.Namespace{Prefix: "rsb:" + randHex() + ":"}, Trips: harness.CountTrips(c)}
	b.Cleanup(func() {
		_ = Clean(context.Background(), c, e.NS.Prefix)
		_ = c.Close()
	})
	return e
}

// NewClient returns another client to the same server, without the
// counter, for peers that want their own (closed with the benchmark).
func (e *Env) NewClient(b testing.TB) redis.UniversalClient {
	var c redis.UniversalClient
	switch cc := e.Client.(type) {
	case *redis.ClusterClient:
		o := *cc.Options()
		c = redis.NewClusterClient(&o)
	case *redis.Client:
		o := *cc.Options()
		c = redis.NewClient(&o)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// Warm opens a connection (the handshake is not the benchmark's), resets
// the round-trip count and notes the servers' CPU time. Call it right
// before b.ResetTimer.
func (e *Env) Warm(b testing.TB) {
	if err := e.Client.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	// INFO first: the round trips count only the benchmark's own.
	e.cpu0 = ServerCPU(context.Background(), e.Client)
	e.self0 = ProcessCPU()
	if pid := callgrindPID(); pid != "" {
		if err := callgrindZero(pid); err != nil {
			b.Fatalf("benchutil: callgrind_control -z %s: %v", pid, err)
		}
	}
	e.Trips.Reset()
}

// ReportTrips reports the round trips per operation counted since Warm
// as the metric "trips/op", the Redis CPU time per operation since Warm
// as "redis-us/op" (see ServerCPU: meaningful only on a server no one
// else uses, such as the one cmd/compare starts), and this process's CPU
// time per operation as "client-us/op" (see ProcessCPU), and with
// BENCH_CALLGRIND_PID the server's instructions per operation as
// "redis-Ir/op" (see callgrindPID). The two CPU
// columns move far less than ns/op on a busy machine: they count work,
// not waiting. It reads the round trips before its own INFO, which the
// counter sees.
func (e *Env) ReportTrips(b *testing.B) {
	self := ProcessCPU()
	b.ReportMetric(float64(e.Trips.Total())/float64(b.N), "trips/op")
	if e.self0 > 0 {
		b.ReportMetric(float64((self-e.self0).Nanoseconds())/1e3/float64(b.N), "client-us/op")
	}
	if pid := callgrindPID(); pid != "" {
		ir, err := callgrindIr(pid)
		if err != nil {
			b.Fatalf("benchutil: callgrind_control -e Ir %s: %v", pid, err)
		}
		b.ReportMetric(float64(ir)/float64(b.N), "redis-Ir/op")
	}
	if cpu := ServerCPU(context.Background(), e.Client); cpu > 0 && e.cpu0 > 0 {
		b.ReportMetric(float64((cpu-e.cpu0).Nanoseconds())/1e3/float64(b.N), "redis-us/op")
	}
}

// ServerCPU returns the CPU time (user and system) that the Redis
// servers behind c have used since they started, summed over every master
// of a cluster, or 0 when INFO does not say. It is the cost of everything
// a server did, network I/O included, and counts each command once
// (INFO commandstats counts the commands a script runs on top of the
// script's own time). On a server others use it measures their work too.
func ServerCPU(ctx context.Context, c redis.UniversalClient) time.Duration {
	var mu sync.Mutex
	var total time.Duration
	err := keys.ForEachNode(ctx, c, func(ctx context.Context, n redis.UniversalClient) error {
		info, err := n.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		var sum float64
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return err
				}
				sum += f
			}
		}
		mu.Lock()
		total += time.Duration(sum * float64(time.Second))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return 0
	}
	return total
}

// ProcessCPU returns the CPU time (user and system) this process has used,
// every goroutine's and the garbage collector's, or 0 where getrusage
// fails.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Clean unlinks every key under prefix on every node (SCAN, never KEYS).
func Clean(ctx context.Context, c redis.UniversalClient, prefix string) error {
	return keys.ForEachNode(ctx, c, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 1000).Iterator()
		for it.Next(ctx) {
			if err := n.Unlink(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	})
}

// MemoryUnder sums MEMORY USAGE (SAMPLES 0: exact) of every key under
// prefix and returns the total and the key count.
func MemoryUnder(ctx context.Context, c redis.UniversalClient, prefix string) (bytes, n int64, err error) {
	var total, count atomic.Int64
	err = keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		it := node.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 1000).Iterator()
		for it.Next(ctx) {
			m, err := node.MemoryUsage(ctx, it.Val(), 0).Result()
			if err == redis.Nil {
				continue // expired between SCAN and MEMORY USAGE
			}
			if err != nil {
				return err
			}
			total.Add(m)
			count.Add(1)
		}
		return it.Err()
	})
	return total.Load(), count.Load(), err
}

func randHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
