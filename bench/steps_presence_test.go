package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Channel Join, step by step from centrifuge's AddPresence: a channel's
// members hash, devices set, occupancy record and due entry, and the
// joining user's request memo, all under the channel's tag. (The
// package's due set is one per slot, shared by the slot's channels; here
// it is one per channel, in the channel's slot all the same.)
func stepChannelKey(template string, typ keys.Type) *keys.Template {
	return keys.MustCompile(keys.Pattern{Template: template, Type: typ, TTL: time.Hour, Tag: "channel", Owner: "bench-steps"})
}

var (
	stepChMembers = stepChannelKey("steps:channel:{channel}", keys.Hash)
	stepChDevices = stepChannelKey("steps:channel:devices:{channel}", keys.ZSet)
	stepChOcc     = stepChannelKey("steps:channel:occupancy:{channel}", keys.String)
	stepChDue     = stepChannelKey("steps:channel:due:{channel}", keys.ZSet)
	stepChMemo    = stepChannelKey("steps:channel:requests:{channel}:{user_id}", keys.ZSet)
)

// Join's commands, as channel_join_fast.lua runs them for a user's first
// device in a channel with nothing due (the benchmark's case). KEYS
// members, devices, occupancy, due, request memo; ARGV channel, events
// channel, user, member value, device member, device expiry, keys' TTL
// (ms), join event, request ID, memo reply member, now (ms), memo trim
// bound, replay window (ms).
const (
	cjWrites = `redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
`
	cjTime   = "redis.call('TIME')\n"
	cjReads  = "redis.call('ZSCORE', KEYS[2], ARGV[5])\nredis.call('HGET', KEYS[1], ARGV[3])\nredis.call('HLEN', KEYS[1])\n"
	cjEvents = `redis.call('PUBLISH', ARGV[2], ARGV[8])
redis.call('GET', KEYS[3])
redis.call('PEXPIRE', KEYS[3], ARGV[7])
`
	cjDue  = "redis.call('ZSCORE', KEYS[4], ARGV[1])\n"
	cjMemo = `redis.call('ZSCORE', KEYS[5], ARGV[9])
redis.call('ZADD', KEYS[5], ARGV[11], ARGV[9], ARGV[11], ARGV[10])
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[12])
redis.call('PEXPIRE', KEYS[5], ARGV[13])
`
)

// joinSteps: centrifuge's four writes (the member in a hash, its expiry
// in a sorted set, both keys' TTLs) in one script; then server time;
// then the reads before the writes (a device already in, the user's
// devices against the limit, join told from update, the member count
// of the reply); then the join event and the occupancy record; then the
// due entry that lets a sweep find expired devices without scanning;
// then the request memo that recognises a resent Join.
var joinSteps = steps("return 'ok 1 1 1'\n",
	[]string{"centrifuge-writes-in-one-script", cjWrites},
	[]string{"server-time", cjTime, cjWrites},
	[]string{"reads-before-writes", cjTime, cjReads, cjWrites},
	[]string{"events-and-occupancy", cjTime, cjReads, cjWrites, cjEvents},
	[]string{"due-entry", cjTime, cjDue, cjReads, cjWrites, cjEvents},
	[]string{"resend-memo", cjTime, cjMemo, cjDue, cjReads, cjWrites, cjEvents},
)

// BenchmarkChannelJoinSteps: presence channel Join's commands, step by
// step from centrifuge's AddPresence in one script (see joinSteps), with
// the users, rooms, data and concurrency of
// BenchmarkPresenceCentrifuge/channel-join.
func BenchmarkChannelJoinSteps(b *testing.B) {
	const ttl, window, replay = 60_000, 60_000, 180_000
	for _, st := range joinSteps {
		op := stepsPkg.Declare("channel-join-"+st.name, st.src, []*keys.Template{stepChMembers, stepChDevices, stepChOcc, stepChDue, stepChMemo}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			ctx := context.Background()
			run := call.NewRunner(e.Client, stepsLanes)
			rooms := make([][]string, 100)
			for r := range rooms {
				rooms[r] = stepKeys(b, e.NS, "room-"+strconv.Itoa(r), stepChMembers, stepChDevices, stepChOcc, stepChDue)
			}
			presenceRun(b, e, func(i int) error {
				room, u := "room-"+strconv.Itoa(i%100), "user-"+strconv.Itoa(i)
				memo, err := stepChMemo.Key(e.NS, room, u)
				if err != nil {
					return err
				}
				ks := append(rooms[i%100][:4:4], memo)
				now := time.Now().UnixMilli()
				nows := strconv.FormatInt(now, 10)
				data := marshal(channelMember{Name: "User " + u})
				id := strconv.FormatInt(int64(i)|1<<62, 16)
				_, err = run.Run(ctx, op, ks, room, "events:"+room, u, "1:"+data,
					strconv.Itoa(len(u))+":"+u+"conn-0", strconv.FormatInt(now+ttl, 10), strconv.Itoa(ttl+window),
					`{"type":"join","userId":"`+u+`","data":`+data+`,"at":`+nows+`}`,
					id, id+"=ok,1,1,"+strconv.Itoa(i%100+1), nows, "("+strconv.FormatInt(now-replay, 10), strconv.Itoa(replay))
				return err
			})
		})
	}
}
