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
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
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
// enqueues that returned nil whose job never reached a worker, deliveries
// of a job after an ack of it returned nil (the ack, or the dequeue it
// settled, was lost), leases taken (nil error)
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
			t.Logf("%s: healthy Enqueue %v (mean of sequential calls)", name, r.healthy)
			t.Logf("%s: %d takeovers; enqueues acknowledged %d, lost %d; acks acknowledged %d, delivered again after one (ack or dequeue lost) %d; leases taken %d, lost %d; sessions created %d, lost %d; ErrNotDurable: %d; other errors: %d",
				name, r.takeovers, r.enqueued, r.lostJobs, r.acked, r.lostAcks, r.locked, r.lostLocks, r.created, r.lostSessions, r.notDurable, r.otherErrs)
			t.Logf("%s (no option in these packages): presence connects acknowledged %d, lost %d; rate limit admitted %d, forgotten by the server (each one more admission a full limit would let through) %d on %d of %d identifiers",
				name, r.connected, r.lostConns, r.admitted, r.forgotten, r.overIDs, r.limitIDs)
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

// takeoverLimit is the rate limit per identifier of the takeover run: an
// hour's window never reached, so that every admission counts and the
// server's count can be compared with the admissions the callers saw.
const takeoverLimit = 100000

type takeoverResult struct {
	takeovers             int
	healthy               time.Duration // mean sequential Enqueue, before the takeovers
	enqueued, lostJobs    int
	acked, lostAcks       int
	locked, lostLocks     int
	created, lostSessions int
	connected, lostConns  int
	admitted, forgotten   int // rate limit: admissions, and those the server no longer counts
	overIDs, limitIDs     int // identifiers with forgotten admissions, identifiers used
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
	tracker, err := presence.New(e.client, presence.WithNamespace(e.ns))
	require.NoError(t, err)
	limits, err := ratelimit.New(e.client, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(takeoverLimit)}}, ratelimit.WithNamespace(e.ns))
	require.NoError(t, err)
	// The healthy cost: sequential enqueues before any takeover.
	const probes = 200
	t0 := time.Now()
	for i := range probes {
		_, err := q.Enqueue(ctx, -1, queue.WithID(fmt.Sprintf("probe-%d", i)))
		require.NoError(t, err, "healthy cluster")
	}
	healthy := time.Since(t0) / probes
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
		enqueued = map[string]bool{}     // acknowledged enqueues
		acked    = map[string]bool{}     // acknowledged acks
		seen     = map[string]int{}      // deliveries per job
		events   = map[string][]string{} // per job: deliveries and acks, for the log
		held     []*lock.Lock            // acknowledged leases
		created  = map[string]string{}   // acknowledged sessions: ID -> user
		conns    []string                // acknowledged presence connects (users)
		admitted = map[string]int{}      // rate limit admissions per identifier
		res      takeoverResult
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	began := time.Now()
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
			if j != nil { // with ErrNotDurable too: the job is ours
				if err != nil {
					atomic.AddInt64(&res.notDurable, 1)
				}
				mu.Lock()
				seen[j.ID]++
				events[j.ID] = append(events[j.ID], fmt.Sprintf("%s delivery %d (%v)", time.Since(began).Round(time.Millisecond), j.Delivery, err))
				if acked[j.ID] { // delivered after an ack that returned nil
					res.lostAcks++
					if res.lostAcks <= 3 {
						t.Logf("job %s: %v", j.ID, events[j.ID])
					}
				}
				mu.Unlock()
				err = q.Ack(c, j)
				mu.Lock()
				events[j.ID] = append(events[j.ID], fmt.Sprintf("%s ack %d: %v", time.Since(began).Round(time.Millisecond), j.Delivery, err))
				mu.Unlock()
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
	// Presence connects, each a user of its own on the shard; rate limits
	// on a new identifier every second.
	var limitIDs []string
	for i := 0; len(limitIDs) < 1000; i++ {
		if id := fmt.Sprintf("%s-r%d", name, i); onShard(id) {
			limitIDs = append(limitIDs, id)
		}
	}
	for g := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
				user := fmt.Sprintf("%s-c%d-%d", name, g, i)
				if !onShard(user) {
					continue
				}
				time.Sleep(2 * time.Millisecond)
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := tracker.Connect(c, user, presence.Conn{ID: "c1"})
				cancel()
				if err == nil {
					mu.Lock()
					conns = append(conns, user)
					mu.Unlock()
				} else {
					other(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				id := limitIDs[min(int(time.Since(began)/time.Second), len(limitIDs)-1)]
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				r, err := limits.Allow(c, id)
				cancel()
				switch {
				case err != nil:
					other(err)
				case r.Allowed:
					mu.Lock()
					admitted[id]++
					mu.Unlock()
				}
			}
		}()
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

	res.healthy = healthy
	res.connected, res.limitIDs = len(conns), len(admitted)
	for _, user := range conns {
		cs, err := tracker.Connections(ctx, user)
		switch {
		case err != nil:
			other(err)
		case len(cs) == 0:
			res.lostConns++
		}
	}
	for id, n := range admitted {
		res.admitted += n
		r, err := limits.Peek(ctx, id)
		if err != nil {
			other(err)
			continue
		}
		if counted := r.Limit - r.Remaining; counted < n {
			res.forgotten += n - counted
			res.overIDs++
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
