// Package demo fills a Redis with a small, known data set through the
// packages' public APIs, for the dashboard's tests (the handler tests and
// the browser tests of dashboard/browsertest) and its screenshots.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/sensor"
	"github.com/redschema/redschema/session"
)

// What Fill writes, for the tests to expect.
const (
	Queue     = "emails"
	User      = "u-42"
	DeadError = "smtp: 550 mailbox unavailable"

	ReadyHigh, ReadyNormal, ReadyLow = 2, 3, 1
	Scheduled, InFlight, Dead        = 1, 1, 2
	Processed, Failed                = 1, 2
	Sessions                         = 2

	// Rate limits: Limiter allows LimitPerMinute a minute; LimitedID
	// used Used of them; BlockedID is blocked for an hour; APIKey has a
	// runtime config of KeyPerMinute a minute.
	LimitPerMinute = 10
	Used           = 3
	LimitedID      = "ada"
	BlockedID      = "203.0.113.9"
	APIKey         = "key-1"
	KeyPerMinute   = 100
)

// Limiter is the demo application's limiter: a fixed window of
// LimitPerMinute a minute, with runtime config.
func Limiter(c redis.UniversalClient, ns keys.Namespace) (*ratelimit.Limiter, error) {
	return ratelimit.New(c, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(LimitPerMinute)}},
		ratelimit.WithNamespace(ns), ratelimit.WithRuntimeConfig())
}

// DeadIDs are the dead letters' job IDs.
var DeadIDs = []string{"welcome-ada", "digest-bob"}

// Mail is the demo queue's payload.
type Mail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Fill writes the demo data under ns: the queue (two dead letters, one
// processed job, one in flight, six ready jobs by priority, one
// scheduled), the user (a login record and two sessions) and the rate
// limits (a used identifier, a block, an API key's config).
func Fill(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	q, err := queue.New[Mail](c, Queue, queue.WithNamespace(ns), queue.WithLease(10*time.Minute))
	if err != nil {
		return err
	}
	enq := func(id, to string, opts ...queue.EnqueueOption) error {
		_, err := q.Enqueue(ctx, Mail{To: to, Subject: "hello " + to}, append(opts, queue.WithID(id))...)
		return err
	}
	take := func(want string) (*queue.Job[Mail], error) {
		j, err := q.TryDequeue(ctx)
		if err != nil {
			return nil, err
		}
		if j.ID != want {
			return nil, fmt.Errorf("demo: dequeued %q, want %q", j.ID, want)
		}
		return j, nil
	}
	for _, id := range DeadIDs {
		if err := enq(id, id+"@example.com", queue.WithPriority(queue.High), queue.WithJobMaxRetries(0)); err != nil {
			return err
		}
		j, err := take(id)
		if err != nil {
			return err
		}
		if dead, err := q.Nack(ctx, j, errors.New(DeadError)); err != nil || !dead {
			return fmt.Errorf("demo: nack %s: dead %v, %v", id, dead, err)
		}
	}
	if err := enq("receipt-1", "carol@example.com", queue.WithPriority(queue.High)); err != nil {
		return err
	}
	j, err := take("receipt-1")
	if err != nil {
		return err
	}
	if err := q.Ack(ctx, j); err != nil {
		return err
	}
	if err := enq("report-1", "dave@example.com", queue.WithPriority(queue.High)); err != nil {
		return err
	}
	if _, err := take("report-1"); err != nil {
		return err
	}
	ready := []struct {
		p queue.Priority
		n int
	}{{queue.High, ReadyHigh}, {queue.Normal, ReadyNormal}, {queue.Low, ReadyLow}}
	for _, r := range ready {
		for i := 1; i <= r.n; i++ {
			if err := enq(fmt.Sprintf("%s-%d", r.p, i), fmt.Sprintf("user%d@example.com", i), queue.WithPriority(r.p)); err != nil {
				return err
			}
		}
	}
	if err := enq("newsletter", "all@example.com", queue.WithDelay(time.Hour)); err != nil {
		return err
	}

	users, err := session.NewUsers(c, session.WithNamespace(ns))
	if err != nil {
		return err
	}
	if _, err := users.Login(ctx, User, session.LoginInfo{DeviceID: "laptop-1", IPAddress: "10.0.0.7"}); err != nil {
		return err
	}
	store, err := session.New(c, session.WithNamespace(ns))
	if err != nil {
		return err
	}
	for _, ua := range []string{"Firefox/133", "curl/8.5"} {
		if _, _, err := store.Create(ctx, session.Info{UserID: User, Email: "ada@example.com", IPAddress: "10.0.0.7", UserAgent: ua}); err != nil {
			return err
		}
	}

	lim, err := Limiter(c, ns)
	if err != nil {
		return err
	}
	if _, err := lim.AllowN(ctx, LimitedID, Used); err != nil {
		return err
	}
	if err := lim.Block(ctx, BlockedID, time.Hour); err != nil {
		return err
	}
	if err := lim.SetConfig(ctx, APIKey, ratelimit.Config{PerMinute: KeyPerMinute}); err != nil {
		return err
	}
	if err := fillPresenceChat(ctx, c, ns); err != nil {
		return err
	}
	if err := fillLocks(ctx, c, ns); err != nil {
		return err
	}
	if err := fillSensors(ctx, c, ns); err != nil {
		return err
	}
	if err := fillMemory(ctx, c, ns); err != nil {
		return err
	}
	if err := fillCache(ctx, c, ns); err != nil {
		return err
	}
	return fillMetrics(ctx, c, ns)
}

// Payload is a demo payload as JSON, for comparisons.
func Payload(to string) string {
	b, _ := json.Marshal(Mail{To: to, Subject: "hello " + to})
	return string(b)
}

// Presence and chat: User is online on Devices; Admin (capacity
// AdminCapacity) is online and OffAdmin is not; Conversations are opened
// with their priorities, and each gets a user message.
var (
	Devices       = []string{"web", "mobile"}
	Conversations = []struct {
		ID       string
		Priority chat.Priority
	}{{"conv-urgent", chat.Urgent}, {"conv-high", chat.High}, {"conv-normal", chat.Normal}, {"conv-low", chat.Low}}
)

// Support admins.
const (
	Admin, OffAdmin = "alice", "bob"
	AdminCapacity   = 2
)

func fillPresenceChat(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	tr, err := presence.New(c, presence.WithNamespace(ns))
	if err != nil {
		return err
	}
	for i, d := range Devices {
		if _, err := tr.Connect(ctx, User, presence.Conn{ID: fmt.Sprintf("conn-%d", i+1), Metadata: presence.Metadata{Device: d}}); err != nil {
			return err
		}
	}
	ch, err := chat.New(c, chat.WithNamespace(ns))
	if err != nil {
		return err
	}
	if err := ch.AddAdmin(ctx, Admin, AdminCapacity); err != nil {
		return err
	}
	if err := ch.AddAdmin(ctx, OffAdmin, 5); err != nil {
		return err
	}
	if err := ch.Availability().Set(ctx, Admin, presence.Online); err != nil {
		return err
	}
	for _, conv := range Conversations {
		if _, err := ch.Open(ctx, conv.ID, conv.Priority); err != nil {
			return err
		}
		if _, err := ch.Append(ctx, conv.ID, chat.Message{Content: "help with " + conv.ID, SenderRole: chat.User, SenderID: User}); err != nil {
			return err
		}
	}
	return nil
}

// Locks: Worker holds a file lock on LockedFile and SemPermits permits of
// the "gpu"/"pool" semaphore; the interval job Job ran once.
const (
	Worker     = "worker-1"
	LockedFile = "invoice-7.pdf"
	SemPermits = 2
	Job        = "token-cleanup"
	JobEvery   = time.Hour
)

func fillLocks(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	lc, err := lock.New(c, lock.WithNamespace(ns), lock.WithOwner(Worker))
	if err != nil {
		return err
	}
	if _, err := lc.TryAcquire(ctx, lock.File, LockedFile, time.Minute); err != nil {
		return err
	}
	sem, err := lc.Semaphore("gpu", "pool", 4)
	if err != nil {
		return err
	}
	for i := 0; i < SemPermits; i++ {
		if _, err := sem.TryAcquire(ctx, 5*time.Minute); err != nil {
			return err
		}
	}
	iv, err := lc.Interval(Job, JobEvery, 0)
	if err != nil {
		return err
	}
	_, err = iv.Do(ctx, func(context.Context) error { return nil })
	return err
}

// Sensors: Location has Readings temperature readings, one every half
// hour up to now, of 20 + i/2 °C.
const (
	Location = "study"
	Readings = 12
)

func fillSensors(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	sc, err := sensor.New(c, sensor.WithNamespace(ns))
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Minute)
	var rs []sensor.Reading
	for i := 0; i < Readings; i++ {
		at := now.Add(-time.Duration(Readings-1-i) * 30 * time.Minute)
		rs = append(rs, sensor.TemperatureReading(Location, 20+float64(i)/2, "°C", at))
	}
	_, err = sc.IngestBatch(ctx, rs)
	return err
}

// AI memory: User's conversation Conv holds ConvMessages messages
// counting ConvTokens tokens.
const (
	Conv         = "conv-ai-1"
	ConvMessages = 3
	ConvTokens   = 10 + 20 + 30
)

func fillMemory(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	m, err := aimemory.New(c, aimemory.WithNamespace(ns))
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = m.Append(ctx, User, Conv, []aimemory.Message{
		{Role: aimemory.System, Content: "You are a helpful assistant.", Tokens: 10},
		{Role: aimemory.User, Content: "Which files did I upload today?", Tokens: 20},
		{Role: aimemory.Assistant, Content: "Two: invoice-7.pdf and report.docx.", Tokens: 30},
	})
	return err
}

// Cache: CachedEndpoint has two entries read three times each (two hits
// each), tagged CacheTag and "user:"+User.
const (
	CachedEndpoint = "/api/files"
	CacheTag       = "files"
	CacheEntries   = 2
	CacheHits      = 4
)

func fillCache(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	st, err := cache.NewStore(c, cache.APILayout(), cache.WithNamespace(ns))
	if err != nil {
		return err
	}
	load := func(context.Context) ([]byte, error) { return []byte(`{"files":["invoice-7.pdf"]}`), nil }
	for _, p := range []string{"p1", "p2"} {
		ref, err := st.Ref(CachedEndpoint, "GET", p)
		if err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			if _, err := st.Fetch(ctx, ref, load, cache.WithTags(CacheTag, "user:"+User)); err != nil {
				return err
			}
		}
	}
	return st.Close() // flushes the hit counts
}

// Metrics: Requests requests to "GET /api/files", Errors of them 500s,
// with latencies of 5, 15, 40 ... ms.
const (
	Requests = 10
	Errors   = 2
)

func fillMetrics(ctx context.Context, c redis.UniversalClient, ns keys.Namespace) error {
	rec, err := metrics.New(c, metrics.WithNamespace(ns), metrics.WithoutFlusher())
	if err != nil {
		return err
	}
	if err := rec.Declare(metrics.CommonMetrics()...); err != nil {
		return err
	}
	for i := 0; i < Requests; i++ {
		status := 200
		if i < Errors {
			status = 500
		}
		d := time.Duration(5+i*i*4) * time.Millisecond
		// Record counts api_requests_total and api_latency_ms too.
		rec.HTTP().Record(metrics.Request{Method: "GET", Route: CachedEndpoint, Status: status, Duration: d})
	}
	return rec.Close(ctx)
}
