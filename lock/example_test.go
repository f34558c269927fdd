package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/lock"
)

func connect() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

func Example() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	locks, err := lock.New(rdb, lock.WithOwner("worker-1"))
	if err != nil {
		panic(err)
	}
	l, err := locks.TryAcquire(ctx, lock.File, "report.pdf", locks.DefaultTTL(lock.File))
	if err != nil {
		panic(err)
	}
	fmt.Println("key:", l.Key())
	fmt.Println("fence issued:", l.Fence() > 0)

	_, err = locks.TryAcquire(ctx, lock.File, "report.pdf", time.Second)
	fmt.Println("second holder:", errors.Is(err, lock.ErrNotObtained))

	if err := l.Release(ctx); err != nil {
		panic(err)
	}
	fmt.Println("release again:", errors.Is(l.Release(ctx), lock.ErrNotHeld))
	// Output:
	// key: lock:file:{report.pdf}
	// fence issued: true
	// second holder: true
	// release again: true
}

func ExampleClient_Acquire_retry() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	held, _ := locks.TryAcquire(ctx, lock.Workflow, "wf-7", 5*time.Second)

	// Wait at most 50ms, trying every 10ms.
	wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := locks.Acquire(wait, lock.Workflow, "wf-7", 5*time.Second, lock.WithRetry(lock.LinearBackoff(10*time.Millisecond)))
	fmt.Println("not obtained:", errors.Is(err, lock.ErrNotObtained))
	fmt.Println("deadline:", errors.Is(err, context.DeadlineExceeded))

	_ = held.Release(ctx)
	l, err := locks.Acquire(ctx, lock.Workflow, "wf-7", 5*time.Second)
	fmt.Println("after release:", err == nil, l.Fence() > held.Fence())
	// Output:
	// not obtained: true
	// deadline: true
	// after release: true true
}

func ExampleLock_Context_watchdog() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	l, err := locks.TryAcquire(ctx, "index", "rebuild", 500*time.Millisecond, lock.WithWatchdog(50*time.Millisecond))
	if err != nil {
		panic(err)
	}
	time.Sleep(700 * time.Millisecond) // longer than the TTL: the watchdog refreshes
	fmt.Println("still held:", l.Context().Err() == nil)

	rdb.Del(ctx, l.Key()) // someone breaks the lock
	<-l.Context().Done()  // the watchdog notices within one period
	fmt.Println("lost:", errors.Is(context.Cause(l.Context()), lock.ErrLockLost))
	// Output:
	// still held: true
	// lost: true
}

func ExampleClient_Interval() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	job, err := locks.Interval("unread-reminder", 2*time.Hour, 0)
	if err != nil {
		panic(err)
	}
	for instance := 1; instance <= 3; instance++ {
		ran, err := job.Do(ctx, func(context.Context) error { return nil })
		fmt.Printf("instance %d ran: %v %v\n", instance, ran, err)
	}
	last, _ := job.LastRun(ctx)
	fmt.Println("last run recorded:", !last.IsZero())
	// Output:
	// instance 1 ran: true <nil>
	// instance 2 ran: false <nil>
	// instance 3 ran: false <nil>
	// last run recorded: true
}

func ExampleClient_Semaphore() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	gpus, err := locks.Semaphore("gpu", "node-1", 2)
	if err != nil {
		panic(err)
	}
	a, _ := gpus.TryAcquire(ctx, 30*time.Second)
	b, _ := gpus.TryAcquire(ctx, 30*time.Second)
	_, err = gpus.TryAcquire(ctx, 30*time.Second)
	fmt.Println("third permit:", errors.Is(err, lock.ErrNotObtained))
	n, _ := gpus.Held(ctx)
	fmt.Println("held:", n)
	_ = a.Release(ctx)
	_ = b.Release(ctx)
	// Output:
	// third permit: true
	// held: 2
}

func ExampleWithFairness() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	held, _ := locks.TryAcquire(ctx, "printer", "p1", 5*time.Second)
	got := make(chan int, 2)
	for i := 1; i <= 2; i++ {
		go func() {
			l, err := locks.Acquire(ctx, "printer", "p1", 5*time.Second, lock.WithFairness(time.Second))
			if err != nil {
				panic(err)
			}
			got <- i
			_ = l.Release(ctx)
		}()
		// Wait until waiter i has joined the fair queue's list.
		for rdb.LLen(ctx, "lock:queue:printer:{p1}").Val() < int64(i) {
			time.Sleep(time.Millisecond)
		}
	}
	_ = held.Release(ctx)
	fmt.Println("served:", <-got, <-got)
	// Output:
	// served: 1 2
}

func ExampleClient_TryAcquireMulti() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	// A transfer locks both accounts, or neither.
	accounts := []lock.Resource{{Type: "account", ID: "alice"}, {Type: "account", ID: "bob"}}
	m, err := locks.TryAcquireMulti(ctx, accounts, 5*time.Second)
	if err != nil {
		panic(err)
	}
	for _, l := range m.Locks() {
		fmt.Println(l.Key(), l.Fence() > 0)
	}

	// bob and carol: bob is held, so carol is not taken either.
	_, err = locks.TryAcquireMulti(ctx, []lock.Resource{{Type: "account", ID: "carol"}, {Type: "account", ID: "bob"}}, 5*time.Second)
	fmt.Println("not obtained:", errors.Is(err, lock.ErrNotObtained))
	carol, err := locks.TryAcquire(ctx, "account", "carol", time.Second)
	fmt.Println("carol free:", err == nil)

	_ = carol.Release(ctx)
	fmt.Println("released:", m.Release(ctx) == nil)
	// Output:
	// lock:account:{alice} true
	// lock:account:{bob} true
	// not obtained: true
	// carol free: true
	// released: true
}

func ExampleClient_RWMutex() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)
	rw, err := locks.RWMutex("config", "prices")
	if err != nil {
		panic(err)
	}

	r1, _ := rw.TryRLock(ctx, 5*time.Second)
	r2, err := rw.TryRLock(ctx, 5*time.Second)
	fmt.Println("two readers:", err == nil)
	_, err = rw.TryLock(ctx, 5*time.Second)
	fmt.Println("writer while reading:", errors.Is(err, lock.ErrNotObtained))

	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w, err := rw.Lock(ctx, 5*time.Second)
	fmt.Println("writer:", err == nil, w.Fence() > 0)
	_, err = rw.TryRLock(ctx, 5*time.Second)
	fmt.Println("reader while writing:", errors.Is(err, lock.ErrNotObtained))
	_ = w.Release(ctx)
	// Output:
	// two readers: true
	// writer while reading: true
	// writer: true true
	// reader while writing: true
}

func ExampleSemaphore_AcquireN() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	locks, _ := lock.New(rdb)

	// 8 GB of GPU memory, handed out in GB.
	mem, _ := locks.Semaphore("gpu-mem", "node-1", 8)
	big, err := mem.AcquireN(ctx, 6, 30*time.Second)
	if err != nil {
		panic(err)
	}
	_, err = mem.TryAcquireN(ctx, 3, 30*time.Second)
	fmt.Println("3 GB more:", errors.Is(err, lock.ErrNotObtained))
	small, err := mem.TryAcquireN(ctx, 2, 30*time.Second)
	fmt.Println("2 GB more:", err == nil)
	n, _ := mem.Held(ctx)
	fmt.Println("held:", n)
	_ = big.Release(ctx)
	n, _ = mem.Held(ctx)
	fmt.Println("after release:", n)
	_ = small.Release(ctx)
	// Output:
	// 3 GB more: true
	// 2 GB more: true
	// held: 8
	// after release: 2
}

func ExampleClient_Election() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	a, _ := lock.New(rdb, lock.WithOwner("node-a"))
	b, _ := lock.New(rdb, lock.WithOwner("node-b"))
	ea, _ := a.Election("scheduler", 3*time.Second)
	eb, _ := b.Election("scheduler", 3*time.Second)

	lead, err := ea.Campaign(ctx)
	if err != nil {
		panic(err)
	}
	ld, _ := eb.Leader(ctx)
	fmt.Println("leader:", ld.Label(), ld.Fence == lead.Fence())

	// node-b campaigns; node-a resigns and node-b leads at once.
	got := make(chan *lock.Lock)
	go func() {
		l, _ := eb.Campaign(ctx, lock.WithRetry(lock.LinearBackoff(5*time.Millisecond)))
		got <- l
	}()
	_ = ea.Resign(ctx)
	fmt.Println("lost lead cancelled:", errors.Is(context.Cause(lead.Context()), context.Canceled))
	next := <-got
	ld, _ = ea.Leader(ctx)
	fmt.Println("leader:", ld.Label(), next.Fence() > lead.Fence())
	_ = eb.Resign(ctx)
	ld, _ = ea.Leader(ctx)
	fmt.Printf("leader: %q\n", ld.Owner)
	// Output:
	// leader: node-a true
	// lost lead cancelled: true
	// leader: node-b true
	// leader: ""
}

func ExampleWithWakeups() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	// Releases announce themselves on the resource's shard channel and
	// waiters wake at once (Redis 7+; here, on miniredis, they poll).
	locks, _ := lock.New(rdb, lock.WithWakeups())

	held, _ := locks.TryAcquire(ctx, lock.File, "report.pdf", 10*time.Second)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = held.Release(ctx)
	}()
	l, err := locks.Acquire(ctx, lock.File, "report.pdf", 10*time.Second)
	fmt.Println("handed over:", err == nil && l.Fence() > held.Fence())
	_ = l.Release(ctx)
	// Output:
	// handed over: true
}

func ExampleNewInspector() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	locks, _ := lock.New(rdb, lock.WithOwner("worker-1"))
	_, _ = locks.TryAcquire(ctx, lock.File, "report.pdf", time.Minute)
	gpus, _ := locks.Semaphore("gpu", "pool", 2)
	_, _ = gpus.TryAcquire(ctx, time.Minute)

	// An admin tool reads everything at once: two round trips per node.
	in, err := lock.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	o, err := in.Overview(ctx, 100)
	if err != nil {
		panic(err)
	}
	for _, h := range o.Held {
		fmt.Println("held:", h.ResourceType, h.ResourceID, "by", h.OwnerLabel, "for", h.Lease)
	}
	for _, s := range o.Semaphores {
		fmt.Println("semaphore:", s.ResourceType, s.ResourceID, len(s.Permits), "permit(s)")
	}
	// Output:
	// held: file report.pdf by worker-1 for 1m0s
	// semaphore: gpu pool 1 permit(s)
}
