//go:build chaos

package chaos

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// MaxRecovery is the goal of the failover test: from the replica's
// promotion to the first successful call of every package.
const MaxRecovery = 3 * time.Second

// A master freezes (SIGSTOP, as a hung process or a partition would look);
// its replica is promoted after the node timeout. Every package's calls on
// the frozen master's slot must work again within MaxRecovery of the
// promotion, with clients made by connect.ClusterOptions.
func TestFailoverRecovery(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tag := "fo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	slot := keys.Slot("{" + tag + "}")
	m := e.owner(ctx, slot)
	var replica node
	for _, n := range e.nodes(ctx) {
		if !n.master && n.masterID == m.id {
			replica = n
		}
	}
	require.NotEmpty(t, replica.id, "the master of slot %d has a replica", slot)

	limits, err := ratelimit.New(e.client, ratelimit.Policy{{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(1 << 20)}}, ratelimit.WithNamespace(e.ns))
	require.NoError(t, err)
	locks, err := lock.New(e.client, lock.WithNamespace(e.ns))
	require.NoError(t, err)
	q, err := queue.New[string](e.client, tag, queue.WithNamespace(e.ns))
	require.NoError(t, err)
	sessions, err := session.New(e.client, session.WithNamespace(e.ns))
	require.NoError(t, err)
	tracker, err := presence.New(e.client, presence.WithNamespace(e.ns))
	require.NoError(t, err)
	calls := map[string]func(ctx context.Context) error{
		"ratelimit": func(ctx context.Context) error { _, err := limits.Allow(ctx, tag); return err },
		"lock": func(ctx context.Context) error {
			l, err := locks.TryAcquire(ctx, "doc", tag, time.Second)
			if err == nil {
				err = l.Release(ctx)
			}
			return err
		},
		"queue": func(ctx context.Context) error { _, err := q.Enqueue(ctx, "job"); return err },
		"session": func(ctx context.Context) error {
			_, _, err := sessions.Create(ctx, session.Info{UserID: tag})
			return err
		},
		"presence": func(ctx context.Context) error {
			_, err := tracker.Connect(ctx, tag, presence.Conn{ID: "c1"})
			return err
		},
	}
	for name, call := range calls {
		require.NoError(t, call(ctx), "%s before the failover", name)
	}

	pid := pidOf(t, m.addr)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	stopped := time.Now()
	resume := sync.OnceFunc(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	t.Cleanup(resume)
	t.Logf("froze master %s of slot %d; its replica is %s", fmtNode(m), slot, fmtNode(replica))

	promoted := make(chan time.Time, 1)
	go func() {
		r := e.admin(replica.addr)
		for ctx.Err() == nil {
			if role, err := r.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
				promoted <- time.Now()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	firstOK := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				err := call(c)
				cancel()
				if err == nil && time.Since(stopped) > 500*time.Millisecond {
					mu.Lock()
					firstOK[name] = time.Now()
					mu.Unlock()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	var at time.Time
	select {
	case at = <-promoted:
		t.Logf("replica promoted %v after the freeze", at.Sub(stopped).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("no promotion within 30 s")
	}
	wg.Wait()
	for name := range calls {
		ok, found := firstOK[name]
		require.True(t, found, "%s never recovered", name)
		d := ok.Sub(at)
		t.Logf("%s: first successful call %v after the promotion", name, d.Round(time.Millisecond))
		assert.LessOrEqual(t, d, MaxRecovery, "%s recovered too late", name)
	}
	resume()
	e.waitHealthy(ctx)
}

// pidOf reads the pid of the chaos node at addr from its pidfile
// (scripts/chaos-up.sh writes them under REDSCHEMA_CHAOS_DIR).
func pidOf(t *testing.T, addr string) int {
	t.Helper()
	dir := os.Getenv("REDSCHEMA_CHAOS_DIR")
	if dir == "" {
		dir = "/tmp/redschema-chaos"
	}
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	b, err := os.ReadFile(filepath.Join(dir, port, "redis.pid"))
	require.NoError(t, err, "the chaos tier freezes nodes it started (scripts/chaos-up.sh)")
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}
