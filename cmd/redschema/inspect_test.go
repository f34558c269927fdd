package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/sensor"
	"github.com/redschema/redschema/session"
)

// backendURL is -url for the test's backend.
func backendURL(e *harness.Env) string {
	if e.Backend == harness.Cluster {
		return os.Getenv("REDIS_CLUSTER_ADDRS")
	}
	return "redis://" + e.Addr
}

// Every key pattern of every package has a decoder, so inspect never
// falls back to "no decoder" for a key the library writes. Channels have
// none: they hold no value.
func TestEveryPatternHasADecoder(t *testing.T) {
	for _, tp := range library().Templates() {
		if tp.IsChannel() {
			continue
		}
		assert.NotNil(t, library().Decoder(tp), "%s: %s has no decoder (add it to %s/inspect.go)", tp.Pattern().Owner, tp, tp.Pattern().Owner)
	}
}

type job struct {
	WorkflowID string `json:"workflow_id"`
}

// seedUntaggedChat writes every key of chat.WithoutTag (the
// home-automation backend's support chat, no tag segment) under e.NS's
// prefix without hash tags.
func seedUntaggedChat(t *testing.T, e *harness.Env) {
	ctx := e.Ctx()
	ns := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
	ch, err := chat.New(e.Client, chat.WithNamespace(ns), chat.WithoutTag(), chat.WithMessageCache(100), chat.WithCapacity(1))
	require.NoError(t, err)
	require.NoError(t, ch.AddAdmin(ctx, "321", 0))
	require.NoError(t, ch.Availability().Set(ctx, "321", presence.Online))
	_, err = ch.Open(ctx, "654", chat.High)
	require.NoError(t, err)
	_, err = ch.Open(ctx, "655", chat.Normal) // over capacity: the backlog
	require.NoError(t, err)
	_, err = ch.Append(ctx, "654", chat.Message{Content: "hello", SenderRole: chat.User, SenderID: "u1"})
	require.NoError(t, err)
	_, err = ch.Append(ctx, "654", chat.Message{Content: "hi", SenderRole: chat.Admin, SenderID: "321"})
	require.NoError(t, err)
	_, err = ch.Append(ctx, "654", chat.Message{Content: "thanks", SenderRole: chat.User, SenderID: "u1"}) // unread
	require.NoError(t, err)
	_, err = ch.Dashboard(ctx, "321")
	require.NoError(t, err)
}

// seedEveryPackage writes keys through each package's public API under
// e.NS, as an application would.
func seedEveryPackage(t *testing.T, e *harness.Env) {
	ctx, c, nsOpt := e.Ctx(), e.Client, e.NS

	store, err := session.New(c, session.WithNamespace(nsOpt), session.WithEvents(100)) // events, due
	require.NoError(t, err)
	sess, tok, err := store.Create(ctx, session.Info{UserID: "42", Email: "admin@example.com"})
	require.NoError(t, err)
	_, err = store.RotateRefresh(ctx, "42", sess.ID, tok.Refresh) // rotation
	require.NoError(t, err)
	_, err = store.RevokeToken(ctx, "jti-1", e.Now().Add(time.Hour))
	require.NoError(t, err)
	users, err := session.NewUsers(c, session.WithNamespace(nsOpt))
	require.NoError(t, err)
	_, err = users.Login(ctx, "42", session.LoginInfo{DeviceID: "d1"})
	require.NoError(t, err)
	require.NoError(t, users.Block(ctx, "43"))

	tr, err := presence.New(c, presence.WithNamespace(nsOpt))
	require.NoError(t, err)
	_, err = tr.Connect(ctx, "7", presence.Conn{ID: "conn-1", Metadata: presence.Metadata{Device: "web"}})
	require.NoError(t, err)
	require.NoError(t, tr.Availability().Set(ctx, "9", presence.Away))
	// Indicators that outlive a slow seeding run (the default is 3 s).
	long := presence.DetailedProfile()
	long.TypingTTL, long.TypingThrottle = time.Minute, 30*time.Second
	tyTr, err := presence.New(c, presence.WithNamespace(nsOpt), presence.WithProfile(long))
	require.NoError(t, err)
	ty := tyTr.Typing()
	_, err = ty.Start(ctx, "conv-1", "7", "ann")
	require.NoError(t, err)
	_, err = ty.Start(ctx, "conv-2", "7", "ann")
	require.NoError(t, err)
	_, err = ty.Stop(ctx, "conv-2", "7")
	require.NoError(t, err)
	// With other writers (the seeds' services), the typing helper keys
	// live under typers: (throttle, request memo).
	shared, err := presence.New(c, presence.WithNamespace(nsOpt), presence.WithProfile(long), presence.WithOtherWriters())
	require.NoError(t, err)
	_, err = shared.Typing().Start(ctx, "conv-3", "7", "ann")
	require.NoError(t, err)
	_, err = shared.Typing().Stop(ctx, "conv-4", "7")
	require.NoError(t, err)
	rooms, err := presence.NewChannels[map[string]string](c, presence.WithNamespace(nsOpt))
	require.NoError(t, err)
	_, err = rooms.Join(ctx, "room-1", "7", "conn-1", map[string]string{"name": "ann"})
	require.NoError(t, err)

	lim, err := ratelimit.New(c, ratelimit.Policy{
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(10)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(10)},
	}, ratelimit.WithNamespace(nsOpt), ratelimit.WithRuntimeConfig())
	require.NoError(t, err)
	_, err = lim.Allow(ctx, "api-1")
	require.NoError(t, err)
	require.NoError(t, lim.SetConfig(ctx, "api-1", ratelimit.Config{PerDay: 5}))
	require.NoError(t, lim.Block(ctx, "bad", time.Minute))
	lim3, err := ratelimit.New(c, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(10)},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerHour(100)},
	}, ratelimit.WithNamespace(nsOpt))
	require.NoError(t, err)
	_, err = lim3.Allow(ctx, "api-4")
	require.NoError(t, err)
	lim2, err := ratelimit.New(c, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(10)},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerHour(100)},
	}, ratelimit.WithNamespace(nsOpt), ratelimit.WithEndpoint("/v1/chat"))
	require.NoError(t, err)
	_, err = lim2.Allow(ctx, "api-2")
	require.NoError(t, err)
	// Auto-block counts refusals, a refund leaves its replay marker, and
	// degraded mode announces the instance.
	lim4, err := ratelimit.New(c, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(1)}},
		ratelimit.WithNamespace(nsOpt), ratelimit.WithAutoBlock(5, time.Minute, time.Minute), ratelimit.WithDegradedMode(nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim4.Close() })
	for range 2 {
		_, err = lim4.Allow(ctx, "api-5")
		require.NoError(t, err)
	}
	require.NoError(t, lim4.Refund(ctx, "api-5", 1))
	harness.WaitFor(t, "the limiter's instance announced", func() bool {
		n := 0
		for _, k := range e.Keys() {
			if strings.Contains(k, "ratelimit:instances") {
				n++
			}
		}
		return n > 0
	})
	for _, o := range [][]ratelimit.Option{{ratelimit.WithRateLimitKey()}, {ratelimit.WithWindowlessLogKey()}, {ratelimit.WithEndpoint("/v1/files")},
		{ratelimit.WithEndpoint("/v1/files"), ratelimit.WithWindowlessLogKey()}} {
		l, err := ratelimit.New(c, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(10)}}, append(o, ratelimit.WithNamespace(nsOpt))...)
		require.NoError(t, err)
		_, err = l.Allow(ctx, "api-3")
		require.NoError(t, err)
	}

	locks, err := lock.New(c, lock.WithNamespace(nsOpt))
	require.NoError(t, err)
	for _, typ := range []string{lock.File, lock.Workflow, lock.UserSession, lock.Cache} {
		_, err = locks.Acquire(ctx, typ, "a.pdf", time.Minute)
		require.NoError(t, err)
	}
	rw, err := locks.RWMutex("doc", "a.pdf") // a reader: lock:readers
	require.NoError(t, err)
	_, err = rw.TryRLock(ctx, time.Minute)
	require.NoError(t, err)
	rw2, err := locks.RWMutex("doc", "b.pdf") // a writer: lock:rw
	require.NoError(t, err)
	_, err = rw2.TryLock(ctx, time.Minute)
	require.NoError(t, err)
	sem, err := locks.Semaphore("gpu", "node-1", 2)
	require.NoError(t, err)
	_, err = sem.TryAcquire(ctx, time.Minute)
	require.NoError(t, err)
	iv, err := locks.Interval("reminder", time.Hour, 0)
	require.NoError(t, err)
	_, err = iv.Do(ctx, func(context.Context) error { return nil })
	require.NoError(t, err)

	q, err := queue.New[job](c, "n8n", queue.WithNamespace(nsOpt), queue.WithRetention(time.Hour), queue.WithEvents(1000))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, job{WorkflowID: "nightly"}, queue.WithID("e1"))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, job{WorkflowID: "broken"}, queue.WithID("e2"), queue.WithJobMaxRetries(0), queue.WithPriority(queue.High))
	require.NoError(t, err)
	j, err := q.Dequeue(ctx) // e2: high priority first
	require.NoError(t, err)
	_, err = q.Nack(ctx, j, errors.New("workflow not found"))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, job{WorkflowID: "leased"}, queue.WithID("e3"), queue.WithUnique(time.Minute))
	require.NoError(t, err)
	j1, err := q.Dequeue(ctx) // e1 stays leased: state and active
	require.NoError(t, err)
	require.NoError(t, j1.SetProgress(ctx, map[string]int{"step": 2})) // progress
	// e1 stays leased, flagged: cancel
	_, err = q.Cancel(ctx, "e1")
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, job{WorkflowID: "done"}, queue.WithID("e4"), queue.WithPriority(queue.High),
		queue.WithTimeout(time.Minute), queue.WithHeaders(map[string]string{"traceparent": "00-1-2-01"}))
	require.NoError(t, err)
	j4, err := q.Dequeue(ctx) // e4 (high) is acked with a result: done and done_at
	require.NoError(t, err)
	require.NoError(t, j4.SetResult("ok"))
	require.NoError(t, q.Ack(ctx, j4))
	// e5 (high) failed once and waits for its retry: errors
	_, err = q.Enqueue(ctx, job{WorkflowID: "flaky"}, queue.WithID("e5"), queue.WithPriority(queue.High), queue.WithJobMaxRetries(3))
	require.NoError(t, err)
	j5, err := q.Dequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, "e5", j5.ID)
	_, err = q.Nack(ctx, j5, errors.New("upstream timeout"))
	require.NoError(t, err)
	_, err = q.Schedule(ctx, "hourly", "@every 1h", job{WorkflowID: "report"}, time.UTC, queue.Skip)
	require.NoError(t, err)
	// limits: the queue's rate window, a group's leases and rate window
	// (t1's group is served before the ungrouped e3: round-robin by name)
	lq, err := queue.New[job](c, "n8n", queue.WithNamespace(nsOpt), queue.WithRateLimit(100, time.Hour),
		queue.WithGroupLimits(queue.GroupLimit{Concurrency: 2, Rate: queue.Rate{N: 10, Per: time.Hour}}))
	require.NoError(t, err)
	_, err = lq.Enqueue(ctx, job{WorkflowID: "tenant job"}, queue.WithID("t1"), queue.WithGroup("tenant-42"))
	require.NoError(t, err)
	_, err = lq.Dequeue(ctx)
	require.NoError(t, err)
	// a flow whose parent waits for its child: the flows hash
	_, _, err = q.EnqueueFlow(ctx, queue.Item[job]{Payload: job{WorkflowID: "report"}, Options: []queue.EnqueueOption{queue.WithID("fp")}},
		[]queue.Item[job]{{Payload: job{WorkflowID: "part"}, Options: []queue.EnqueueOption{queue.WithID("fc")}}}, queue.FailParent)
	require.NoError(t, err)

	files, err := cache.New[[]string](c, cache.WithNamespace(nsOpt))
	require.NoError(t, err)
	_, err = files.Get(ctx, cache.NewKey("/api/v1/files", "GET", url.Values{"page": {"1"}}),
		func(context.Context) ([]string, error) { return []string{"a.pdf"}, nil }, cache.WithTags("files", "user:42"))
	require.NoError(t, err)
	_, err = files.InvalidateTag(ctx, "reports")
	require.NoError(t, err)
	_, err = files.InvalidateTag(ctx, "user:43")
	require.NoError(t, err)

	rec, err := metrics.New(c, metrics.WithNamespace(nsOpt))
	require.NoError(t, err)
	defer func() { _ = rec.Close(ctx) }()
	jobs, err := rec.Counter("jobs_total", "queue")
	require.NoError(t, err)
	jobs.Inc("n8n")
	workers, err := rec.Gauge("workers", metrics.Sum, "pool")
	require.NoError(t, err)
	workers.Add(3, "gpu")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users/{id}", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("POST /api/login", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	for _, r := range []*http.Request{httptest.NewRequest("GET", "/api/users/1", nil), httptest.NewRequest("POST", "/api/login", nil)} {
		r.RemoteAddr = "192.0.2.1:1234"
		metrics.Middleware(rec)(mux).ServeHTTP(httptest.NewRecorder(), r)
	}
	require.NoError(t, rec.Flush(ctx))

	ch, err := chat.New(c, chat.WithNamespace(nsOpt), chat.WithTag("support"), chat.WithMessageCache(100))
	require.NoError(t, err)
	require.NoError(t, ch.AddAdmin(ctx, "123", 10))
	require.NoError(t, ch.Availability().Set(ctx, "123", presence.Online))
	_, err = ch.Open(ctx, "456", chat.High)
	require.NoError(t, err)
	_, err = ch.Append(ctx, "456", chat.Message{Content: "My heater is off", SenderRole: chat.User, SenderID: "u1"})
	require.NoError(t, err)
	_, err = ch.Open(ctx, "457", chat.Normal)
	require.NoError(t, err)
	_, err = ch.Assign(ctx, "457", "123")
	require.NoError(t, err)
	_, err = ch.Resolve(ctx, "457")
	require.NoError(t, err)
	_, err = ch.Dashboard(ctx, "123")
	require.NoError(t, err)
	sales, err := chat.New(c, chat.WithNamespace(nsOpt), chat.WithTag("sales"))
	require.NoError(t, err)
	_, err = sales.Open(ctx, "458", chat.Low) // no admin: the backlog
	require.NoError(t, err)
	if e.Backend != harness.Cluster { // WithoutTag: the home-automation backend's own keys, standalone only
		seedUntaggedChat(t, e)
	}

	sensors, err := sensor.New(c, sensor.WithNamespace(nsOpt))
	require.NoError(t, err)
	now := e.Now()
	_, err = sensors.IngestBatch(ctx, []sensor.Reading{
		sensor.MotionReading("study", "binary_sensor.motion_study", true, 42, now.Add(-time.Minute)),
		sensor.TemperatureReading("living_room", 22.5, "°C", now.Add(-time.Minute)),
		sensor.GenericReading("pressure", "kitchen", 1013.25, "hPa", now),
	})
	require.NoError(t, err)
	compact, err := sensor.New(c, sensor.WithNamespace(nsOpt), sensor.WithCompactEncoding())
	require.NoError(t, err)
	_, err = compact.Ingest(ctx, sensor.GenericReading("humidity", "cellar", 71, "%", now))
	require.NoError(t, err)

	mem, err := aimemory.New(c, aimemory.WithNamespace(nsOpt))
	require.NoError(t, err)
	defer mem.Close()
	_, err = mem.Append(ctx, "u42", "conv-1", []aimemory.Message{{Role: aimemory.User, Content: "What is Redis?", Tokens: 4}})
	require.NoError(t, err)
	_, err = mem.AddTopics(ctx, "u42", "redis")
	require.NoError(t, err)
	_, err = mem.RAG(ctx, aimemory.Query{Text: "redis"}, func(context.Context) ([]json.RawMessage, error) {
		return []json.RawMessage{json.RawMessage(`{"doc":"redis.md"}`)}, nil
	})
	require.NoError(t, err)
	_, err = mem.Response(ctx, aimemory.Request{Model: "m1", Messages: []aimemory.Message{{Role: aimemory.User, Content: "hi", Tokens: 1}}},
		func(context.Context) (string, error) { return "hello", nil })
	require.NoError(t, err)
}

// inspect decodes a key of every package, written through its public API,
// as the package reads it.
func TestInspectEveryPackage(t *testing.T) {
	e := harness.New(t)
	seedEveryPackage(t, e)
	ks := e.Keys()
	sort.Strings(ks)
	// chat.WithoutTag's keys (the home-automation backend's) are read
	// without hash tags, as the application writes them.
	var tagged, untagged []string
	for _, k := range ks {
		if _, _, ok := library().Match(e.NS, k); ok {
			tagged = append(tagged, k)
		} else {
			untagged = append(untagged, k)
		}
	}
	var got []inspection
	for _, part := range []struct {
		keys  []string
		flags []string
	}{{tagged, nil}, {untagged, []string{"-no-tags"}}} {
		if len(part.keys) == 0 {
			continue
		}
		var out bytes.Buffer
		args := append(append([]string{"inspect", "-json", "-url", backendURL(e), "-prefix", e.NS.Prefix}, part.flags...), part.keys...)
		code, err := run(context.Background(), args, &out)
		require.NoError(t, err)
		require.Equal(t, 0, code)
		var some []inspection
		require.NoError(t, json.Unmarshal(out.Bytes(), &some))
		got = append(got, some...)
	}
	require.Len(t, got, len(ks))

	covered := map[string]inspection{}
	owners := map[string]bool{}
	for _, in := range got {
		assert.Empty(t, in.Error, in.Key)
		assert.NotNil(t, in.Value, in.Key)
		if _, ok := covered[in.Pattern]; !ok { // the tagged keys' first
			covered[in.Pattern] = in
		}
		owners[in.Owner] = true
	}
	for _, p := range []string{"session", "presence", "ratelimit", "lock", "queue", "cache", "metrics", "chat", "sensor", "aimemory"} {
		assert.True(t, owners[p], "no %s key inspected", p)
	}
	// What the decoders say about a few keys: the package's view, not
	// the stored bytes.
	value := func(pattern string) string {
		in, ok := covered[pattern]
		require.True(t, ok, "no %s key among %q", pattern, ks)
		b, err := json.Marshal(in.Value)
		require.NoError(t, err)
		return string(b)
	}
	assert.Contains(t, value("session:events:{slot}"), `"Kind":"created"`)
	assert.Contains(t, value("session:due:{slot}"), `"user_id":"42"`)
	assert.Contains(t, value("session:rotation:{user_id}:{session_id}"), `"retry_answerable":true`)
	sess := value("session:user:{user_id}:{session_id}")
	assert.Contains(t, sess, `"Email":"admin@example.com"`)
	assert.NotContains(t, sess, `"ExpiresAt":"0001`)
	assert.NotContains(t, sess, "refresh_token", "refresh-token digests are never shown")
	assert.Contains(t, value("user:{user_id}"), `"Status":"`)
	assert.Contains(t, value("presence:{user_id}"), `"Status":"online"`)
	assert.Contains(t, value("connections:{user_id}"), `"ID":"conn-1"`)
	assert.Contains(t, value("admin:{admin_id}:presence"), `"status":"away"`)
	assert.Contains(t, value("typing:{conversation_id}:{user_id}"), `"Username":"ann"`)
	assert.Contains(t, value("ratelimit:config:{api_key_id}"), `"per_day":5`)
	assert.Contains(t, value("lock:file:{file_id}"), `"owner_id":`)
	assert.Contains(t, value("cron:last-run:{job_name}"), `"job":"reminder"`)
	assert.Contains(t, value("lock:sem:{resource_type}:{resource_id}"), `"permit_expires_at"`)
	assert.Contains(t, value("queue:{queue_name}:jobs"), `"payload":{"workflow_id":"leased"}`)
	assert.Contains(t, value("queue:dlq:{queue_name}"), `"error":"workflow not found"`)
	assert.Contains(t, value("queue:{queue_name}:active"), `"job_id":"e1"`)
	assert.Contains(t, value("queue:stats:{queue_name}"), `"total_dead":1`)
	assert.Contains(t, value("queue:{queue_name}:progress"), `"progress":{"step":2}`)
	assert.Contains(t, value("queue:{queue_name}:done"), `"result":"ok"`)
	assert.Contains(t, value("queue:{queue_name}:done"), `"traceparent":"00-1-2-01"`)
	assert.Contains(t, value("queue:{queue_name}:done_at"), `"job_id":"e4"`)
	assert.Contains(t, value("queue:{queue_name}:cancel"), `"job_id":"e1"`)
	assert.Contains(t, value("queue:{queue_name}:events"), `"Kind":"completed"`)
	assert.Contains(t, value("queue:{queue_name}:gactive:{group}"), `"job_id":"t1"`)
	assert.Contains(t, value("queue:{queue_name}:grate:{group}"), `"leased":1`)
	assert.Contains(t, value("queue:{queue_name}:rate"), `"leased":1`)
	assert.Contains(t, value("queue:{queue_name}:flows"), `"children_left":1`)
	assert.Contains(t, value("cache:api:{endpoint}:{method}:{params_hash}"), `"json":["a.pdf"]`)
	assert.Contains(t, value("cache:meta:cache:api:{endpoint}:{method}:{params_hash}"), `"size_bytes"`)
	assert.Contains(t, value("cache:tag:{tag_name}"), `"entry":"`+e.NS.Prefix+`cache:api:`)
	assert.Contains(t, value("metrics:counter:{metric_name}:{dimension}"), `"value":1`)
	assert.Contains(t, value("requests:total"), `"value":2`)
	assert.Contains(t, value("chat:{tag}:conversation:{id}:messages"), `"content":"My heater is off"`)
	assert.Contains(t, value("chat:{tag}:conversations:unread"), `"priority":"high"`)
	assert.Contains(t, value("chat:{tag}:admins"), `"capacity":10`)
	assert.Contains(t, value("sensor:motion:{location}"), `"State":"on"`)
	assert.Contains(t, value("sensor:environmental:{location}"), `"Value":22.5`)
	assert.Contains(t, value("sensor:{sensor_type}:{location}"), `"Type":"pressure"`)
	assert.Contains(t, value("ai:memory:conv:{user_id}:{conversation_id}"), `"Content":"What is Redis?"`)
	assert.Contains(t, value("ai:memory:user:{user_id}"), `"RecentTopics":["redis"]`)
	assert.Contains(t, value("ai:rag:query:{query_hash}"), `"chunks":[{"doc":"redis.md"}]`)
	assert.Contains(t, value("ai:response:{model}:{prompt_hash}"), `"response":"hello"`)
	assert.Contains(t, value("ai:rag:meta:{query_hash}"), `"created_at"`)
	assert.Contains(t, value("sensor-compact:{sensor_type}:{location}"), `"Value":71`)
	assert.Contains(t, value("admin:{tag}:{admin_id}:assignments"), `"conversation_id":"456"`)
	assert.Contains(t, value("metrics:gauge:{metric_name}:{dimension}"), `"value":`)
	assert.Contains(t, value("errors:total"), `"value":1`)
	assert.Contains(t, value("ratelimit:gcra:{identifier}:{endpoint}:{window}"), `"theoretical_arrival"`)
	assert.Contains(t, value("ratelimit:swc:{identifier}:{endpoint}:{window}"), `"count":1`)
	assert.Contains(t, value("queue:{queue_name}:unique:{job_id}"), `"job_id":"e3"`)
	assert.Contains(t, value("chat:{tag}:admin:stats:{admin_id}"), `"resolved":1`)
	assert.Contains(t, value("chat:{tag}:conversations:backlog"), `"conversation_id":"458"`)
	assert.Contains(t, value("lock:workflow:{workflow_id}"), `"lease":"1m0s"`)

	var names []string
	for p := range covered {
		names = append(names, p)
	}
	sort.Strings(names)
	t.Logf("%d patterns inspected: %s", len(names), strings.Join(names, ", "))
	var missing []string
	for _, tp := range library().Templates() {
		// chat.WithoutTag's keys exist on a standalone server only
		standaloneOnly := strings.HasSuffix(tp.Pattern().Purpose, "(WithoutTag)")
		if e.Backend == harness.Cluster && standaloneOnly {
			continue
		}
		if _, ok := covered[tp.String()]; !ok && !tp.IsChannel() {
			missing = append(missing, tp.String())
		}
	}
	// Keys that only live mid-operation (a fair lock's waiters, a blocked
	// consumer's inbox, a tag being invalidated), or that need a
	// summarizer, a rollup or a sweep: TestInspectTransientKeys covers
	// them, so that between the two every pattern is inspected.
	t.Logf("%d patterns left to TestInspectTransientKeys: %s", len(missing), strings.Join(missing, ", "))
	for _, p := range missing {
		assert.Contains(t, transientPatterns, p, "no test inspects a %s key", p)
	}

	// The text form names the pattern, the package, the type and the TTL.
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"inspect", "-url", backendURL(e), "-prefix", e.NS.Prefix, tagged[0]}, &out)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	for _, s := range []string{"key:      " + tagged[0], "pattern:  ", "(package ", "type:     ", "ttl:      ", "value:    "} {
		assert.Contains(t, out.String(), s)
	}
}

// A key no package owns, a missing key, a channel and a key of the wrong
// type are errors that say so, with exit code 1.
func TestInspectErrors(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	stray := e.NS.Prefix + "stray:thing"
	require.NoError(t, e.Client.Set(ctx, stray, "x", time.Minute).Err())
	wrong := e.NS.Prefix + "presence:{7}"
	require.NoError(t, e.Client.HSet(ctx, wrong, "f", "v").Err())
	require.NoError(t, e.Client.Expire(ctx, wrong, time.Minute).Err())
	bad := e.NS.Prefix + "lock:file:{a.pdf}"
	require.NoError(t, e.Client.Set(ctx, bad, "not a lease", time.Minute).Err())

	for _, tc := range []struct {
		key, want string
		is        error
	}{
		{stray, "no registered pattern owns the key", keys.ErrUnowned},
		{"other:" + stray, `key "other:` + stray + `" does not exist`, keys.ErrNotFound},
		{e.NS.Prefix + "nonexistent", `key "` + e.NS.Prefix + `nonexistent" does not exist`, keys.ErrNotFound},
		{e.NS.Prefix + "presence:events", "presence channel", keys.ErrUnowned},
		{e.NS.Prefix + "presence:{8}", `key "` + e.NS.Prefix + `presence:{8}" does not exist`, keys.ErrNotFound},
		{wrong, "holds a hash", keys.ErrCorrupt},
		{bad, "is not owner:timestamp_ms:ttl_ms", keys.ErrCorrupt},
	} {
		var out bytes.Buffer
		code, err := run(context.Background(), []string{"inspect", "-url", backendURL(e), "-prefix", e.NS.Prefix, tc.key}, &out)
		assert.Equal(t, 1, code, tc.key)
		require.Error(t, err, tc.key)
		assert.Contains(t, err.Error(), tc.want, tc.key)
		assert.ErrorIs(t, err, tc.is, tc.key)
	}
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"inspect", "-url", backendURL(e)}, &out)
	assert.Equal(t, 2, code)
	assert.Error(t, err)

	// A key that exists under another prefix: the prefix it would match
	// under is named.
	out.Reset()
	code, err = run(context.Background(), []string{"inspect", "-url", backendURL(e), wrong}, &out)
	assert.Equal(t, 1, code)
	assert.ErrorIs(t, err, keys.ErrUnowned)
	assert.ErrorContains(t, err, "did you mean -prefix "+e.NS.Prefix+"?")
}

// stats lists per pattern the keys, memory and TTL health, the keys no
// pattern matches and the largest keys.
func TestStats(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	tr, err := presence.New(e.Client, presence.WithNamespace(e.NS))
	require.NoError(t, err)
	for _, u := range []string{"1", "2", "3"} {
		_, err = tr.Connect(ctx, u, presence.Conn{ID: "c" + u})
		require.NoError(t, err)
	}
	noTTL := e.NS.Prefix + "lock:file:{x.pdf}"
	require.NoError(t, e.Client.Set(ctx, noTTL, "o:1:60000", 0).Err())
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"stray", strings.Repeat("x", 5000), time.Minute).Err())

	var out bytes.Buffer
	code, err := run(context.Background(), []string{"stats", "-url", backendURL(e), "-prefix", e.NS.Prefix, "-largest", "2"}, &out)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	s := out.String()
	assert.Contains(t, s, "| Key pattern | Package | Keys | Memory | Sampled | Avg bytes | No TTL | Wrong type |")
	assert.Contains(t, s, "| `presence:{user_id}` | presence | 3 |")
	assert.Contains(t, s, "| `lock:file:{file_id}` | lock | 1 |")
	assert.Contains(t, s, "| (unmatched) | | 1 |")
	assert.Contains(t, s, "- "+e.NS.Prefix+"stray")
	assert.Contains(t, s, "largest keys:")
	assert.Contains(t, s, `1 "lock:file:{file_id}" keys have no TTL`)
	assert.Equal(t, 2, strings.Count(s[strings.Index(s, "largest keys:"):], "| `"+e.NS.Prefix), "two largest keys listed")

	out.Reset()
	code, err = run(context.Background(), []string{"stats", "-url", backendURL(e), "-prefix", e.NS.Prefix, "-owner", "lock"}, &out)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.NotContains(t, out.String(), "`presence:{user_id}`")
}

// Keys that only live mid-operation or behind a background job (a fair
// lock's waiters, a blocked consumer's inbox, a tag being invalidated, a
// shard's sweep memo, the summarizer's input, metrics rollups), written
// here in the formats their scripts write (see each script's header), so
// that every pattern's decoder runs on all three backends.
var transientPatterns = []string{
	"ai:memory:conv-evicted:{user_id}:{conversation_id}", "ai:memory:conv-meta:{user_id}:{conversation_id}",
	"cache:tag-dying:{tag_name}", "cache:tag-dying:user:{user_id}",
	"lock:queue:{resource_type}:{resource_id}", "lock:waiters:{resource_type}:{resource_id}", "lock:writers:{resource_type}:{resource_id}",
	"metrics:parts:{slot}:{gauge}", "metrics:rollup:{metric_name}:minute", "metrics:rollup:{metric_name}:hour",
	"metrics:rollup:{metric_name}:day", "metrics:rollup:{metric_name}:open", "metrics:rollup:{metric_name}:pending",
	"metrics:rollup:{metric_name}:state", "presence:sweeps:{slot}", "queue:{queue_name}:inbox",
	"ratelimit:ip:{ip_address}:{endpoint}:{window}",
}

func TestInspectTransientKeys(t *testing.T) {
	e := harness.New(t)
	ctx, c := e.Ctx(), e.Client
	now := e.Now().UnixMilli()
	ms := func(d time.Duration) string { return strconv.FormatInt(now+d.Milliseconds(), 10) }
	key := func(template string, args ...string) string {
		tp, ok := library().Lookup(template)
		require.True(t, ok, template)
		k, err := tp.Key(e.NS, args...)
		require.NoError(t, err)
		return k
	}
	type write func(k string) error
	for _, tc := range []struct {
		template string
		args     []string
		write    write
		want     string
	}{
		{"ai:memory:conv-evicted:{user_id}:{conversation_id}", []string{"u1", "c1"},
			func(k string) error { return c.RPush(ctx, k, `{"role":"user","content":"old","tokens":3}`).Err() }, `"Content":"old"`},
		{"ai:memory:conv-meta:{user_id}:{conversation_id}", []string{"u1", "c1"},
			func(k string) error {
				return c.HSet(ctx, k, "summary", "they talked", "summary_tokens", "3", "covered", "2", "lost", "0", "version", "1").Err()
			}, `"Text":"they talked"`},
		{"cache:tag-dying:{tag_name}", []string{"files"},
			func(k string) error {
				return c.ZAdd(ctx, k, redis.Z{Score: float64(now + 60000), Member: "cache:api:x"}).Err()
			}, `"entry":"cache:api:x"`},
		{"cache:tag-dying:user:{user_id}", []string{"42"},
			func(k string) error {
				return c.ZAdd(ctx, k, redis.Z{Score: float64(now + 60000), Member: "cache:api:y"}).Err()
			}, `"entry":"cache:api:y"`},
		{"lock:queue:{resource_type}:{resource_id}", []string{"file", "a.pdf"},
			func(k string) error { return c.RPush(ctx, k, "owner-2").Err() }, `"waiter":"owner-2"`},
		{"lock:waiters:{resource_type}:{resource_id}", []string{"file", "a.pdf"},
			func(k string) error {
				return c.ZAdd(ctx, k, redis.Z{Score: float64(now + 5000), Member: "owner-2"}).Err()
			}, `"place_until"`},
		{"lock:writers:{resource_type}:{resource_id}", []string{"doc", "a.pdf"},
			func(k string) error {
				return c.ZAdd(ctx, k, redis.Z{Score: float64(now + 5000), Member: "owner-2"}).Err()
			}, `"place_until"`},
		{"metrics:parts:{slot}:{gauge}", []string{"ab", "workers"},
			func(k string) error { return c.HSet(ctx, k, "gpu|inst-1", "3:"+ms(10*time.Second)+":"+ms(0)).Err() }, `"instance":"inst-1"`},
		{"metrics:rollup:{metric_name}:minute", []string{"jobs_total"},
			func(k string) error {
				return c.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: strconv.FormatInt(now-now%60000, 10) + "-0", Values: []any{"n8n", "4"}}).Err()
			}, `"sums":{"n8n":4}`},
		{"metrics:rollup:{metric_name}:hour", []string{"jobs_total"},
			func(k string) error {
				return c.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: strconv.FormatInt(now-now%3600000, 10) + "-0", Values: []any{"n8n", "4"}}).Err()
			}, `"bucket_start"`},
		{"metrics:rollup:{metric_name}:day", []string{"jobs_total"},
			func(k string) error {
				return c.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: strconv.FormatInt(now-now%86400000, 10) + "-0", Values: []any{"n8n", "4.5"}}).Err()
			}, `"sums":{"n8n":4.5}`},
		{"metrics:rollup:{metric_name}:open", []string{"jobs_total"},
			func(k string) error { return c.HSet(ctx, k, "hour|n8n", "4").Err() }, `"hour|n8n":4`},
		{"metrics:rollup:{metric_name}:pending", []string{"jobs_total"},
			func(k string) error { return c.HSet(ctx, k, "n8n", "2").Err() }, `"n8n":2`},
		{"metrics:rollup:{metric_name}:state", []string{"jobs_total"},
			func(k string) error { return c.HSet(ctx, k, "lease", "r1", "lease_exp", ms(time.Minute)).Err() }, `"lease":"r1"`},
		{"presence:sweeps:{slot}", []string{"ab"},
			func(k string) error {
				return c.ZAdd(ctx, k, redis.Z{Score: float64(now), Member: "0123456789abcdef"}, redis.Z{Score: float64(now), Member: "0123456789abcdef=ok,3"}).Err()
			}, `"reply":"ok,3"`},
		{"queue:{queue_name}:inbox", []string{"n8n"},
			func(k string) error { return c.RPush(ctx, k, "1").Err() }, `"wake_up_token":true`},
		{"ratelimit:ip:{ip_address}:{endpoint}:{window}", []string{"192.0.2.1", "/login", "minute"},
			func(k string) error { return c.Set(ctx, k, "3", time.Minute).Err() }, `"count":3`},
	} {
		assert.Contains(t, transientPatterns, tc.template)
		k := key(tc.template, tc.args...)
		require.NoError(t, tc.write(k), tc.template)
		require.NoError(t, c.PExpire(ctx, k, time.Minute).Err())
		var out bytes.Buffer
		code, err := run(context.Background(), []string{"inspect", "-json", "-url", backendURL(e), "-prefix", e.NS.Prefix, k}, &out)
		require.NoError(t, err, tc.template)
		require.Equal(t, 0, code)
		var got []inspection
		require.NoError(t, json.Unmarshal(out.Bytes(), &got))
		require.Len(t, got, 1)
		assert.Equal(t, tc.template, got[0].Pattern)
		b, err := json.Marshal(got[0].Value)
		require.NoError(t, err)
		assert.Contains(t, string(b), tc.want, tc.template)
	}
}
