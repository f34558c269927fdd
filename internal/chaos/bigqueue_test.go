//go:build chaos

package chaos

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// BigQueueJobs is the size of the queue TestBigQueueMigration moves;
// REDIS_CHAOS_BIG_JOBS overrides it (the queue doc quotes runs with
// 100,000 and 300,000). It stays well under what the chaos cluster's 1 s
// node timeout allows: 300,000 jobs block the source longer than that, so
// the cluster declares it failed and promotes its replica mid-migration.
const BigQueueJobs = 50000

// A queue lives on one slot: moving that slot moves its keys whole, and
// the source node is blocked while MIGRATE serializes each one. This
// moves the slot of a queue of delayed jobs the way redis-cli --cluster
// reshard does (IMPORTING/MIGRATING, MIGRATE in batches, SETSLOT NODE) and
// reports how long it took and the longest stall a PING to the source
// node saw meanwhile. It asserts only that the queue is whole afterwards:
// the figures are for the queue doc.
func TestBigQueueMigration(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	n := BigQueueJobs
	if v := os.Getenv("REDIS_CHAOS_BIG_JOBS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	name := "big-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	slot := keys.Slot("{" + name + "}")
	q, err := queue.New[int](e.client, name, queue.WithNamespace(e.ns))
	require.NoError(t, err)
	t0 := time.Now()
	items := make([]queue.Item[int], 10000) // EnqueueBatch's most items
	for i := range items {
		items[i] = queue.Item[int]{Payload: i, Options: []queue.EnqueueOption{queue.WithDelay(time.Hour)}}
	}
	for done := 0; done < n; done += len(items) {
		_, err := q.EnqueueBatch(ctx, items[:min(len(items), n-done)])
		require.NoError(t, err)
	}
	t.Logf("enqueued %d delayed jobs in %v", n, time.Since(t0).Round(time.Millisecond))

	src := e.owner(ctx, slot)
	dst := e.otherMaster(ctx, src)
	sa, da := e.admin(src.addr), e.admin(dst.addr)
	// The two big keys (each enqueue also leaves a reply memo for a
	// minute: n small keys that move too).
	big := []string{e.ns.Prefix + "queue:{" + name + "}:jobs", e.ns.Prefix + "queue:{" + name + "}:priority:normal"}
	for _, k := range big {
		mem, err := sa.MemoryUsage(ctx, k).Result()
		require.NoError(t, err)
		t.Logf("key %s: %d bytes", k, mem)
	}

	// A PING every millisecond to the source: its longest wait.
	var worst atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := e.admin(src.addr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := time.Now()
			_ = p.Ping(ctx).Err()
			if d := int64(time.Since(s)); d > worst.Load() {
				worst.Store(d)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	base := time.Duration(worst.Swap(0))

	host, port, _ := strings.Cut(dst.addr, ":")
	t1 := time.Now()
	require.NoError(t, da.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.id).Err())
	require.NoError(t, sa.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id).Err())
	var longest time.Duration
	for {
		ks := mustKeysInSlot(ctx, t, sa, slot)
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 60000, "KEYS"}
		for _, k := range ks {
			args = append(args, k)
		}
		s := time.Now()
		require.NoError(t, sa.Do(ctx, args...).Err())
		longest = max(longest, time.Since(s))
	}
	for _, nd := range e.nodes(ctx) {
		if nd.master {
			require.NoError(t, e.admin(nd.addr).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dst.id).Err())
		}
	}
	moved := time.Since(t1)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("slot %d of a queue of %d delayed jobs moved from %s to %s in %v; longest MIGRATE %v; longest PING to the source %v (%v before)",
		slot, n, fmtNode(src), fmtNode(dst), moved.Round(time.Millisecond), longest.Round(time.Millisecond),
		time.Duration(worst.Load()).Round(time.Millisecond), base.Round(time.Millisecond))

	e.waitHealthy(ctx)
	require.Eventually(t, func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.Delayed[queue.Normal] == int64(n)
	}, 10*time.Second, 50*time.Millisecond, "the queue is whole on its new node")
	for { // the test's jobs go
		got, err := q.Purge(ctx, queue.Scheduled, 10000) // Purge's largest n
		require.NoError(t, err)
		if got == 0 {
			break
		}
	}
}

// mustKeysInSlot lists up to 100 keys of slot on the node c.
func mustKeysInSlot(ctx context.Context, t *testing.T, c *redis.Client, slot int) []string {
	t.Helper()
	v, err := c.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
	require.NoError(t, err)
	return v
}
