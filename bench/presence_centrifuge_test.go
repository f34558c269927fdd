package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/centrifugal/centrifuge"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/presence"
)

// The presence peer with the same guarantees: centrifugal/centrifuge's
// Redis presence manager, which keeps each channel's clients in a hash
// (client ID -> info) and a sorted set of their expiry times, written by
// one Lua script per update (AddPresence: HSET, EXPIRE, ZADD, EXPIRE),
// read by one that first drops the expired clients (Presence), and
// removed by a third (RemovePresence). It runs on its own client
// (rueidis, auto-pipelined), against the same server, at the same
// concurrency as ours (presenceRun).

// newCentrifuge returns a presence manager on the server of e, its keys
// under e's prefix (removed with it), with centrifuge's default 60 s TTL.
func newCentrifuge(b *testing.B, e *benchutil.Env) *centrifuge.RedisPresenceManager {
	node, err := centrifuge.New(centrifuge.Config{Metrics: centrifuge.MetricsConfig{RegistererGatherer: prometheus.NewRegistry()}})
	if err != nil {
		b.Fatal(err)
	}
	var conf centrifuge.RedisShardConfig
	switch c := e.Client.(type) {
	case *redis.ClusterClient:
		conf.ClusterAddresses = c.Options().Addrs
	case *redis.Client:
		conf.Address = c.Options().Addr
	}
	shard, err := centrifuge.NewRedisShard(node, conf)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(shard.Close)
	pm, err := centrifuge.NewRedisPresenceManager(node, centrifuge.RedisPresenceManagerConfig{
		Prefix: e.NS.Prefix + "centrifuge",
		Shards: []*centrifuge.RedisShard{shard},
	})
	if err != nil {
		b.Fatal(err)
	}
	return pm
}

// centrifugeConnInfo is a connection's info as our tracker keeps it:
// the seed's metadata.
var centrifugeConnInfo = []byte(marshal(seedConnMeta{Device: seedMeta.Device, UserAgent: seedMeta.UserAgent, IP: seedMeta.IP, SocketID: seedMeta.SocketID}))

// BenchmarkPresenceCentrifuge: the rows with centrifuge's presence
// manager as the peer, each ours beside centrifuge's:
//
//   - heartbeat: one heartbeat of one of 1000 users with two connections
//     each (ours: Tracker.Heartbeat, as BenchmarkPresenceHeartbeat;
//     centrifuge: AddPresence of the connection again in the user's own
//     channel, how centrifuge refreshes a client's presence);
//   - channel-join: a new member (one device) joins one of 100 channels
//     (ours: Channels.Join; centrifuge: AddPresence of a new client);
//   - channel-join-leave: the same, and the device leaves again
//     (Channels.Leave; RemovePresence);
//   - channel-heartbeat: one of 1000 members of 100 channels refreshes
//     its device (Channels.Heartbeat; AddPresence again);
//   - channel-members100: the members of a channel of 100, each member's
//     data decoded into the same Go type (Channels.Members, which also
//     sorts them by user ID; Presence, which decodes its protobuf
//     ClientInfo but leaves the channel info as bytes, and then
//     json.Unmarshal of each client's ChanInfo, what an application does
//     to read what it joined with).
func BenchmarkPresenceCentrifuge(b *testing.B) {
	users := userIDs(presenceUsers)
	ctx := context.Background()
	room := func(i int) string { return "room-" + strconv.Itoa(i%100) }
	member := func(u string) channelMember { return channelMember{Name: "User " + u} }
	chanInfo := func(u string) []byte { return []byte(marshal(member(u))) }
	channels := func(b *testing.B, e *benchutil.Env) *presence.Channels[channelMember] {
		ch, err := presence.NewChannels[channelMember](e.Client, presence.WithNamespace(e.NS))
		if err != nil {
			b.Fatal(err)
		}
		return ch
	}
	// joinAll joins user i to room(i) (one device) for every user.
	joinAll := func(b *testing.B, join func(i int) error) {
		if err := parallel(len(users), join); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("heartbeat/redschema", func(b *testing.B) {
		benchTracker(b, presence.LayoutHash, func(ctx context.Context, tr *presence.Tracker, i int) error {
			_, err := tr.Heartbeat(ctx, users[i%len(users)], "conn_123")
			return err
		})
	})
	b.Run("heartbeat/centrifuge", func(b *testing.B) {
		e := benchutil.New(b)
		pm := newCentrifuge(b, e)
		info := func(u, c string) *centrifuge.ClientInfo {
			return &centrifuge.ClientInfo{ClientID: c, UserID: u, ConnInfo: centrifugeConnInfo}
		}
		joinAll(b, func(i int) error {
			u := users[i]
			if err := pm.AddPresence("#"+u, "conn_123", info(u, "conn_123")); err != nil {
				return err
			}
			return pm.AddPresence("#"+u, "conn_456", info(u, "conn_456"))
		})
		presenceRun(b, e, func(i int) error {
			u := users[i%len(users)]
			return pm.AddPresence("#"+u, "conn_123", info(u, "conn_123"))
		})
	})

	b.Run("channel-join/redschema", func(b *testing.B) {
		e := benchutil.New(b)
		ch := channels(b, e)
		presenceRun(b, e, func(i int) error {
			u := "user-" + strconv.Itoa(i)
			_, err := ch.Join(ctx, room(i), u, "conn-0", member(u))
			return err
		})
	})
	b.Run("channel-join/centrifuge", func(b *testing.B) {
		e := benchutil.New(b)
		pm := newCentrifuge(b, e)
		presenceRun(b, e, func(i int) error {
			u := "user-" + strconv.Itoa(i)
			c := u + "-conn-0"
			return pm.AddPresence(room(i), c, &centrifuge.ClientInfo{ClientID: c, UserID: u, ChanInfo: chanInfo(u)})
		})
	})

	b.Run("channel-join-leave/redschema", func(b *testing.B) {
		e := benchutil.New(b)
		ch := channels(b, e)
		presenceRun(b, e, func(i int) error {
			u := "user-" + strconv.Itoa(i)
			if _, err := ch.Join(ctx, room(i), u, "conn-0", member(u)); err != nil {
				return err
			}
			_, err := ch.Leave(ctx, room(i), u, "conn-0")
			return err
		})
	})
	b.Run("channel-join-leave/centrifuge", func(b *testing.B) {
		e := benchutil.New(b)
		pm := newCentrifuge(b, e)
		presenceRun(b, e, func(i int) error {
			u := "user-" + strconv.Itoa(i)
			c := u + "-conn-0"
			if err := pm.AddPresence(room(i), c, &centrifuge.ClientInfo{ClientID: c, UserID: u, ChanInfo: chanInfo(u)}); err != nil {
				return err
			}
			return pm.RemovePresence(room(i), c, u)
		})
	})

	b.Run("channel-heartbeat/redschema", func(b *testing.B) {
		e := benchutil.New(b)
		ch := channels(b, e)
		joinAll(b, func(i int) error {
			_, err := ch.Join(ctx, room(i), users[i], "conn-0", member(users[i]))
			return err
		})
		presenceRun(b, e, func(i int) error {
			n := i % len(users)
			return ch.Heartbeat(ctx, room(n), users[n], "conn-0")
		})
	})
	b.Run("channel-heartbeat/centrifuge", func(b *testing.B) {
		e := benchutil.New(b)
		pm := newCentrifuge(b, e)
		info := func(n int) *centrifuge.ClientInfo {
			return &centrifuge.ClientInfo{ClientID: users[n] + "-conn-0", UserID: users[n], ChanInfo: chanInfo(users[n])}
		}
		joinAll(b, func(i int) error { return pm.AddPresence(room(i), users[i]+"-conn-0", info(i)) })
		presenceRun(b, e, func(i int) error {
			n := i % len(users)
			return pm.AddPresence(room(n), users[n]+"-conn-0", info(n))
		})
	})

	const members = 100
	b.Run("channel-members100/redschema", func(b *testing.B) {
		e := benchutil.New(b)
		ch := channels(b, e)
		var once sync.Once
		if err := fillChannel(ctx, e.Client, e.NS, members, 1); err != nil {
			b.Fatal(err)
		}
		presenceRun(b, e, func(int) error {
			ms, err := ch.Members(ctx, "room-1")
			if err == nil && len(ms) != members {
				once.Do(func() { b.Errorf("%d members, want %d", len(ms), members) })
			}
			return err
		})
	})
	b.Run("channel-members100/centrifuge", func(b *testing.B) {
		e := benchutil.New(b)
		pm := newCentrifuge(b, e)
		var once sync.Once
		for u := range members {
			user := "user-" + strconv.Itoa(u)
			c := user + "-conn-0"
			if err := pm.AddPresence("room-1", c, &centrifuge.ClientInfo{ClientID: c, UserID: user, ChanInfo: chanInfo(user)}); err != nil {
				b.Fatal(err)
			}
		}
		presenceRun(b, e, func(int) error {
			ms, err := pm.Presence("room-1")
			if err != nil {
				return err
			}
			if len(ms) != members {
				once.Do(func() { b.Errorf("%d members, want %d", len(ms), members) })
			}
			// The members' data as ours returns it: decoded (ours
			// also sorts the members by user ID).
			out, i := make([]channelMember, len(ms)), 0
			for _, ci := range ms {
				if err := json.Unmarshal(ci.ChanInfo, &out[i]); err != nil {
					return err
				}
				i++
			}
			if len(out) > 0 && out[0].Name == "" {
				once.Do(func() { b.Error("a member without its name") })
			}
			return nil
		})
	})
}
