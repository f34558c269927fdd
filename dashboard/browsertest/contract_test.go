package browsertest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
)

// contractAPI answers the API the page is built to (the paged queue
// endpoints, the schema's strays by prefix, guesses and largest keys,
// inspect's next page) with fixed data, and records what the page asked
// and posted. The page and its assets are the real handler's.
type contractAPI struct {
	mu      sync.Mutex
	paused  bool
	queries []string // /api/queue query strings
	posts   []string // path?form of each POST
	unsafe  []string // API requests without X-Redschema-Request
}

const contractDead = 60

func (c *contractAPI) handler(t *testing.T, page http.Handler) http.Handler {
	day0 := time.Now().UTC().AddDate(0, 0, -89)
	daily := map[string]any{"days": []string{}, "processed": []int{}, "failed": []int{}}
	for i := range 90 {
		daily["days"] = append(daily["days"].([]string), day0.AddDate(0, 0, i).Format("2006-01-02"))
		daily["processed"] = append(daily["processed"].([]int), 100+i%7*10)
		daily["failed"] = append(daily["failed"].([]int), i%5)
	}
	stats := func() map[string]any {
		c.mu.Lock()
		defer c.mu.Unlock()
		return map[string]any{"name": "mail", "paused": c.paused, "ready": map[string]int{"high": 1, "normal": 2, "low": 0},
			"scheduled": map[string]int{"high": 0, "normal": 1, "low": 0}, "in_flight": 1, "dead": contractDead,
			"total_enqueued": 1000, "total_processed": 900, "total_failed": 70, "total_dead": contractDead,
			"avg_process_ms": 12.5, "oldest_ready_ms": 1500, "last_processed_at": time.Now().UTC(), "daily": daily}
	}
	job := func(id, state string) map[string]any {
		return map[string]any{"id": id, "state": state, "priority": "normal", "created_at": time.Now().UTC(), "at": time.Now().UTC(),
			"retry_count": 3, "max_retries": 3, "last_error": "smtp: 550", "payload": `{"to":"` + id + `@example.com"}`}
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /api/config", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"refresh_ms": 1000, "writable": true, "cluster": false, "dbs": []int{0}, "prefix": "app:"})
	})
	m.HandleFunc("GET /api/queues", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"queues": []any{stats()}})
	})
	m.HandleFunc("GET /api/queue", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		c.mu.Lock()
		c.queries = append(c.queries, r.URL.RawQuery)
		c.mu.Unlock()
		state := q.Get("state")
		offset, _ := strconv.Atoi(q.Get("offset"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		total := map[string]int{"pending": 3, "scheduled": 1, "active": 1, "dead": contractDead, "done": 0}[state]
		jobs := []any{}
		for i := offset; i < min(offset+limit, total); i++ {
			id := fmt.Sprintf("%s-%02d", state, i)
			if s := q.Get("q"); s != "" && !strings.Contains(id, s) {
				continue
			}
			j := job(id, state)
			if state == "dead" && i == 0 {
				j = map[string]any{"id": "bad-00", "state": "dead", "corrupt": true, "payload": "{not json"}
			}
			jobs = append(jobs, j)
		}
		if q.Get("q") != "" {
			total = len(jobs)
		}
		reply(w, map[string]any{"stats": stats(), "state": state, "offset": offset, "limit": limit, "total": total, "jobs": jobs,
			"schedules": []any{map[string]any{"name": "nightly-digest", "spec": "0 3 * * *", "next_run": time.Now().Add(5 * time.Hour).UTC(), "location": "UTC"}}})
	})
	m.HandleFunc("GET /api/job", func(w http.ResponseWriter, r *http.Request) {
		j := job(r.URL.Query().Get("id"), "dead")
		j["payload_truncated"] = false
		j["headers"] = map[string]string{"trace": "abc-123"}
		j["progress"] = 40
		j["result"] = nil
		j["errors"] = []any{map[string]any{"at": time.Now().UTC(), "attempt": 1, "error": "first failure"},
			map[string]any{"at": time.Now().UTC(), "attempt": 2, "error": "second failure"}}
		reply(w, j)
	})
	m.HandleFunc("POST /api/", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		c.mu.Lock()
		switch r.URL.Path {
		case "/api/queue/pause":
			c.paused = true
		case "/api/queue/resume":
			c.paused = false
		}
		c.posts = append(c.posts, r.URL.Path+"?"+r.PostForm.Encode())
		c.mu.Unlock()
		reply(w, map[string]any{})
	})
	m.HandleFunc("GET /api/schema", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"dbs": []any{map[string]any{"db": 0, "scanned": 312, "bytes": 4096, "unmatched": 309,
			"unmatched_keys": []string{"zentoria:queue:{a}:jobs"}, "problems": []string{},
			"prefixes":       []any{map[string]any{"prefix": "zentoria:", "keys": 305}, map[string]any{"prefix": "tmp:", "keys": 3}},
			"prefixes_other": 1,
			"guesses":        []any{map[string]any{"prefix": "zentoria:", "no_hash_tags": false, "keys": 305}},
			"patterns": []any{map[string]any{"pattern": "app:queue:{{queue_name}}:jobs", "owner": "queue", "area": "queues", "type": "hash",
				"ttl": "none", "purpose": "every job's record, by ID", "keys": 3, "bytes": 4096, "estimated": false, "no_ttl": 0,
				"wrong_type": 0, "wrong_db": 0, "largest": []any{map[string]any{"key": "app:queue:{big}:jobs", "bytes": 3000},
					map[string]any{"key": "app:queue:{small}:jobs", "bytes": 1000}}}}}}})
	})
	m.HandleFunc("GET /api/inspect", func(w http.ResponseWriter, r *http.Request) {
		v := map[string]any{"len": 5, "items": []string{"one", "two"}, "next": "c1"}
		if r.URL.Query().Get("cursor") == "c1" {
			v = map[string]any{"len": 5, "items": []string{"three", "four", "five"}}
		}
		reply(w, map[string]any{"key": r.URL.Query().Get("key"), "pattern": "app:queue:{{queue_name}}:jobs", "owner": "queue", "area": "queues",
			"type": "hash", "ttl_ms": -1, "expected_ttl": "none", "value": v})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			if r.Header.Get("X-Redschema-Request") != "1" {
				c.mu.Lock()
				c.unsafe = append(c.unsafe, r.Method+" "+r.URL.String())
				c.mu.Unlock()
			}
			m.ServeHTTP(w, r)
			return
		}
		page.ServeHTTP(w, r)
	})
}

func (c *contractAPI) lastPost() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.posts) == 0 {
		return ""
	}
	return c.posts[len(c.posts)-1]
}

func (c *contractAPI) queried(sub string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.queries {
		if strings.Contains(q, sub) {
			return true
		}
	}
	return false
}

// TestPageAgainstContract drives the page over a stub of the API it is
// built to, whatever the backend of this tree answers: the paged queue
// page (tabs, paging, search, a corrupt row, bulk and row actions with
// the form fields they post, pause, the job page, schedules, the daily
// chart), the schema page's strays by prefix, prefix hint, purposes and
// largest keys, and inspect's "more". Every API request carries
// X-Redschema-Request.
func TestPageAgainstContract(t *testing.T) {
	ctx, console := browser(t)
	mr := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rc.Close() })
	h, err := dashboard.New(dashboard.WithClient(rc), dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	api := &contractAPI{}
	srv := httptest.NewServer(api.handler(t, h))
	t.Cleanup(srv.Close)
	dir := shotDir(t)
	posted := func(want string) {
		t.Helper()
		require.Eventually(t, func() bool { return api.lastPost() == want }, 10*time.Second, 20*time.Millisecond, "last post %q", api.lastPost())
	}

	// Queues: the list, the daily chart, latency.
	open(t, ctx, srv.URL+"/#queues/mail/dead", "queues")
	require.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll("#queue-chart polyline").length`))
	require.Equal(t, 90, eval[int](t, ctx, `document.querySelector('#queue-chart polyline[data-series="processed"]').getAttribute("points").split(" ").length`))
	require.Contains(t, text(t, ctx, `#queue-table tr[data-queue="mail"]`), "1.5 s")
	require.Contains(t, text(t, ctx, "#queue-latency"), "latency 1.5 s")
	require.Equal(t, "nightly-digest", text(t, ctx, `#queue-schedules tr[data-schedule="nightly-digest"] td`))
	atBothWidths(t, ctx, dir, "contract-queues", "queues")

	// Page 1 of the dead letters: 25 rows, the first corrupt, with only
	// its delete action.
	require.Equal(t, 25, eval[int](t, ctx, `document.querySelectorAll("#jobs-dead tr[data-job]").length`))
	require.Equal(t, fmt.Sprintf("1–25 of %d", contractDead), text(t, ctx, "#queue-range"))
	require.True(t, eval[bool](t, ctx, `document.querySelector('[data-action="prev"]').disabled`))
	bad := `#jobs-dead tr[data-job="bad-00"]`
	require.True(t, eval[bool](t, ctx, `document.querySelector('`+bad+`').classList.contains("corrupt")`))
	require.Contains(t, text(t, ctx, bad), "corrupt")
	require.Equal(t, []string{"delete"}, eval[[]string](t, ctx, `[...document.querySelectorAll('`+bad+` button')].map(b => b.dataset.action)`))
	click(t, ctx, bad+` button[data-action="delete"]`)
	posted("/api/queue/delete?id=bad-00&queue=mail")

	// Next page, then back.
	click(t, ctx, `[data-action="next"]`)
	waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "26–50 of %d"`, contractDead))
	require.True(t, api.queried("offset=25"))
	click(t, ctx, `[data-action="prev"]`)
	waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "1–25 of %d"`, contractDead))

	// Select two, bulk delete (asked first), bulk requeue; requeue all,
	// purge (asked first).
	recordConfirms(t, ctx)
	for _, id := range []string{"dead-01", "dead-02"} {
		click(t, ctx, `#jobs-dead tr[data-job="`+id+`"] input[type=checkbox]`)
	}
	click(t, ctx, `button[data-action="delete-selected"]`)
	posted("/api/queue/delete?id=dead-01&id=dead-02&queue=mail")
	require.Len(t, confirms(t, ctx), 1)
	for _, id := range []string{"dead-03", "dead-04"} {
		click(t, ctx, `#jobs-dead tr[data-job="`+id+`"] input[type=checkbox]`)
	}
	click(t, ctx, `button[data-action="requeue-selected"]`)
	posted("/api/queue/requeue?id=dead-03&id=dead-04&queue=mail")
	click(t, ctx, `button[data-action="requeue-all"]`)
	posted("/api/queue/requeue-all?queue=mail")
	click(t, ctx, `button[data-action="purge-dead"]`)
	posted("/api/queue/purge-dead?queue=mail")
	require.Len(t, confirms(t, ctx), 3, "bulk delete, requeue all and purge ask first")
	click(t, ctx, `#jobs-dead tr[data-job="dead-05"] button[data-action="requeue"]`)
	posted("/api/queue/requeue?id=dead-05&queue=mail")

	// Search.
	// Typed and sent in one task: a refresh may redraw the form between two.
	require.True(t, eval[bool](t, ctx, `(() => { const i = document.getElementById("queue-q"); i.value = "dead-07"; i.form.requestSubmit(); return true; })()`))
	waitJS(t, ctx, `document.querySelectorAll("#jobs-dead tr[data-job]").length === 1`)
	require.True(t, api.queried("q=dead-07"))

	// Pause (asked first) and resume.
	click(t, ctx, `button[data-action="pause"]`)
	posted("/api/queue/pause?queue=mail")
	waitJS(t, ctx, `!!document.getElementById("queue-paused")`)
	click(t, ctx, `button[data-action="resume"]`)
	posted("/api/queue/resume?queue=mail")
	waitJS(t, ctx, `!document.getElementById("queue-paused")`)

	// Cancel an active job (asked first), run a scheduled one now.
	open(t, ctx, srv.URL+"/#queues/mail/active", "queues")
	click(t, ctx, `#jobs-active tr[data-job="active-00"] button[data-action="cancel"]`)
	posted("/api/queue/cancel?id=active-00&queue=mail")
	require.Len(t, confirms(t, ctx), 1)
	open(t, ctx, srv.URL+"/#queues/mail/scheduled", "queues")
	click(t, ctx, `#jobs-scheduled tr[data-job="scheduled-00"] button[data-action="run-now"]`)
	posted("/api/queue/run-now?id=scheduled-00&queue=mail")

	// A job's page.
	open(t, ctx, srv.URL+"/#queues/mail/dead", "queues")
	click(t, ctx, `#jobs-dead tr[data-job="dead-07"] a`)
	waitJS(t, ctx, `!!document.getElementById("job-payload")`)
	require.Contains(t, text(t, ctx, "#job-payload"), "dead-07@example.com")
	require.Contains(t, text(t, ctx, "#job-headers"), "abc-123")
	require.Contains(t, text(t, ctx, "#job-errors"), "second failure")
	atBothWidths(t, ctx, dir, "contract-job", "queues")

	// Schema: purposes, largest keys, strays by prefix, the prefix hint.
	open(t, ctx, srv.URL+"/#schema", "schema")
	row := `tr[data-pattern="app:queue:{{queue_name}}:jobs"]`
	require.Equal(t, "every job's record, by ID", eval[string](t, ctx, `document.querySelector('`+row+`').title`))
	require.Contains(t, text(t, ctx, row+" details"), "app:queue:{big}:jobs")
	require.Equal(t, "305", text(t, ctx, `#schema-prefixes-0 tr[data-prefix="zentoria:"] td:nth-child(2)`))
	require.Contains(t, text(t, ctx, "#schema-prefixes-0"), "other prefixes")
	require.Equal(t, "305 of 309 keys that match no pattern (DB 0) are under zentoria: — run redschema serve -prefix zentoria:",
		text(t, ctx, `[data-guess="zentoria:"]`))

	// Inspect's "more" appends the next page.
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#inspect-key"), "app:queue:{big}:jobs")))
	click(t, ctx, "#inspect-form button")
	click(t, ctx, `#inspect-out button[data-action="more"]`)
	waitJS(t, ctx, `document.getElementById("inspect-out").textContent.includes("five")`)
	require.Contains(t, text(t, ctx, "#inspect-out"), "one")
	require.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#inspect-out button[data-action="more"]').length`), "the last page has no next")
	atBothWidths(t, ctx, dir, "contract-schema", "schema")

	require.Empty(t, console.get())
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Empty(t, api.unsafe, "API requests without X-Redschema-Request")
}
