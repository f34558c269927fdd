// Command lock-cron runs one cron-like job from several "instances"
// (goroutines, each with its own lock client, as separate processes would
// have) and shows that the interval guard lets exactly one of them run it
// per interval, with a lease held while the job runs.
//
//	go run ./examples/lock-cron                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/lock-cron
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
)

const (
	instances = 8
	every     = 300 * time.Millisecond // the job's interval
	runsWant  = 5                      // the demo stops after this many runs
	work      = 50 * time.Millisecond  // how long one run takes
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

type record struct {
	instance int
	at       time.Time // server time of the claim
	fence    int64
}

func run() error {
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	ns := keys.Namespace{Prefix: fmt.Sprintf("lock-cron:%d:", time.Now().UnixNano())}
	defer cleanUp(rdb, ns)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	var runs []record
	var wg sync.WaitGroup
	var job *lock.Interval
	for i := 1; i <= instances; i++ {
		locks, err := lock.New(rdb, lock.WithNamespace(ns), lock.WithOwner(fmt.Sprintf("instance-%d", i)))
		if err != nil {
			return err
		}
		// At most once per interval, and never while a run still holds
		// the lease, however long it takes.
		g, err := locks.Interval("nightly-digest", every, 5*time.Second)
		if err != nil {
			return err
		}
		job = g // any instance's guard reads the shared state at the end
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// Each instance wakes up on its own schedule, as cron
				// daemons on different hosts with skewed clocks do.
				time.Sleep(10*time.Millisecond + rand.N(20*time.Millisecond))
				r, err := g.Claim(ctx)
				if err != nil {
					if ctx.Err() == nil {
						log.Printf("instance %d: %v", i, err)
					}
					continue
				}
				if !r.Claimed {
					continue
				}
				mu.Lock()
				runs = append(runs, record{instance: i, at: r.At, fence: r.Lease.Fence()})
				if len(runs) == runsWant {
					cancel()
				}
				mu.Unlock()
				time.Sleep(work) // the job; a real one watches r.Lease.Context()
				if err := r.Lease.Release(context.Background()); err != nil {
					log.Printf("instance %d: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	if !errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("only %d runs before the deadline", len(runs))
	}

	for n, r := range runs {
		gap := "first run"
		if n > 0 {
			d := r.at.Sub(runs[n-1].at)
			if d < every {
				return fmt.Errorf("runs %d and %d only %v apart", n, n+1, d)
			}
			gap = fmt.Sprintf("%v after the previous", d.Round(10*time.Millisecond))
		}
		fmt.Printf("run %d: instance-%d (%s, fencing token increasing: %v)\n", n+1, r.instance, gap, n == 0 || r.fence > runs[n-1].fence)
	}
	last, err := job.LastRun(context.Background())
	if err != nil {
		return err
	}
	val, err := rdb.Get(context.Background(), job.Key()).Result()
	if err != nil {
		return err
	}
	fmt.Printf("%s = %s (Unix ms, as seed 004 stores it; last run %s)\n", job.Key(), val, last.UTC().Format(time.RFC3339Nano))
	fmt.Printf("%d instances, interval %v: %d runs, never two within one interval\n", instances, every, len(runs))
	return nil
}

// cleanUp removes the demo's keys: the last-run key has no TTL by design,
// and the lease's fence key would otherwise live for an hour.
func cleanUp(rdb redis.UniversalClient, ns keys.Namespace) {
	_ = keys.ForEachNode(context.Background(), rdb, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, ns.Match(), 100).Iterator()
		for it.Next(ctx) {
			_ = n.Unlink(ctx, it.Val()).Err()
		}
		return it.Err()
	})
}
