package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Chat assign (Open) and append, step by step from seed 000's commands.
// The chat package sends each call as one script, auto-pipelined on 4
// lanes (its default), so these steps do too. Every key carries the
// deployment's tag, as the chat package's do.
func stepChatKey(name string, typ keys.Type) *keys.Template {
	return keys.MustCompile(keys.Pattern{Template: "steps:chat:{tag}:" + name, Type: typ, TTL: time.Hour, Tag: "tag", Owner: "bench-steps"})
}

var (
	stepChatState   = stepChatKey("state", keys.Hash)
	stepChatActive  = stepChatKey("active", keys.ZSet)
	stepChatUnread  = stepChatKey("unread", keys.ZSet)
	stepChatBacklog = stepChatKey("backlog", keys.ZSet)
	stepChatRoster  = stepChatKey("admins", keys.Hash)
	stepChatCursor  = stepChatKey("cursor", keys.Hash)
	stepChatAvail   = keys.MustCompile(keys.Pattern{Template: "steps:chat:{tag}:admin:{admin_id}:presence", Type: keys.String, TTL: time.Hour, Tag: "tag", Owner: "bench-steps"})
	stepChatAssign  = keys.MustCompile(keys.Pattern{Template: "steps:chat:{tag}:admin:{admin_id}:assignments", Type: keys.Set, TTL: time.Hour, Tag: "tag", Owner: "bench-steps"})
	stepChatDash    = keys.MustCompile(keys.Pattern{Template: "steps:chat:{tag}:admin:{admin_id}:dashboard", Type: keys.Hash, TTL: time.Hour, Tag: "tag", Owner: "bench-steps"})
	stepChatMemo    = keys.MustCompile(keys.Pattern{Template: "steps:chat:{tag}:conversation:{id}:requests", Type: keys.ZSet, TTL: time.Hour, Tag: "tag", Owner: "bench-steps"})
	stepChatMsgs    = keys.MustCompile(keys.Pattern{Template: "steps:chat:{tag}:conversation:{id}:messages", Type: keys.List, TTL: time.Hour, Tag: "tag", Owner: "bench-steps"})
)

// stepChatTTL is the conversation TTL the steps write (chat's default
// is a day).
const stepChatTTL = 24 * time.Hour

// Open's commands, as open_fast.lua runs them for a new conversation
// handed straight to an admin (an empty backlog and unread queue: the
// benchmark's case; the PEXPIREs of those two are left out, as there). KEYS
// (in the order the steps first need them): 1-5 the admins'
// availability, 6-10 their assignments, 11 the active set, 12 the
// chosen admin's assignments, 13 the states, 14 the roster, 15 the
// cursor, 16 unread, 17 backlog, 18-22 the admins' dashboards, 23 the
// request memo. ARGV: conversation, now (ms), TTL (ms), its state, the
// 5 admin IDs (5-9), order stamp, prune bound, event, channel, request
// ID, memo reply member, memo trim bound, replay window (ms).
const (
	asSeed = `for i = 1, 5 do
  redis.call('GET', KEYS[i])
  redis.call('SCARD', KEYS[5 + i])
end
redis.call('SADD', KEYS[12], ARGV[1])
redis.call('ZADD', KEYS[11], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[12], ARGV[3])
`
	asTime  = "redis.call('TIME')\n"
	asState = `redis.call('HGET', KEYS[13], ARGV[1])
redis.call('HSET', KEYS[13], ARGV[1], ARGV[4])
`
	asRoster = `redis.call('HLEN', KEYS[14])
redis.call('HMGET', KEYS[14], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
for i = 1, 5 do redis.call('PTTL', KEYS[i]) end
`
	asCursor = `redis.call('HMGET', KEYS[15], 'last', 'stamp')
redis.call('HSET', KEYS[15], 'stamp', ARGV[10], 'last', ARGV[5])
`
	asExpiry = `redis.call('ZCARD', KEYS[16])
redis.call('ZCARD', KEYS[17])
redis.call('ZRANGEBYSCORE', KEYS[11], '-inf', ARGV[11], 'LIMIT', '0', '100')
for _, k in ipairs({13, 11, 15}) do redis.call('PEXPIRE', KEYS[k], ARGV[3]) end
`
	asEvents = `redis.call('PUBLISH', ARGV[13], ARGV[12])
redis.call('PUBLISH', ARGV[13], ARGV[12])
redis.call('DEL', KEYS[18], KEYS[19], KEYS[20], KEYS[21], KEYS[22])
`
	asMemo = `redis.call('ZSCORE', KEYS[23], ARGV[14])
redis.call('ZADD', KEYS[23], ARGV[2], ARGV[14], ARGV[2], ARGV[15])
redis.call('ZREMRANGEBYSCORE', KEYS[23], '-inf', ARGV[16])
redis.call('PEXPIRE', KEYS[23], ARGV[17])
`
)

// assignSteps: the seed's reads of each admin's availability and load
// and its three writes, in one script; then server time; then the
// conversation's state (open once: a second Open finds it; the state
// names its admin); then the roster and availability checks (a stale
// roster is refused, an availability without its TTL is corrupt); then
// the order stamp and round-robin cursor (one HMGET, one HSET); then
// expiry (the unread queue's type check and the backlog's size, the
// prune of expired conversations, the TTLs of the shared keys that
// exist); then the dashboards' invalidation and the events; then the
// request memo that recognises a resent Open.
var assignSteps = steps("return {'ok', ARGV[5], 1}\n",
	[]string{"seed-commands-in-one-script", asSeed},
	[]string{"server-time", asTime, asSeed},
	[]string{"conversation-state", asTime, asState, asSeed},
	[]string{"roster-and-availability-checks", asTime, asState, asRoster, asSeed},
	[]string{"order-stamp-and-cursor", asTime, asState, asRoster, asCursor, asSeed},
	[]string{"expiry", asTime, asExpiry, asState, asRoster, asCursor, asSeed},
	[]string{"dashboards-and-events", asTime, asExpiry, asState, asRoster, asCursor, asSeed, asEvents},
	[]string{"resend-memo", asTime, asMemo, asExpiry, asState, asRoster, asCursor, asSeed, asEvents},
)

// assignStepKeys is how many KEYS step i (from 0) passes: those its
// commands touch.
var assignStepKeys = []int{12, 12, 13, 14, 15, 17, 22, 23}

// chatStepDeployment returns the keys of deployment tag for chosen admin
// (1-5), the layout of assignSteps but the request memo (KEYS[23]).
func chatStepDeployment(b *testing.B, ns keys.Namespace, tag string, admin int) []string {
	ks := make([]string, 0, 23)
	for _, t := range []*keys.Template{stepChatAvail, stepChatAssign} {
		for a := 1; a <= chatAdmins; a++ {
			ks = append(ks, chatAdminKey(b, t, ns, tag, a))
		}
	}
	ks = append(ks, stepKeys(b, ns, tag, stepChatActive)...)
	ks = append(ks, ks[5+admin-1])
	ks = append(ks, stepKeys(b, ns, tag, stepChatState, stepChatRoster, stepChatCursor, stepChatUnread, stepChatBacklog)...)
	for a := 1; a <= chatAdmins; a++ {
		ks = append(ks, chatAdminKey(b, stepChatDash, ns, tag, a))
	}
	return ks
}

func chatAdminKey(b *testing.B, t *keys.Template, ns keys.Namespace, tag string, admin int) string {
	k, err := t.Key(ns, tag, strconv.Itoa(admin))
	if err != nil {
		b.Fatal(err)
	}
	return k
}

func chatConvKey(b *testing.B, t *keys.Template, ns keys.Namespace, tag, conv string) string {
	k, err := t.Key(ns, tag, conv)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// chatStepSetup writes deployment tag's roster and its admins'
// availability, as chatNew does for the chat package.
func chatStepSetup(ctx context.Context, b *testing.B, e *benchutil.Env, tag string) {
	pipe := e.Client.Pipeline()
	for a := 1; a <= chatAdmins; a++ {
		pipe.Set(ctx, chatAdminKey(b, stepChatAvail, e.NS, tag, a), "online", 30*time.Minute)
		pipe.HSet(ctx, stepKeys(b, e.NS, tag, stepChatRoster)[0], strconv.Itoa(a), chatCapacity)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// chatEvent is an "assigned" event as lib.lua's event writes it.
func chatEvent(conv, admin string, now int64) string {
	return `{"type":"assigned","conversation_id":"` + conv + `","admin_id":"` + admin + `","previous":"","reason":"opened","at":` + strconv.FormatInt(now, 10) + `}`
}

// BenchmarkChatAssignSteps: chat Open's commands, step by step from the
// seed's (see assignSteps), at BenchmarkChatAssign's concurrency, a
// fresh deployment every 4000 conversations as there. The admin is
// chosen by the client, round robin (the steps run no Lua logic).
func BenchmarkChatAssignSteps(b *testing.B) {
	for si, st := range assignSteps {
		op := stepsPkg.Declare("chat-assign-"+st.name, st.src, []*keys.Template{stepChatAvail}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, stepsLanes)
			ctx := context.Background()
			var deps [][][]string // per deployment, per chosen admin
			for d := range (b.N + chatPerDeployment - 1) / chatPerDeployment {
				tag := "d" + strconv.Itoa(d)
				chatStepSetup(ctx, b, e, tag)
				var per [][]string
				for a := 1; a <= chatAdmins; a++ {
					per = append(per, chatStepDeployment(b, e.NS, tag, a))
				}
				deps = append(deps, per)
			}
			ttl := stepChatTTL.Milliseconds()
			chatRun(b, e, chatScriptCmds, func(ctx context.Context, i int64) error {
				d := (i - 1) / chatPerDeployment
				conv := "c" + strconv.FormatInt(i, 10)
				admin := int(i%chatAdmins) + 1
				ks := deps[d][admin-1]
				if n := assignStepKeys[si]; n > len(ks) {
					memo, err := stepChatMemo.Key(e.NS, "d"+strconv.FormatInt(d, 10), conv)
					if err != nil {
						return err
					}
					ks = append(ks[:len(ks):len(ks)], memo)
				} else {
					ks = ks[:n]
				}
				now := time.Now().UnixMilli()
				a := strconv.Itoa(admin)
				req := strconv.FormatInt(0x1000000000000000+i, 16)
				_, err := run.Run(ctx, op, ks, conv, now, ttl, "1 "+strconv.FormatInt(now*512, 10)+" 0 "+a,
					"1", "2", "3", "4", "5", now*512, now-ttl, chatEvent(conv, a, now), e.NS.Prefix+"chat:events",
					req, req+"="+"61,31", "("+strconv.FormatInt(now-180000, 10), 180000)
				return err
			})
		})
	}
}

// Append's commands, as append_fast.lua runs them for a user's message
// in an assigned conversation that is unread already (the benchmark's
// case but for each conversation's first message; the seed's ZADD NX
// stands for the script's ZSCORE of unread, which adds only a new
// member). KEYS (in the order the steps first need them): 1 the
// messages, 2 the active set, 3 unread, 4 the states, 5 the admin's
// assignments, 6 backlog, 7 cursor, 8 the request memo. ARGV: conversation, now (ms), TTL (ms), the message, its
// unread score, channel, event, request ID, memo reply member, memo trim
// bound, replay window (ms), the messages kept.
const (
	apSeed = `redis.call('LPUSH', KEYS[1], ARGV[4])
redis.call('LTRIM', KEYS[1], '0', ARGV[12])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], 'NX', ARGV[5], ARGV[1])
`
	apTime  = "redis.call('TIME')\n"
	apState = "redis.call('HGET', KEYS[4], ARGV[1])\nredis.call('ZSCORE', KEYS[2], ARGV[1])\n"
	apIDs   = "redis.call('LINDEX', KEYS[1], '0')\n"
	apEvent = "redis.call('PEXPIRE', KEYS[5], ARGV[3])\nredis.call('PUBLISH', ARGV[6], ARGV[7])\n"
	apTTLs  = "for _, k in ipairs({4, 2, 3, 6, 7}) do redis.call('PEXPIRE', KEYS[k], ARGV[3]) end\n"
	apMemo  = `redis.call('ZSCORE', KEYS[8], ARGV[8])
redis.call('ZADD', KEYS[8], ARGV[2], ARGV[8], ARGV[2], ARGV[9])
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', ARGV[10])
redis.call('PEXPIRE', KEYS[8], ARGV[11])
`
)

// appendSteps: the seed's five commands in one script; then server
// time; then the conversation's state (it must be open and live; the
// state names its admin); then message IDs (the newest message's, read
// to number this one); then the admin's assignments' TTL and the message
// event;
// then the shared keys' TTLs; then the request memo that recognises a
// resent Append.
var appendSteps = steps("return {'ok', 1, ARGV[2]}\n",
	[]string{"seed-commands-in-one-script", apSeed},
	[]string{"server-time", apTime, apSeed},
	[]string{"conversation-state", apTime, apState, apSeed},
	[]string{"message-ids", apTime, apState, apIDs, apSeed},
	[]string{"admin-assignments-ttl-and-event", apTime, apState, apIDs, apSeed, apEvent},
	[]string{"shared-key-ttls", apTime, apState, apIDs, apSeed, apEvent, apTTLs},
	[]string{"resend-memo", apTime, apMemo, apState, apIDs, apSeed, apEvent, apTTLs},
)

// appendStepKeys is how many KEYS step i (from 0) passes.
var appendStepKeys = []int{3, 3, 4, 4, 5, 7, 8}

// BenchmarkChatAppendSteps: chat Append's commands, step by step from
// the seed's (see appendSteps), over BenchmarkChatAppend's 1000 open
// conversations at its concurrency.
func BenchmarkChatAppendSteps(b *testing.B) {
	const tag = "main"
	for si, st := range appendSteps {
		op := stepsPkg.Declare("chat-append-"+st.name, st.src, []*keys.Template{stepChatMsgs}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, stepsLanes)
			ctx := context.Background()
			shared := stepKeys(b, e.NS, tag, stepChatActive, stepChatUnread, stepChatState)
			rest := stepKeys(b, e.NS, tag, stepChatBacklog, stepChatCursor)
			ks := make([][]string, chatConvs)
			now := time.Now().UnixMilli()
			pipe := e.Client.Pipeline()
			for c := range chatConvs {
				conv := "c" + strconv.Itoa(c)
				admin := c%chatAdmins + 1
				ks[c] = append([]string{chatConvKey(b, stepChatMsgs, e.NS, tag, conv)}, shared...)
				ks[c] = append(ks[c], chatAdminKey(b, stepChatAssign, e.NS, tag, admin))
				ks[c] = append(ks[c], rest...)
				ks[c] = append(ks[c], chatConvKey(b, stepChatMemo, e.NS, tag, conv))[:appendStepKeys[si]]
				// Open, as BenchmarkChatAppend's setup opens them.
				pipe.HSet(ctx, shared[2], conv, "1 "+strconv.FormatInt(now*512+int64(c), 10)+" 0 "+strconv.Itoa(admin))
				pipe.ZAdd(ctx, shared[0], redis.Z{Score: float64(now), Member: conv})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			ttl := stepChatTTL.Milliseconds()
			chatRun(b, e, chatScriptCmds, func(ctx context.Context, i int64) error {
				c := int(i % chatConvs)
				conv := "c" + strconv.Itoa(c)
				now := time.Now()
				ms := now.UnixMilli()
				msg := `{"id":` + strconv.FormatInt(i, 10) + `,"content":"` + chatContent + `","sender_role":"user","timestamp":"` +
					now.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"}`
				ev := `{"type":"message","conversation_id":"` + conv + `","admin_id":"` + strconv.Itoa(c%chatAdmins+1) +
					`","previous":"","reason":"user","at":` + strconv.FormatInt(ms, 10) + `,"message":` + msg + `}`
				req := strconv.FormatInt(0x1000000000000000+i, 16)
				_, err := run.Run(ctx, op, ks[c], conv, ms, ttl, msg, 2251799813685248+ms, e.NS.Prefix+"chat:messages", ev,
					req, req+"=31,"+strconv.FormatInt(ms, 10), "("+strconv.FormatInt(ms-180000, 10), 180000, 99)
				return err
			})
		})
	}
}
