package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// Every key pattern of the package, holding a wrong type, garbage or an
// out-of-range value: the operation that reads it fails with an error
// matching keys.ErrCorrupt that names that exact key (or repairs it, as
// documented, and still reports it), and a refused write writes nothing.
func TestCorruptionAtEveryKeyPattern(t *testing.T) {
	type env struct {
		e   *harness.Env
		ctx context.Context
		q   *queue.Queue[execution]
	}
	enqueue := func(v env) error {
		_, err := v.q.Enqueue(v.ctx, execution{}, queue.WithID("victim"))
		return err
	}
	enqueueUnique := func(v env) error {
		_, err := v.q.Enqueue(v.ctx, execution{}, queue.WithID("victim"), queue.WithUnique(time.Minute))
		return err
	}
	dequeue := func(v env) error {
		_, err := v.q.TryDequeue(v.ctx)
		return err
	}
	stats := func(v env) error {
		_, err := v.q.Stats(v.ctx)
		return err
	}
	listDead := func(v env) error {
		_, err := v.q.List(v.ctx, queue.Dead, 0, 10)
		return err
	}
	// stillReady runs op, then checks that the job "ready" was not
	// leased by the refused call.
	stillReady := func(op func(v env) error) func(v env) error {
		return func(v env) error {
			err := op(v)
			k := v.e.NS.Prefix + "queue:{" + v.q.Name() + "}:priority:normal"
			if sc, zerr := v.e.Client.ZScore(v.ctx, k, "ready").Result(); zerr != nil || sc == 0 {
				return fmt.Errorf("the refused call took the ready job: %v", zerr)
			}
			return err
		}
	}
	ready := func(v env) {
		_, err := v.q.Enqueue(v.ctx, execution{}, queue.WithID("ready"))
		require.NoError(v.e.T, err)
	}
	var doomed *queue.Job[execution] // the leased job of the cases that settle one
	cases := []struct {
		name   string
		key    string // the key at fault, after the prefix, {q} for the tag
		setup  func(v env, k string)
		op     func(v env) error
		writes bool // the op would write "victim": check it did not
	}{
		{"jobs: wrong type", "queue:{q}:jobs", func(v env, k string) { set(v.e, k) }, enqueue, true},
		{"jobs: garbage JSON", "queue:{q}:jobs", func(v env, k string) {
			ready(v)
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "ready", "{garbage").Err())
		}, dequeue, false},
		{"jobs: timeout past a Duration", "queue:{q}:jobs", func(v env, k string) {
			ready(v)
			body := v.e.Client.HGet(v.ctx, k, "ready").Val()
			require.True(v.e.T, strings.HasPrefix(body, `{"id":"ready",`), body)
			body = `{"timeout_ms":18446744073710,` + body[1:] // 448 µs once wrapped
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "ready", body).Err())
		}, dequeue, false},
		{"jobs: missing for a queued ID", "queue:{q}:jobs", func(v env, k string) {
			ready(v)
			require.NoError(v.e.T, v.e.Client.HDel(v.ctx, k, "ready").Err())
		}, dequeue, false},
		{"jobs: wrong type when adopting", "queue:{q}:jobs", func(v env, k string) {
			inbox := strings.Replace(k, ":jobs", ":inbox", 1)
			require.NoError(v.e.T, v.e.Client.LPush(v.ctx, inbox, `{"id":"seed-1","priority":0}`).Err())
			set(v.e, k)
		}, func(v env) error {
			_, err := v.q.TryDequeue(v.ctx)
			// The refused adoption wrote nothing: the seed's job is still
			// in the inbox.
			inbox := v.e.NS.Prefix + "queue:{" + v.q.Name() + "}:inbox"
			if n := v.e.Client.LLen(v.ctx, inbox).Val(); n != 1 {
				return fmt.Errorf("the refused adoption left %d elements in the inbox, want 1", n)
			}
			return err
		}, false},
		{"jobs: wrong type when acked", "queue:{q}:jobs", func(v env, k string) {
			ready(v)
			var err error
			doomed, err = v.q.TryDequeue(v.ctx)
			require.NoError(v.e.T, err)
			set(v.e, k)
		}, func(v env) error {
			err := v.q.Ack(v.ctx, doomed)
			// The refused ack wrote nothing: the lease is still held.
			if xerr := v.q.Extend(v.ctx, doomed); xerr != nil {
				return errors.New("the refused ack dropped the lease: " + xerr.Error())
			}
			return err
		}, false},
		// Enqueue writes no state entry (a job gets one at its first
		// delivery), so the dequeue that would write it is refused.
		{"state: wrong type", "queue:{q}:state", func(v env, k string) {
			ready(v)
			set(v.e, k)
		}, stillReady(dequeue), false},
		{"state: garbage", "queue:{q}:state", func(v env, k string) {
			ready(v)
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "ready", "garbage").Err())
		}, dequeue, false},
		{"state: out of range", "queue:{q}:state", func(v env, k string) {
			ready(v)
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "ready", "0,99999999999999999999,5,normal,").Err())
		}, dequeue, false},
		{"priority: wrong type", "queue:{q}:priority:normal", func(v env, k string) { set(v.e, k) }, enqueue, true},
		{"active: wrong type", "queue:{q}:active", func(v env, k string) { set(v.e, k) }, dequeue, false},
		{"active: deadline out of range", "queue:{q}:active", func(v env, k string) {
			_, err := v.q.Enqueue(v.ctx, execution{}, queue.WithID("ready"), queue.WithJobMaxRetries(0))
			require.NoError(v.e.T, err)
			_, err = v.q.TryDequeue(v.ctx)
			require.NoError(v.e.T, err)
			require.NoError(v.e.T, v.e.Client.ZAdd(v.ctx, k, zmember(1e15, "ready")).Err())
		}, func(v env) error {
			_, err := v.q.TryDequeue(v.ctx)
			return err
		}, false},
		{"stats: wrong type", "queue:stats:{q}", func(v env, k string) { set(v.e, k) }, enqueue, true},
		{"stats: garbage counter", "queue:stats:{q}", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "enq_seq", "many").Err())
		}, enqueue, true},
		{"stats: garbage skip counter", "queue:stats:{q}", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "enq_skipped", "many").Err())
		}, enqueue, true},
		{"stats: out of range sequence", "queue:stats:{q}", func(v env, k string) {
			ready(v)
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "delivery_seq", "9007199254740993").Err())
		}, stillReady(dequeue), false},
		{"stats: garbage read by Stats", "queue:stats:{q}", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "avg_process_time_ms", "-3").Err())
		}, stats, false},
		{"stats: NaN read by Stats", "queue:stats:{q}", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.HSet(v.ctx, k, "avg_process_time_ms", "NaN").Err())
		}, stats, false},
		{"dlq: wrong type", "queue:dlq:{q}", func(v env, k string) {
			_, err := v.q.Enqueue(v.ctx, execution{}, queue.WithID("doomed"), queue.WithJobMaxRetries(0))
			require.NoError(v.e.T, err)
			doomed, err = v.q.TryDequeue(v.ctx)
			require.NoError(v.e.T, err)
			set(v.e, k)
		}, func(v env) error {
			_, err := v.q.Nack(v.ctx, doomed, errors.New("boom"))
			// The refused dead-lettering wrote nothing: the job is still
			// leased to its holder (else the error breaks the chain the
			// test checks).
			if xerr := v.q.Extend(v.ctx, doomed); xerr != nil {
				return errors.New("the refused nack lost the job: " + xerr.Error())
			}
			return err
		}, false},
		{"dlq: garbage entry", "queue:dlq:{q}", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.LPush(v.ctx, k, "garbage").Err())
		}, listDead, false},
		{"executions: wrong type", "queue:{q}:executions", func(v env, k string) { set(v.e, k) }, enqueue, true},
		{"executions: garbage element", "queue:{q}:executions", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.LPush(v.ctx, k, "garbage").Err())
		}, dequeue, false},
		{"inbox: wrong type", "queue:{q}:inbox", func(v env, k string) { set(v.e, k) }, dequeue, false},
		{"inbox: garbage element", "queue:{q}:inbox", func(v env, k string) {
			require.NoError(v.e.T, v.e.Client.LPush(v.ctx, k, "[1,2]").Err())
		}, dequeue, false},
		{"unique: wrong type", "queue:{q}:unique:victim", func(v env, k string) { hset(v.e, k) }, enqueueUnique, true},
	}
	e := harness.New(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "c" + string(rune('a'+i))
			v := env{e: e, ctx: e.Ctx(), q: newQ(t, e, name)}
			tm := func(s string) string { return e.NS.Prefix + replaceTag(s, name) }
			k := tm(c.key)
			c.setup(v, k)
			err := c.op(v)
			var ce *keys.CorruptError
			require.ErrorAs(t, err, &ce, "%v", err)
			assert.Equal(t, k, ce.Key, "%v", err)
			for _, s := range []error{queue.ErrEmpty, queue.ErrDuplicate, queue.ErrNotFound, queue.ErrLeaseLost} {
				assert.NotErrorIs(t, err, s)
			}
			if c.writes {
				ok, herr := e.Client.HExists(v.ctx, tm("queue:{q}:jobs"), "victim").Result()
				if herr == nil {
					assert.False(t, ok, "a refused enqueue wrote its job")
				}
			}
		})
	}
	// Reported corruption that was repaired does not come back.
	t.Run("repaired", func(t *testing.T) {
		q := newQ(t, e, "repaired")
		ctx := e.Ctx()
		require.NoError(t, e.Client.LPush(ctx, e.NS.Prefix+"queue:{repaired}:executions", "garbage").Err())
		_, err := q.TryDequeue(ctx)
		require.ErrorIs(t, err, keys.ErrCorrupt)
		_, err = q.TryDequeue(ctx)
		require.ErrorIs(t, err, queue.ErrEmpty)
		d, err := q.List(ctx, queue.Dead, 0, 10)
		require.NoError(t, err)
		require.Len(t, d, 1, "dead-lettered with the reason, never dropped")
		assert.Equal(t, "garbage", d[0].Raw)
		assert.Contains(t, d[0].LastError, "not a job")
	})
}

// An enqueue without the reply memo (WithoutReplayMemo, a generated ID)
// meets corruption as one with it does: the key at fault is named and
// nothing is written (the undo path without the memo to delete).
func TestCorruptionWithoutMemo(t *testing.T) {
	e := harness.New(t)
	cases := []struct {
		name, key string
		setup     func(ctx context.Context, k string)
	}{
		{"jobs: wrong type", "queue:{q}:jobs", func(_ context.Context, k string) { set(e, k) }},
		{"stats: wrong type", "queue:stats:{q}", func(_ context.Context, k string) { set(e, k) }},
		{"stats: garbage counter", "queue:stats:{q}", func(ctx context.Context, k string) {
			require.NoError(t, e.Client.HSet(ctx, k, "enq_seq", "many").Err())
		}},
		{"priority: wrong type", "queue:{q}:priority:normal", func(_ context.Context, k string) { set(e, k) }},
		{"executions: wrong type", "queue:{q}:executions", func(_ context.Context, k string) { set(e, k) }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := e.Ctx()
			name := "bare" + string(rune('a'+i))
			q, err := queue.New[execution](e.Client, name, queue.WithNamespace(e.NS), queue.WithoutReplayMemo())
			require.NoError(t, err)
			tm := func(s string) string { return e.NS.Prefix + replaceTag(s, name) }
			k := tm(c.key)
			c.setup(ctx, k)
			_, err = q.Enqueue(ctx, execution{WorkflowID: "victim"})
			var ce *keys.CorruptError
			require.ErrorAs(t, err, &ce, "%v", err)
			assert.Equal(t, k, ce.Key, "%v", err)
			if k != tm("queue:{q}:jobs") {
				n, err := e.Client.HLen(ctx, tm("queue:{q}:jobs")).Result()
				require.NoError(t, err)
				assert.Zero(t, n, "a refused enqueue wrote its job")
			}
		})
	}
}

// A job whose JSON is gone is reported the same way whether its ID is
// queued or in flight (its lease then recovered): keys.ErrCorrupt naming
// the jobs hash, never ErrEmpty, and the ID is dropped. In flight, the
// state entry may be gone with it or left.
func TestMissingJobReportedQueuedOrInFlight(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, c := range []string{"queued", "in flight", "in flight, state gone too", "in flight, only state gone"} {
		t.Run(c, func(t *testing.T) {
			name := "miss" + strings.ReplaceAll(strings.ReplaceAll(c, " ", ""), ",", "")
			q := newQ(t, e, name, queue.WithLease(100*time.Millisecond))
			_, err := q.Enqueue(ctx, execution{}, queue.WithID("x"))
			require.NoError(t, err)
			jobs := e.NS.Prefix + "queue:{" + name + "}:jobs"
			state := e.NS.Prefix + "queue:{" + name + "}:state"
			want := jobs
			if c != "queued" {
				_, err = q.TryDequeue(ctx)
				require.NoError(t, err)
			}
			switch c {
			case "queued", "in flight":
				require.NoError(t, e.Client.HDel(ctx, jobs, "x").Err())
			case "in flight, state gone too":
				require.NoError(t, e.Client.HDel(ctx, jobs, "x").Err())
				require.NoError(t, e.Client.HDel(ctx, state, "x").Err())
			case "in flight, only state gone":
				require.NoError(t, e.Client.HDel(ctx, state, "x").Err())
				want = state
			}
			e.Advance(150 * time.Millisecond) // past the lease
			_, err = q.TryDequeue(ctx)
			var ce *keys.CorruptError
			require.ErrorAs(t, err, &ce, "reported, not ErrEmpty")
			assert.ErrorIs(t, err, keys.ErrCorrupt)
			assert.NotErrorIs(t, err, queue.ErrEmpty)
			assert.Equal(t, want, ce.Key)
			assert.Contains(t, err.Error(), "job x ")
			// dropped: nothing left of it, reported once
			_, err = q.TryDequeue(ctx)
			assert.ErrorIs(t, err, queue.ErrEmpty)
			s, err := q.Stats(ctx)
			require.NoError(t, err)
			assert.Zero(t, s.InFlight)
			assert.Zero(t, s.Ready[queue.Normal]+s.Delayed[queue.Normal])
			n, err := e.Client.HLen(ctx, state).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "no state left behind")
		})
	}
}
