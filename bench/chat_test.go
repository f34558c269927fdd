package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// The chat benchmarks compare the chat package with seed 000 §5's own
// commands ("Example Usage"), the layout it replaces: 5 admins, messages
// with the seed's JSON. Redis CPU per operation is INFO commandstats µs
// summed over the commands one operation runs (sensorUsec): EVALSHA (and
// EVAL) for redschema, whose usec includes every command of the script;
// the seed's own commands for the seed.

const (
	chatAdmins   = 5
	chatConvs    = 1000
	chatCapacity = 1000 // chat's largest capacity (WithCapacity's range)
)

var (
	chatScriptCmds = []string{"evalsha", "eval"}
	chatSeedCmds   = []string{"get", "scard", "sadd", "zadd", "expire", "lpush", "ltrim", "hgetall"}
	chatContent    = "Hello, how can I help?" // the seed's example message
)

// seed000Chat is seed 000's admin chat layout with its own commands:
// availability GET and SCARD to pick an admin, then SADD + ZADD + EXPIRE;
// LPUSH + LTRIM + EXPIRE and the queues' ZADDs per message; HGETALL of
// the dashboard hash. Its assignment is check-then-act (two round trips,
// racy across instances); each step is one pipeline (the seed uses MULTI,
// which would also refuse the cross-slot keys on a cluster).
type seed000Chat struct {
	rdb    redis.UniversalClient
	prefix string
}

func (s seed000Chat) admin(id, what string) string { return s.prefix + "admin:" + id + ":" + what }
func (s seed000Chat) messages(id string) string {
	return s.prefix + "chat:conversation:" + id + ":messages"
}
func (s seed000Chat) active() string             { return s.prefix + "chat:conversations:active" }
func (s seed000Chat) unread() string             { return s.prefix + "chat:conversations:unread" }
func (s seed000Chat) dashboard(id string) string { return s.prefix + "chat:admin:dashboard:" + id }

func (s seed000Chat) assign(ctx context.Context, conv string, capacity int64) error {
	pipe := s.rdb.Pipeline()
	pres := make([]*redis.StringCmd, chatAdmins)
	load := make([]*redis.IntCmd, chatAdmins)
	for i := range chatAdmins {
		id := strconv.Itoa(i + 1)
		pres[i] = pipe.Get(ctx, s.admin(id, "presence"))
		load[i] = pipe.SCard(ctx, s.admin(id, "assignments"))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return err
	}
	best := -1
	for i := range chatAdmins {
		if pres[i].Val() == "online" && load[i].Val() < capacity && (best < 0 || load[i].Val() < load[best].Val()) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	k := s.admin(strconv.Itoa(best+1), "assignments")
	pipe = s.rdb.Pipeline()
	pipe.SAdd(ctx, k, conv)
	pipe.ZAdd(ctx, s.active(), redis.Z{Score: float64(time.Now().UnixMilli()), Member: conv})
	pipe.Expire(ctx, k, time.Hour)
	_, err := pipe.Exec(ctx)
	return err
}

// message caches a message as the seed does and updates the queues
// (ZADD active, ZADD NX unread with weight + Date.now()).
func (s seed000Chat) message(ctx context.Context, conv string, id int64) error {
	now := time.Now()
	msg := `{"id":` + strconv.FormatInt(id, 10) + `,"content":"` + chatContent + `","sender_role":"user","timestamp":"` +
		now.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"}`
	pipe := s.rdb.Pipeline()
	pipe.LPush(ctx, s.messages(conv), msg)
	pipe.LTrim(ctx, s.messages(conv), 0, 99)
	pipe.Expire(ctx, s.messages(conv), time.Hour)
	pipe.ZAdd(ctx, s.active(), redis.Z{Score: float64(now.UnixMilli()), Member: conv})
	pipe.ZAddNX(ctx, s.unread(), redis.Z{Score: float64(10 + now.UnixMilli()), Member: conv})
	_, err := pipe.Exec(ctx)
	return err
}

func (s seed000Chat) setup(ctx context.Context) error {
	for i := range chatAdmins {
		id := strconv.Itoa(i + 1)
		if err := s.rdb.Set(ctx, s.admin(id, "presence"), "online", 30*time.Minute).Err(); err != nil {
			return err
		}
		if err := s.rdb.HSet(ctx, s.dashboard(id), "total_active", "45", "assigned_to_me", "12",
			"unread_count", "5", "avg_response_time", "4.2", "resolved_today", "3").Err(); err != nil {
			return err
		}
	}
	return nil
}

func chatNew(b *testing.B, e *benchutil.Env, opts ...chat.Option) *chat.Chat {
	c, err := chat.New(e.Client, append([]chat.Option{chat.WithNamespace(e.NS)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range chatAdmins {
		id := strconv.Itoa(i + 1)
		if err := c.AddAdmin(ctx, id, chatCapacity); err != nil {
			b.Fatal(err)
		}
		if err := c.Availability().Set(ctx, id, presence.Online); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

// chatRun runs op in parallel and reports round trips, ops/s and Redis
// CPU per op (µs of cmds).
func chatRun(b *testing.B, e *benchutil.Env, cmds []string, op func(ctx context.Context, i int64) error) {
	ctx := context.Background()
	var i atomic.Int64
	e.Warm(b)
	before := sensorUsec(ctx, e.Client, cmds)
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx, i.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	el := time.Since(start)
	b.StopTimer()
	e.ReportTrips(b)
	b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
	b.ReportMetric((sensorUsec(ctx, e.Client, cmds)-before)/float64(b.N), "redis-µs/op")
}

// chatPerDeployment is how many conversations a benchmark opens in one
// deployment (5 admins x chatCapacity hold 5000): every Open is an
// assignment, whatever b.N.
const chatPerDeployment = 4000

// BenchmarkChatAssign opens a conversation that goes to the least-loaded
// online admin. redschema: Open, one script that checks the roster,
// availability and loads and assigns atomically. seed000: GET and SCARD
// of each admin, then SADD + ZADD + EXPIRE (two round trips, racy).
// Every 4000 conversations go to a fresh deployment (its own tag or
// prefix, set up before the timer), so that admins always have room.
func BenchmarkChatAssign(b *testing.B) {
	b.Run("redschema", func(b *testing.B) {
		e := benchutil.New(b)
		var cs []*chat.Chat
		for d := range (b.N + chatPerDeployment - 1) / chatPerDeployment {
			cs = append(cs, chatNew(b, e, chat.WithTag(fmt.Sprint("d", d))))
		}
		chatRun(b, e, chatScriptCmds, func(ctx context.Context, i int64) error {
			_, err := cs[(i-1)/chatPerDeployment].Open(ctx, "c"+strconv.FormatInt(i, 10), chat.Normal)
			return err
		})
	})
	b.Run("seed000", func(b *testing.B) {
		e := benchutil.New(b)
		var ss []seed000Chat
		for d := range (b.N + chatPerDeployment - 1) / chatPerDeployment {
			s := seed000Chat{rdb: e.Client, prefix: e.NS.Prefix + fmt.Sprint("d", d, ":")}
			if err := s.setup(context.Background()); err != nil {
				b.Fatal(err)
			}
			ss = append(ss, s)
		}
		chatRun(b, e, chatSeedCmds, func(ctx context.Context, i int64) error {
			return ss[(i-1)/chatPerDeployment].assign(ctx, "c"+strconv.FormatInt(i, 10), chatCapacity)
		})
	})
}

// BenchmarkChatAppend caches a user message in one of 1000 open
// conversations. redschema: Append, one script (LPUSH, LTRIM, TTL,
// activity, unread state, event). seed000: LPUSH + LTRIM + EXPIRE +
// ZADD active + ZADD NX unread in one pipeline.
func BenchmarkChatAppend(b *testing.B) {
	b.Run("redschema", func(b *testing.B) {
		e := benchutil.New(b)
		c := chatNew(b, e)
		ctx := context.Background()
		for i := range chatConvs {
			if _, err := c.Open(ctx, "c"+strconv.Itoa(i), chat.Normal); err != nil {
				b.Fatal(err)
			}
		}
		chatRun(b, e, chatScriptCmds, func(ctx context.Context, i int64) error {
			_, err := c.Append(ctx, "c"+strconv.FormatInt(i%chatConvs, 10), chat.Message{Content: chatContent, SenderRole: chat.User})
			return err
		})
	})
	b.Run("seed000", func(b *testing.B) {
		e := benchutil.New(b)
		s := seed000Chat{rdb: e.Client, prefix: e.NS.Prefix}
		chatRun(b, e, chatSeedCmds, func(ctx context.Context, i int64) error {
			return s.message(ctx, "c"+strconv.FormatInt(i%chatConvs, 10), i)
		})
	})
}

// BenchmarkChatDashboard reads one of 5 admins' dashboards. redschema:
// Dashboard served from the cache (one script that finds the hash), and
// "recompute" with a 1 ms cache (nearly every call computes it from 1000
// conversations in the script). seed000: HGETALL.
func BenchmarkChatDashboard(b *testing.B) {
	for _, v := range []struct {
		name string
		ttl  time.Duration
	}{{"redschema", 5 * time.Minute /* WithDashboardTTL's default */}, {"redschema-recompute", time.Millisecond}} {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			c := chatNew(b, e, chat.WithDashboardTTL(v.ttl))
			ctx := context.Background()
			for i := range chatConvs {
				if _, err := c.Open(ctx, "c"+strconv.Itoa(i), chat.Normal); err != nil {
					b.Fatal(err)
				}
			}
			chatRun(b, e, chatScriptCmds, func(ctx context.Context, i int64) error {
				_, err := c.Dashboard(ctx, strconv.FormatInt(i%chatAdmins+1, 10))
				return err
			})
		})
	}
	b.Run("seed000", func(b *testing.B) {
		e := benchutil.New(b)
		s := seed000Chat{rdb: e.Client, prefix: e.NS.Prefix}
		if err := s.setup(context.Background()); err != nil {
			b.Fatal(err)
		}
		chatRun(b, e, chatSeedCmds, func(ctx context.Context, i int64) error {
			return s.rdb.HGetAll(ctx, s.dashboard(strconv.FormatInt(i%chatAdmins+1, 10))).Err()
		})
	})
}

const (
	chatMemConvs    = 200
	chatMemMessages = 100
)

var (
	chatMemOnce sync.Once
	chatMem     map[string]float64
	chatMemErr  error
)

// measureChatMemory opens 200 conversations over 5 admins, caches 100
// messages in each (admins and users alternating, the last one a user's:
// every conversation unread), and returns Redis bytes per conversation
// for each layout: every key under its prefix (admin availability, states,
// queues, sets, message lists, dashboards' absence alike; for redschema
// also the roster and cursor, and the request memos while they live,
// ReplayWindow after a conversation's last request, then without them).
func measureChatMemory(b *testing.B) (map[string]float64, error) {
	chatMemOnce.Do(func() {
		chatMem = map[string]float64{}
		chatMemErr = fillChatMemory(b)
	})
	return chatMem, chatMemErr
}

func fillChatMemory(b *testing.B) error {
	e := benchutil.New(b)
	ctx := context.Background()
	per := func(prefix string) (float64, error) {
		n, _, err := benchutil.MemoryUnder(ctx, e.Client, prefix)
		return float64(n) / chatMemConvs, err
	}
	var err error
	// The seed's layout.
	seedNS := e.NS.Sub("seed000:")
	s := seed000Chat{rdb: e.Client, prefix: seedNS.Prefix}
	if err := s.setup(ctx); err != nil {
		return err
	}
	for i := range chatAdmins { // one DEL each: the seed's keys spread over a cluster
		if err := e.Client.Del(ctx, s.dashboard(strconv.Itoa(i+1))).Err(); err != nil {
			return err
		}
	}
	for i := range chatMemConvs {
		conv := strconv.Itoa(1000 + i)
		if err := s.assign(ctx, conv, 100); err != nil {
			return err
		}
		for m := int64(1); m <= chatMemMessages; m++ {
			if err := s.message(ctx, conv, m); err != nil {
				return err
			}
		}
	}
	if chatMem["seed000"], err = per(seedNS.Prefix); err != nil {
		return err
	}
	// redschema.
	sub := *e
	sub.NS = e.NS.Sub("redschema:")
	c := chatNew(b, &sub)
	reg, err := keys.Compose(chat.Schema())
	if err != nil {
		return err
	}
	replay, ok := reg.Lookup("chat:{tag}:conversation:{id}:requests")
	if !ok {
		return fmt.Errorf("request memo pattern not registered")
	}
	var replays []string
	for i := range chatMemConvs {
		conv := strconv.Itoa(1000 + i)
		if _, err := c.Open(ctx, conv, chat.Normal); err != nil {
			return err
		}
		for m := range chatMemMessages {
			role := chat.Admin
			if m%2 == 1 {
				role = chat.User
			}
			if _, err := c.Append(ctx, conv, chat.Message{Content: chatContent, SenderRole: role}); err != nil {
				return err
			}
		}
		k, err := replay.Key(sub.NS, "main" /* WithTag's default */, conv)
		if err != nil {
			return err
		}
		replays = append(replays, k)
	}
	if chatMem["redschema"], err = per(sub.NS.Prefix); err != nil {
		return err
	}
	for _, k := range replays {
		if err := e.Client.Del(ctx, k).Err(); err != nil {
			return err
		}
	}
	chatMem["redschema-no-replay"], err = per(sub.NS.Prefix)
	return err
}

// BenchmarkChatMemory reports Redis bytes per conversation with 100
// cached messages (B/conv) and the ratio to seed 000's layout (x-seed).
// The timed loop is empty; the numbers are the metrics.
func BenchmarkChatMemory(b *testing.B) {
	for _, name := range []string{"seed000", "redschema", "redschema-no-replay"} {
		b.Run(name, func(b *testing.B) {
			m, err := measureChatMemory(b)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
			}
			b.ReportMetric(m[name], "B/conv")
			b.ReportMetric(m[name]/m["seed000"], "x-seed")
		})
	}
}
