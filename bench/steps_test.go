package bench

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// The step benchmarks take the rows that miss their goal apart: each step
// is one script, sent through the library's own call layer (auto-pipelined
// on 4 lanes, as the packages' defaults), that runs the Redis commands of
// the step before it plus one more guarantee's commands, with no Lua logic
// (the values are built by the client, as the peer builds them, and what
// a read returns is dropped). The Redis CPU per operation of the last step
// is what any one-script implementation of those guarantees costs at least;
// the package's own row adds its Lua checks on top. bench/README.md reads
// the figures.

// stepsPkg names the step scripts' errors.
var stepsPkg = &call.Pkg{Name: "bench-steps", ErrInvalid: errStepInvalid}

type stepError string

func (e stepError) Error() string { return string(e) }

const errStepInvalid = stepError("bench-steps: invalid")

// stepsLanes is the packages' default lanes (call.DefaultLanes).
const stepsLanes = 4

// step is one script: its name (the guarantee it adds to the step
// before it) and its Lua.
type step struct{ name, src string }

// steps numbers the steps, each script the concatenation of its parts
// and ret.
func steps(ret string, parts ...[]string) []step {
	out := make([]step, len(parts))
	for i, p := range parts {
		out[i] = step{name: strconv.Itoa(i+1) + "-" + p[0], src: strings.Join(p[1:], "") + ret}
	}
	return out
}

// Heartbeat: presence and connections of a user and the online index
// shard, sharing the user's hash tag.
var (
	stepPresenceKey = keys.MustCompile(keys.Pattern{Template: "steps:presence:{user_id}", Type: keys.String, TTL: time.Minute, Tag: "user_id", Owner: "bench-steps"})
	stepConnsKey    = keys.MustCompile(keys.Pattern{Template: "steps:connections:{user_id}", Type: keys.Hash, TTL: time.Minute, Tag: "user_id", Owner: "bench-steps"})
	stepOnlineKey   = keys.MustCompile(keys.Pattern{Template: "steps:online:{user_id}", Type: keys.ZSet, TTL: 2 * time.Minute, Tag: "user_id", Owner: "bench-steps"})
)

// The heartbeat's commands. KEYS presence, connections, online index;
// ARGV user, connection, connection JSON, presence JSON, index score.
const (
	hbWrites = `redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], '60000')
redis.call('SET', KEYS[1], ARGV[4], 'PX', '60000')
`
	hbTime  = "redis.call('TIME')\n"
	hbReads = "redis.call('HGETALL', KEYS[2])\nredis.call('GET', KEYS[1])\n"
	hbIndex = "redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])\nredis.call('PEXPIRE', KEYS[3], '120000')\n"
)

// heartbeatSteps: the seed's three writes in one script, then server
// time, then the reads a heartbeat needs to rewrite the JSON it does not
// own (and to prune), then the online index.
var heartbeatSteps = steps("return 'ok 2 0 online'\n",
	[]string{"seed-writes-in-one-script", hbWrites},
	[]string{"server-time", hbTime, hbWrites},
	[]string{"read-before-write", hbTime, hbReads, hbWrites},
	[]string{"online-index", hbTime, hbReads, hbWrites, hbIndex},
)

// BenchmarkHeartbeatSteps: presence Heartbeat's commands, step by step
// from the seed's writes in one script (see heartbeatSteps), over the
// users and connections of BenchmarkPresenceHeartbeat, at its concurrency.
func BenchmarkHeartbeatSteps(b *testing.B) {
	users := userIDs(presenceUsers)
	for _, st := range heartbeatSteps {
		op := stepsPkg.Declare("heartbeat-"+st.name, st.src, []*keys.Template{stepPresenceKey, stepConnsKey, stepOnlineKey}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			ctx := context.Background()
			run := call.NewRunner(e.Client, stepsLanes)
			ks := make([][]string, len(users))
			start := time.Now().UnixMilli()
			for i, u := range users {
				ks[i] = stepKeys(b, e.NS, u, stepPresenceKey, stepConnsKey, stepOnlineKey)
				for j, c := range []string{"conn_123", "conn_456"} {
					if err := stepHeartbeat(ctx, run, op, ks[i], u, c, start, j+1); err != nil {
						b.Fatal(err)
					}
				}
			}
			presenceRun(b, e, func(i int) error {
				n := i % len(users)
				return stepHeartbeat(ctx, run, op, ks[n], users[n], "conn_123", start, 2)
			})
		})
	}
}

// stepHeartbeat runs one heartbeat step with the values the seed's client
// builds (seed002.beat).
func stepHeartbeat(ctx context.Context, run *call.Runner, op *call.Op, ks []string, user, conn string, connectedAt int64, active int) error {
	now := time.Now().UnixMilli()
	c := seedConn{ConnectedAt: connectedAt, LastSeen: now, Metadata: seedConnMeta{Device: seedMeta.Device, UserAgent: seedMeta.UserAgent, IP: seedMeta.IP, SocketID: seedMeta.SocketID}}
	p := seedPresence{Status: "online", LastSeen: now, ActiveConnections: active, Metadata: seedPresenceMeta{Device: seedMeta.Device, UserAgent: seedMeta.UserAgent, LastActivity: "active"}}
	_, err := run.Run(ctx, op, ks, user, conn, marshal(c), marshal(p), strconv.FormatInt(now+60000, 10))
	return err
}

// Create: a session hash and its user's index, sharing the user's tag.
var (
	stepSessionKey = keys.MustCompile(keys.Pattern{Template: "steps:session:{user_id}:{session_id}", Type: keys.Hash, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
	stepIndexKey   = keys.MustCompile(keys.Pattern{Template: "steps:index:{user_id}", Type: keys.ZSet, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
)

// Create's commands. KEYS session, index; ARGV the nine fields' values
// (user_id, email, ip_address, user_agent, device_fingerprint,
// created_at, last_activity, absolute_expiry, refresh_token_hash), the
// session ID, its index score, its TTL in ms.
const (
	crString = "redis.call('SET', KEYS[1], table.concat(ARGV, ' ', 1, 9), 'PX', ARGV[12])\n"
	crHash   = `redis.call('HSET', KEYS[1], 'user_id', ARGV[1], 'email', ARGV[2], 'ip_address', ARGV[3], 'user_agent', ARGV[4],
  'device_fingerprint', ARGV[5], 'created_at', ARGV[6], 'last_activity', ARGV[7], 'absolute_expiry', ARGV[8],
  'refresh_token_hash', ARGV[9])
redis.call('PEXPIRE', KEYS[1], ARGV[12])
`
	crTime  = "redis.call('TIME')\n"
	crIndex = `redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '0')
redis.call('ZCOUNT', KEYS[2], ARGV[11], '+inf')
redis.call('EXISTS', KEYS[1])
redis.call('ZADD', KEYS[2], ARGV[11], ARGV[10])
redis.call('PEXPIRE', KEYS[2], ARGV[12])
`
)

// createSteps: scs's one SET (of the fields joined into one value of
// about scs's size) in one script, then the seed's hash instead of the
// string, then server time, then the user's index (with the prune, the
// check for a resent request's session, and the index's TTL).
var createSteps = steps("return 'ok'\n",
	[]string{"scs-set-in-one-script", crString},
	[]string{"seed-hash-layout", crHash},
	[]string{"server-time", crTime, crHash},
	[]string{"user-index", crTime, crIndex, crHash},
)

// BenchmarkCreateSteps: session Create's commands, step by step from
// scs's one SET in one script (see createSteps), for the users of
// BenchmarkSession's Create at its concurrency.
func BenchmarkCreateSteps(b *testing.B) {
	for _, st := range createSteps {
		op := stepsPkg.Declare("create-"+st.name, st.src, []*keys.Template{stepSessionKey, stepIndexKey}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, stepsLanes)
			var n atomic.Int64
			runParallel(b, e, sessUsers, func(ctx context.Context, i int) error {
				u := sessUserID(i)
				sid, err := seedSessionID()
				if err != nil {
					return err
				}
				k, err := stepSessionKey.Key(e.NS, u, sid)
				if err != nil {
					return err
				}
				idx, err := stepIndexKey.Key(e.NS, u)
				if err != nil {
					return err
				}
				now := time.Now()
				ts := now.UTC().Format(time.RFC3339)
				abs := strconv.FormatInt(now.Add(24*time.Hour).UnixMilli(), 10)
				_, err = run.Run(ctx, op, []string{k, idx}, u, sessEmail, sessIP, sessUA, sessFP, ts, ts, abs, sessRTH,
					sid, strconv.FormatInt(now.Add(time.Hour).UnixMilli()+n.Add(1)%1000, 10), "3600000")
				return err
			})
		})
	}
}

// stepKeys builds the keys of user u from templates that take the user
// ID only.
func stepKeys(b testing.TB, ns keys.Namespace, u string, ts ...*keys.Template) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		k, err := t.Key(ns, u)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = k
	}
	return out
}

// Enqueue: asynq's per-task hash and pending list, and the queue's jobs
// hash, ready set, stats hash, wake list and reply memo, all under the
// queue's tag.
var (
	stepTaskKey    = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:t:{id}", Type: keys.Hash, Persistent: "bench: removed with the prefix", Tag: "queue", Owner: "bench-steps"})
	stepPendingKey = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:pending", Type: keys.List, Persistent: "bench: removed with the prefix", Tag: "queue", Owner: "bench-steps"})
	stepJobsKey    = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:jobs", Type: keys.Hash, Persistent: "bench: removed with the prefix", Tag: "queue", Owner: "bench-steps"})
	stepReadyKey   = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:ready", Type: keys.ZSet, Persistent: "bench: removed with the prefix", Tag: "queue", Owner: "bench-steps"})
	stepStatsKey   = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:stats", Type: keys.Hash, Persistent: "bench: removed with the prefix", Tag: "queue", Owner: "bench-steps"})
	stepWakeKey    = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:wake", Type: keys.List, Persistent: "bench: removed with the prefix", Tag: "queue", Owner: "bench-steps"})
	stepMemoKey    = keys.MustCompile(keys.Pattern{Template: "steps:{queue}:reply:{request_id}", Type: keys.String, TTL: time.Minute, Tag: "queue", Owner: "bench-steps"})
)

// Enqueue's commands. The first step is asynq's enqueue script (KEYS task
// hash, pending list; ARGV message, task ID, now in ns); the others take
// KEYS jobs hash, ready set, stats hash, wake list, reply memo and ARGV
// job ID, job JSON, ready score, as the queue's enqueue does (but the
// score, which it computes).
const (
	enAsynq = `if redis.call('EXISTS', KEYS[1]) == 1 then return 'conflict' end
redis.call('HSET', KEYS[1], 'msg', ARGV[1], 'state', 'pending', 'pending_since', ARGV[3])
redis.call('LPUSH', KEYS[2], ARGV[2])
`
	enLayout = "redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])\nredis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])\n"
	enSeq    = "redis.call('TIME')\nredis.call('HINCRBY', KEYS[3], 'enq_seq', '1')\n"
	enMemo   = "redis.call('SET', KEYS[5], 'ok', 'PX', '60000', 'NX', 'GET')\n"
)

// enqueueSteps: asynq's script through this library's call layer, then
// the queue's layout instead (one jobs hash, a ready set scored by time),
// then server time and the enqueue sequence (FIFO within a millisecond
// and the count of enqueues), then the reply memo that makes a resent
// request report its first outcome.
var enqueueSteps = steps("return 'ok'\n",
	[]string{"asynq-script", enAsynq},
	[]string{"jobs-hash-and-ready-set", enLayout},
	[]string{"server-time-and-sequence", enSeq, enLayout},
	[]string{"reply-memo", enSeq, enMemo, enLayout},
)

// BenchmarkEnqueueSteps: queue Enqueue's commands, step by step from
// asynq's script (see enqueueSteps), at BenchmarkQueueEnqueue's
// concurrency, on the queue's 2 lanes.
func BenchmarkEnqueueSteps(b *testing.B) {
	for i, st := range enqueueSteps {
		ts := []*keys.Template{stepJobsKey, stepReadyKey, stepStatsKey, stepWakeKey, stepMemoKey}
		if i == 0 {
			ts = []*keys.Template{stepTaskKey, stepPendingKey}
		}
		op := stepsPkg.Declare("enqueue-"+st.name, st.src, ts, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			ctx := context.Background()
			run := call.NewRunner(e.Client, 2)
			payload := marshal(benchPayload)
			fixed := stepKeys(b, e.NS, "bench", stepPendingKey, stepJobsKey, stepReadyKey, stepStatsKey, stepWakeKey)
			var seq atomic.Int64
			enqueueRun(b, e, func() error {
				id, err := seedSessionID() // 22 random characters
				if err != nil {
					return err
				}
				return enqueueStep(ctx, run, op, e.NS, i == 0, fixed, id, payload, seq.Add(1))
			})
		})
	}
}

// enqueueStep runs one enqueue step: asynq's arguments when asynq is set,
// else the queue's.
func enqueueStep(ctx context.Context, run *call.Runner, op *call.Op, ns keys.Namespace, asynq bool, fixed []string, id, payload string, n int64) error {
	now := time.Now()
	job := `{"id":"` + id + `","payload":` + payload + `,"max_retries":25}`
	if asynq {
		task, err := stepTaskKey.Key(ns, "bench", id)
		if err != nil {
			return err
		}
		_, err = run.Run(ctx, op, []string{task, fixed[0]}, job, id, strconv.FormatInt(now.UnixNano(), 10))
		return err
	}
	memo, err := stepMemoKey.Key(ns, "bench", id)
	if err != nil {
		return err
	}
	_, err = run.Run(ctx, op, []string{fixed[1], fixed[2], fixed[3], fixed[4], memo}, id, job, strconv.FormatInt(now.UnixMilli()*1000+n%1000, 10))
	return err
}
