//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/session"
)

// TakeoverRounds is how many CLUSTER FAILOVER TAKEOVERs one run of
// TestTakeoverLosesNoDurableJob makes on the queue's shard.
const TakeoverRounds = 4

// Producers enqueue and workers ack on one queue, and other goroutines
// take locks and create sessions on the same shard, while the shard is
// failed over TakeoverRounds times with CLUSTER FAILOVER TAKEOVER: the
// replica promotes itself at once, without waiting for the replication
// stream, and the old master goes on acknowledging writes until it learns
// it was demoted; then it resyncs from the new master and drops them.
// Counted, with and without WithDurability(1, ...) on the three packages:
// enqueues that returned nil whose job never reached a worker, acks that
// returned nil whose job was delivered again, leases taken (nil error)
// that are no longer held, sessions created (nil error) that are not
// found. With the option all must be 0; without it the counts are logged
// (the package docs quote them).
func TestTakeoverLosesNoDurableJob(t *testing.T) {
	e := newEnv(t)
	for _, durable := range []bool{false, true} {
		name := "without durability"
		if durable {
			name = "with durability"
		}
		t.Run(name, func(t *testing.T) {
			r := e.takeoverRun(t, durable)
			t.Logf("%s: %d takeovers; enqueues acknowledged %d, lost %d; acks acknowledged %d, lost (job delivered again) %d; leases taken %d, lost %d; sessions created %d, lost %d; ErrNotDurable: %d; other errors: %d",
				name, r.takeovers, r.enqueued, r.lostJobs, r.acked, r.lostAcks, r.locked, r.lostLocks, r.created, r.lostSessions, r.notDurable, r.otherErrs)
			if durable {
				assert.Zero(t, r.lostJobs, "acknowledged durable enqueues lost")
				assert.Zero(t, r.lostAcks, "acknowledged durable acks lost")
				assert.Zero(t, r.lostLocks, "acknowledged durable leases lost")
				assert.Zero(t, r.lostSessions, "acknowledged durable sessions lost")
				assert.Positive(t, r.enqueued, "some enqueues acknowledged")
				assert.Positive(t, r.locked, "some leases acknowledged")
				assert.Positive(t, r.created, "some sessions acknowledged")
			}
		})
	}
}

type takeoverResult struct {
	takeovers             int
	enqueued, lostJobs    int
	acked, lostAcks       int
	locked, lostLocks     int
	created, lostSessions int
	notDurable, otherErrs int64
}

func (e *env) takeoverRun(t *testing.T, durable bool) takeoverResult {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	name := "to-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	slot := keys.Slot("{" + name + "}")
	opts := []queue.Option{queue.WithNamespace(e.ns), queue.WithLease(time.Second)}
	lopts := []lock.Option{lock.WithNamespace(e.ns)}
	sopts := []session.Option{session.WithNamespace(e.ns)}
	if durable {
		const n, wait = 1, 500 * time.Millisecond
		opts = append(opts, queue.WithDurability(n, wait))
		lopts = append(lopts, lock.WithDurability(n, wait))
		sopts = append(sopts, session.WithDurability(n, wait))
	}
	q, err := queue.New[int](e.client, name, opts...)
	require.NoError(t, err)
	locks, err := lock.New(e.client, lopts...)
	require.NoError(t, err)
	sessions, err := session.New(e.client, sopts...)
	require.NoError(t, err)
	shard := e.owner(ctx, slot).slots // the shard's slots: its replica takes the same
	onShard := func(id string) bool {
		s := keys.Slot("{" + id + "}")
		for _, r := range shard {
			if s >= r[0] && s <= r[1] {
				return true
			}
		}
		return false
	}

	var (
		mu       sync.Mutex
		enqueued = map[string]bool{}   // acknowledged enqueues
		acked    = map[string]bool{}   // acknowledged acks
		seen     = map[string]int{}    // deliveries per job
		held     []*lock.Lock          // acknowledged leases
		created  = map[string]string{} // acknowledged sessions: ID -> user
		res      takeoverResult
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	other := func(err error) {
		if atomic.AddInt64(&res.otherErrs, 1) <= 3 {
			t.Logf("error: %v", err)
		}
	}
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
				time.Sleep(time.Millisecond) // about 2,000 jobs/s in all
				id := fmt.Sprintf("p%d-%d", p, i)
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := q.Enqueue(c, i, queue.WithID(id))
				cancel()
				switch {
				case err == nil:
					mu.Lock()
					enqueued[id] = true
					mu.Unlock()
				case errors.Is(err, queue.ErrNotDurable):
					atomic.AddInt64(&res.notDurable, 1)
				default:
					other(err)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	work := func(stopWhenIdle time.Duration) {
		idle := time.Now()
		for ctx.Err() == nil {
			if stopWhenIdle == 0 && stop.Load() {
				return
			}
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			j, err := q.TryDequeue(c)
			if err == nil {
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				err = q.Ack(c, j)
				switch {
				case err == nil:
					mu.Lock()
					acked[j.ID] = true
					mu.Unlock()
				case errors.Is(err, queue.ErrNotDurable):
					atomic.AddInt64(&res.notDurable, 1)
				case errors.Is(err, queue.ErrLeaseLost):
				default:
					other(err)
				}
				idle = time.Now()
			}
			cancel()
			switch {
			case errors.Is(err, queue.ErrEmpty):
				if stopWhenIdle > 0 && time.Since(idle) > stopWhenIdle {
					return
				}
				time.Sleep(5 * time.Millisecond)
			case err != nil && !errors.Is(err, queue.ErrNotDurable) && !errors.Is(err, queue.ErrLeaseLost):
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); work(0) }()
	}
	// Leases and sessions, each on an ID of its own on the shard.
	for g := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
				id := fmt.Sprintf("%s-l%d-%d", name, g, i)
				if !onShard(id) {
					continue
				}
				time.Sleep(2 * time.Millisecond)
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				l, err := locks.TryAcquire(c, "doc", id, 2*time.Minute)
				cancel()
				switch {
				case err == nil:
					mu.Lock()
					held = append(held, l)
					mu.Unlock()
				case errors.Is(err, lock.ErrNotDurable):
					atomic.AddInt64(&res.notDurable, 1)
				default:
					other(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
				user := fmt.Sprintf("%s-u%d-%d", name, g, i)
				if !onShard(user) {
					continue
				}
				time.Sleep(2 * time.Millisecond)
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				s, _, err := sessions.Create(c, session.Info{UserID: user})
				cancel()
				switch {
				case err == nil:
					mu.Lock()
					created[s.ID] = user
					mu.Unlock()
				case errors.Is(err, session.ErrNotDurable):
					atomic.AddInt64(&res.notDurable, 1)
				default:
					other(err)
				}
			}
		}()
	}

	for range TakeoverRounds {
		time.Sleep(600 * time.Millisecond)
		m := e.owner(ctx, slot)
		var replica node
		for _, n := range e.nodes(ctx) {
			if !n.master && n.masterID == m.id {
				replica = n
			}
		}
		require.NotEmpty(t, replica.id, "the master of slot %d has a replica", slot)
		e.waitLinkUp(ctx, replica.addr)
		require.NoError(t, e.admin(replica.addr).Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err())
		e.waitRole(ctx, replica.addr, "master")
		e.waitRole(ctx, m.addr, "slave")
		e.waitLinkUp(ctx, m.addr)
		res.takeovers++
		t.Logf("takeover %d: %s took slot %d over from %s", res.takeovers, fmtNode(replica), slot, fmtNode(m))
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	e.waitHealthy(ctx)
	// Drain: what is left, and the jobs whose ack was lost (delivered
	// again once their lease expires).
	work(2 * time.Second)
	require.NoError(t, ctx.Err(), "the run ended in time")

	mu.Lock()
	defer mu.Unlock()
	res.enqueued, res.acked = len(enqueued), len(acked)
	for id := range enqueued {
		if seen[id] == 0 {
			res.lostJobs++
		}
	}
	for id := range acked {
		if seen[id] > 1 {
			res.lostAcks++
		}
	}
	res.locked, res.created = len(held), len(created)
	for _, l := range held {
		_, err := l.TTL(ctx)
		if errors.Is(err, lock.ErrNotHeld) {
			res.lostLocks++
		} else if err != nil {
			other(err)
		}
		_ = l.Release(ctx)
	}
	for id, user := range created {
		_, err := sessions.Get(ctx, user, id)
		if errors.Is(err, session.ErrNotFound) {
			res.lostSessions++
		} else if err != nil {
			other(err)
		}
		_, _ = sessions.Revoke(ctx, user, id)
	}
	return res
}

// waitRole waits until the node at addr says it is a master or a slave.
func (e *env) waitRole(ctx context.Context, addr, role string) {
	e.t.Helper()
	c := e.admin(addr)
	for {
		if r, err := c.Do(ctx, "ROLE").Slice(); err == nil && len(r) > 0 && r[0] == role {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("chaos: %s never became %s: %v", addr, role, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitLinkUp waits until the replica at addr is in sync with its master.
func (e *env) waitLinkUp(ctx context.Context, addr string) {
	e.t.Helper()
	c := e.admin(addr)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") && !strings.Contains(info, "master_sync_in_progress:1") {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("chaos: replica %s never synced: %v", addr, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
