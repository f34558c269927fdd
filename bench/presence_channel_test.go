package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// channelMember is typical member data: a display name.
type channelMember struct {
	Name string `json:"name"`
}

// BenchmarkChannelMemory reports Redis bytes per channel member
// (B/member: MEMORY USAGE, exact, of every key under the variant's
// namespace but the replay records, divided by the members; the replay
// records, which expire a minute after a member's last Join or Leave, as
// replay-B/member) for channels of 100 and 1000 members
// with one and with two devices each, for presence.Channels (members hash,
// devices sorted set, occupancy record, due shard) and for a naive layout
// without join/leave events or silent leaves: a set of user IDs and a hash
// of member data per channel, plus a set of device IDs with a TTL per
// member. The timed loop
// is empty; the numbers are the metrics.
func BenchmarkChannelMemory(b *testing.B) {
	for _, members := range []int{100, 1000} {
		for _, devices := range []int{1, 2} {
			for _, variant := range []string{"redschema", "naive"} {
				b.Run(fmt.Sprintf("members=%d/devices=%d/%s", members, devices, variant), func(b *testing.B) {
					e := benchutil.New(b)
					ctx := context.Background()
					ns := e.NS.Sub("ch:")
					var err error
					if variant == "redschema" {
						err = fillChannel(ctx, e.Client, ns, members, devices)
					} else {
						err = fillNaiveChannel(ctx, e.Client, ns.Prefix, members, devices)
					}
					if err != nil {
						b.Fatal(err)
					}
					bytes, _, err := benchutil.MemoryUnder(ctx, e.Client, ns.Prefix)
					if err != nil {
						b.Fatal(err)
					}
					// Request memos live ReplayWindow (3 min) after a
					// member's last Join or Leave: reported apart.
					replay, _, err := benchutil.MemoryUnder(ctx, e.Client, ns.Prefix+"presence:channel:requests:")
					if err != nil {
						b.Fatal(err)
					}
					for i := 0; i < b.N; i++ {
					}
					b.ReportMetric(float64(bytes-replay)/float64(members), "B/member")
					b.ReportMetric(float64(replay)/float64(members), "replay-B/member")
				})
			}
		}
	}
}

// fillChannel joins members users with devices devices each to one
// channel, 32 calls at a time (auto-pipelined).
func fillChannel(ctx context.Context, c redis.UniversalClient, ns keys.Namespace, members, devices int) error {
	ch, err := presence.NewChannels[channelMember](c, presence.WithNamespace(ns))
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 32)
	errs := make(chan error, members*devices)
	var wg sync.WaitGroup
	for u := range members {
		for d := range devices {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				user := "user-" + strconv.Itoa(u)
				_, err := ch.Join(ctx, "room-1", user, "conn-"+strconv.Itoa(d), channelMember{Name: "User " + strconv.Itoa(u)})
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fillNaiveChannel writes the naive layout: SADD channel user; SADD
// channel:user conn, EXPIRE 60 s; in one pipeline per member.
func fillNaiveChannel(ctx context.Context, c redis.UniversalClient, prefix string, members, devices int) error {
	for u := range members {
		user := "user-" + strconv.Itoa(u)
		pipe := c.Pipeline()
		pipe.SAdd(ctx, prefix+"channel:{room-1}", user)
		pipe.HSet(ctx, prefix+"channel:{room-1}:data", user, `{"name":"User `+strconv.Itoa(u)+`"}`)
		for d := range devices {
			pipe.SAdd(ctx, prefix+"channel:{room-1}:"+user, "conn-"+strconv.Itoa(d))
		}
		pipe.Expire(ctx, prefix+"channel:{room-1}:"+user, 60*time.Second)
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
