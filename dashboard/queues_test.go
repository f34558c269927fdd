package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// queueRow is one row of /api/queues as the UI reads it.
type queueRow struct {
	queueStats
	Paused        bool
	OldestReadyMs int64 `json:"oldest_ready_ms"`
	Daily         struct {
		Days              []string
		Processed, Failed []int64
	}
}

type pageJob struct {
	jobRow
	State, Corrupt string
	RetryCount     int `json:"retry_count"`
}

type queuePage struct {
	Stats     queueRow
	State     string
	Offset    int
	Limit     int
	Total     int64
	Jobs      []pageJob
	Schedules []struct{ Name, Spec string }
}

func TestQueues(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var list struct{ Queues []queueRow }
	require.Equal(t, http.StatusOK, f.get(t, "/api/queues", &list))
	require.Len(t, list.Queues, 1)
	q := list.Queues[0]
	require.Equal(t, demo.Queue, q.Name)
	require.Equal(t, map[string]int64{"high": demo.ReadyHigh, "normal": demo.ReadyNormal, "low": demo.ReadyLow}, q.Ready)
	require.EqualValues(t, demo.Scheduled, q.Scheduled["normal"])
	require.EqualValues(t, demo.InFlight, q.InFlight)
	require.EqualValues(t, demo.Dead, q.Dead)
	require.EqualValues(t, demo.Processed, q.TotalProcessed)
	require.EqualValues(t, demo.Failed, q.TotalFailed)
	require.False(t, q.Paused)
	require.GreaterOrEqual(t, q.OldestReadyMs, int64(0))
	// the stored daily counts are drawn on the first request: today is
	// the last of 90 days
	require.Len(t, q.Daily.Days, 90)
	require.Len(t, q.Daily.Processed, 90)
	require.Len(t, q.Daily.Failed, 90)
	require.EqualValues(t, demo.Processed, q.Daily.Processed[89])
	require.EqualValues(t, demo.Failed, q.Daily.Failed[89])
	require.EqualValues(t, 0, q.Daily.Processed[0])

	var p queuePage
	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue, &p))
	require.Equal(t, "pending", p.State)
	require.EqualValues(t, demo.ReadyHigh+demo.ReadyNormal+demo.ReadyLow, p.Total)
	require.Len(t, p.Jobs, demo.ReadyHigh+demo.ReadyNormal+demo.ReadyLow)
	require.Equal(t, demo.Queue, p.Stats.Name)
	require.Len(t, p.Stats.Daily.Days, 90)

	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue+"&state=active", &p))
	require.Len(t, p.Jobs, demo.InFlight)
	require.Equal(t, "report-1", p.Jobs[0].ID)
	require.NotEmpty(t, p.Jobs[0].At)

	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue+"&state=dead&limit=1&offset=1", &p))
	require.EqualValues(t, demo.Dead, p.Total)
	require.Len(t, p.Jobs, 1)
	require.Equal(t, demo.DeadError, p.Jobs[0].LastError)
	require.Equal(t, demo.Payload("welcome-ada@example.com"), p.Jobs[0].Payload)
	require.Equal(t, "dead", p.Jobs[0].State)

	// search: an ID prefix within the page read
	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue+"&state=dead&q=digest", &p))
	require.Len(t, p.Jobs, 1)
	require.Equal(t, "digest-bob", p.Jobs[0].ID)

	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue+"&state=done", &p))
	require.Equal(t, "done", p.State)

	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/queue", nil))
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/queue?name=stats", nil))
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/queue?name="+demo.Queue+"&state=nope", nil))
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/queue?name="+demo.Queue+"&limit=201", nil))
	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue+"&limit=200", nil))
}

func TestQueueCorruptDeadLetter(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	dlq := f.env.NS.Prefix + "queue:dlq:{" + demo.Queue + "}"
	require.NoError(t, f.env.Client.LPush(f.env.Ctx(), dlq, "not json {").Err())
	var p queuePage
	require.Equal(t, http.StatusOK, f.get(t, "/api/queue?name="+demo.Queue+"&state=dead", &p))
	require.Len(t, p.Jobs, demo.Dead+1)
	require.NotEmpty(t, p.Jobs[0].Corrupt)
	require.Equal(t, "not json {", p.Jobs[0].Payload)
	for _, j := range p.Jobs[1:] {
		require.Empty(t, j.Corrupt)
	}
}

func TestJobDetail(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var d struct {
		ID, State, Payload string
		Truncated          bool `json:"payload_truncated"`
		Headers            map[string]string
		Errors             []struct {
			Attempt int
			Error   string
		}
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/job?queue="+demo.Queue+"&id="+demo.DeadIDs[0], &d))
	require.Equal(t, demo.DeadIDs[0], d.ID)
	require.Equal(t, "dead", d.State)
	require.Equal(t, demo.Payload("welcome-ada@example.com"), d.Payload)
	require.False(t, d.Truncated)
	require.NotNil(t, d.Headers)
	require.Len(t, d.Errors, 1)
	require.Equal(t, demo.DeadError, d.Errors[0].Error)
	require.Equal(t, http.StatusNotFound, f.get(t, "/api/job?queue="+demo.Queue+"&id=gone", nil))
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/job?queue="+demo.Queue, nil))
}

func TestQueueActions(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
	post := func(path string, form url.Values) string {
		t.Helper()
		code, body := f.post(t, path, form, tokenHdr())
		require.Equal(t, http.StatusOK, code, body)
		return body
	}
	qf := url.Values{"queue": {demo.Queue}}
	require.JSONEq(t, `{"paused":true}`, post("/api/queue/pause", qf))
	var list struct{ Queues []queueRow }
	f.get(t, "/api/queues", &list)
	require.True(t, list.Queues[0].Paused)
	require.JSONEq(t, `{"paused":false}`, post("/api/queue/resume", qf))

	// requeue one, delete one, then 404
	require.JSONEq(t, `{"requeued":1}`, post("/api/queue/requeue", url.Values{"queue": {demo.Queue}, "id": {demo.DeadIDs[0]}}))
	require.JSONEq(t, `{"deleted":1}`, post("/api/queue/delete", url.Values{"queue": {demo.Queue}, "id": {demo.DeadIDs[1]}}))
	code, _ := f.post(t, "/api/queue/requeue", url.Values{"queue": {demo.Queue}, "id": {demo.DeadIDs[1]}}, tokenHdr())
	require.Equal(t, http.StatusNotFound, code)
	f.get(t, "/api/queues", &list)
	require.EqualValues(t, 0, list.Queues[0].Dead)
	require.EqualValues(t, demo.ReadyHigh+1, list.Queues[0].Ready["high"])
	require.Contains(t, f.log.String(), "action=queue.requeue")
	require.Contains(t, f.log.String(), "id="+demo.DeadIDs[0])

	// run a scheduled job now
	var p queuePage
	f.get(t, "/api/queue?name="+demo.Queue+"&state=scheduled", &p)
	require.Len(t, p.Jobs, demo.Scheduled)
	sid := p.Jobs[0].ID
	require.JSONEq(t, `{"promoted":"`+sid+`"}`, post("/api/queue/run-now", url.Values{"queue": {demo.Queue}, "id": {sid}}))
	code, _ = f.post(t, "/api/queue/run-now", url.Values{"queue": {demo.Queue}, "id": {sid}}, tokenHdr())
	require.Equal(t, http.StatusNotFound, code)

	// cancel a pending job
	require.JSONEq(t, `{"state":"pending"}`, post("/api/queue/cancel", url.Values{"queue": {demo.Queue}, "id": {sid}}))

	// bulk: fail two jobs to the dead-letter list through delete and
	// requeue of many ids
	f.get(t, "/api/queue?name="+demo.Queue+"&state=pending&limit=3", &p)
	require.Len(t, p.Jobs, 3)
	ids := url.Values{"queue": {demo.Queue}, "id": {p.Jobs[0].ID, p.Jobs[1].ID, "nope"}}
	require.JSONEq(t, `{"deleted":2}`, post("/api/queue/delete", ids))

	dlq := f.env.NS.Prefix + "queue:dlq:{" + demo.Queue + "}"
	require.JSONEq(t, `{"requeued":0}`, post("/api/queue/requeue-all", qf))
	require.NoError(t, f.env.Client.LPush(f.env.Ctx(), dlq, "junk").Err())
	require.JSONEq(t, `{"deleted":1}`, post("/api/queue/purge-dead", qf))
	code, _ = f.post(t, "/api/queue/delete", url.Values{"queue": {demo.Queue}}, tokenHdr())
	require.Equal(t, http.StatusBadRequest, code)
	var many []string
	for i := 0; i < 501; i++ {
		many = append(many, fmt.Sprintf("j%d", i))
	}
	code, _ = f.post(t, "/api/queue/delete", url.Values{"queue": {demo.Queue}, "id": many}, tokenHdr())
	require.Equal(t, http.StatusBadRequest, code)
}

// TestUnknownQueueNamesBounded: requests naming distinct queues that do
// not exist leave the handler's open queues bounded (issue S3): reads
// keep nothing (1,000 of them: each is a pipeline of four scripts), and
// 30,000 actions leave the LRU at its 64.
func TestUnknownQueueNamesBounded(t *testing.T) {
	env := harness.New(t)
	h, err := dashboard.New(dashboard.WithClient(env.Client), dashboard.WithNamespace(env.NS),
		dashboard.WithToken(testToken), dashboard.WithWrites())
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	open := func() int { return reflect.ValueOf(h).Elem().FieldByName("queues").Len() }
	do := func(method, path string, form url.Values) int {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req := httptest.NewRequest(method, path, body)
		req.Header.Set(dashboard.TokenHeader, testToken)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	// reads keep no state for any name
	start := time.Now().UnixNano()
	for i := 0; i < 1000; i++ {
		require.Equal(t, http.StatusOK, do("GET", fmt.Sprintf("/api/queue?name=nope-%d-%d", start, i), nil))
	}
	require.Zero(t, open())
	// actions open queues: a bounded LRU
	for i := 0; i < 30000; i++ {
		name := fmt.Sprintf("nope-%d-%d", start, i)
		require.Equal(t, http.StatusNotFound, do("POST", "/api/queue/run-now", url.Values{"queue": {name}, "id": {"x"}}))
	}
	require.Equal(t, 64, open())
}

// WithQueue's options reach the queues the actions open: with
// queue.WithSeedConsumers a requeue leaves no wake-up token on the
// executions list that the AI platform's Node consumers pop; without it,
// it does (what the option is for).
func TestWithQueueReachesActions(t *testing.T) {
	for _, seed := range []bool{false, true} {
		opts := []dashboard.Option{dashboard.WithToken(testToken), dashboard.WithWrites()}
		if seed {
			opts = append(opts, dashboard.WithQueue(queue.WithSeedConsumers()))
		}
		f := setup(t, opts...)
		ctx := f.env.Ctx()
		list := f.env.NS.Prefix + "queue:{" + demo.Queue + "}:executions"
		require.NoError(t, f.env.Client.Del(ctx, list).Err())
		code, body := f.post(t, "/api/queue/requeue", url.Values{"queue": {demo.Queue}, "id": {demo.DeadIDs[0]}}, tokenHdr())
		require.Equal(t, http.StatusOK, code, body)
		items, err := f.env.Client.LRange(ctx, list, 0, -1).Result()
		require.NoError(t, err)
		if seed {
			require.Empty(t, items, "WithSeedConsumers: no token on the shared list")
		} else {
			require.Equal(t, []string{"1"}, items, "without it the requeue wakes workers through the list")
		}
	}
}

// TestQueuesOneCorruptQueue: a queue whose stats hash holds a field this
// library did not write gets its own row, with the reason naming the
// key; every other queue still shows in full (the page is not a 500).
func TestQueuesOneCorruptQueue(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	e := f.env
	q, err := queue.New[string](e.Client, "broken", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = q.Enqueue(e.Ctx(), "x")
	require.NoError(t, err)
	stats := e.NS.Prefix + "queue:stats:{broken}"
	require.NoError(t, e.Client.HSet(e.Ctx(), stats, "total_processed", "many").Err())

	var list struct {
		Queues []struct {
			queueRow
			Error string
		}
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/queues", &list))
	require.Len(t, list.Queues, 2)
	for _, r := range list.Queues {
		switch r.Name {
		case "broken":
			require.Contains(t, r.Error, fmt.Sprintf("%q", stats), "the reason names the key")
		case demo.Queue:
			require.Empty(t, r.Error)
			require.EqualValues(t, demo.Processed, r.TotalProcessed)
			require.Equal(t, map[string]int64{"high": demo.ReadyHigh, "normal": demo.ReadyNormal, "low": demo.ReadyLow}, r.Ready)
			require.Len(t, r.Daily.Days, 90)
		default:
			t.Fatalf("unexpected queue %q", r.Name)
		}
	}
}
