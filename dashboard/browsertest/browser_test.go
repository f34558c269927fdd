package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/session"
)

const token = "browser-test-token"

// browser starts a headless Chromium for the test, or skips it when
// none is installed. The flags keep it off the network: the machine's
// closed network refuses background connections.
func browser(t *testing.T) (context.Context, *consoleLog) {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no chromium installed: the browser tests need it (apt-get install -y chromium; .ci/run installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	cl := &consoleLog{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleException, chromedp.ConsoleWarning:
				cl.add(m.String())
			}
		}
	}()
	return ctx, cl
}

// consoleLog collects the page's console errors, warnings and exceptions.
type consoleLog struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleLog) add(s string) { c.mu.Lock(); c.msgs = append(c.msgs, s); c.mu.Unlock() }

// take returns the messages and forgets them.
func (c *consoleLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.msgs
	c.msgs = nil
	return m
}

func (c *consoleLog) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// shotDir is where screenshots go: $SCREENSHOT_DIR or
// $DASHBOARD_SCREENSHOTS, else a temp dir.
func shotDir(t *testing.T) string {
	for _, v := range []string{"SCREENSHOT_DIR", "DASHBOARD_SCREENSHOTS"} {
		if d := os.Getenv(v); d != "" {
			require.NoError(t, os.MkdirAll(d, 0o755))
			return d
		}
	}
	return t.TempDir()
}

// The widths every page is checked and screenshotted at: a desktop and a
// phone.
const wide, narrow = 1400, 420

// setWidth sets the viewport's width.
func setWidth(t *testing.T, ctx context.Context, w int64) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(w, 900)))
	waitJS(t, ctx, fmt.Sprintf("window.innerWidth === %d", w))
}

// fits fails unless the page is no wider than the viewport: wide tables
// scroll in their own container, the page never sideways.
func fits(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	sw := eval[int](t, ctx, `document.documentElement.scrollWidth`)
	iw := eval[int](t, ctx, `window.innerWidth`)
	if sw > iw {
		wide := eval[string](t, ctx, `[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest(".scroll")).slice(0, 5).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`)
		t.Fatalf("the %s page at %d px is %d px wide: %s", page, iw, sw, wide)
	}
}

// atBothWidths checks that the page fits at 1400 px and at 420 px, with
// its nav on at most two lines (or the select), and screenshots it at
// both as name-1400.png and name-420.png. It leaves the viewport wide.
func atBothWidths(t *testing.T, ctx context.Context, dir, name, page string) {
	t.Helper()
	for _, w := range []int64{wide, narrow} {
		setWidth(t, ctx, w)
		fits(t, ctx, page)
		lines := eval[int](t, ctx, `(() => { const n = document.querySelector("nav"); if (getComputedStyle(n).display === "none") return getComputedStyle(document.getElementById("navselect")).display === "none" ? 99 : 1; const tops = new Set([...n.querySelectorAll("a")].map(a => Math.round(a.getBoundingClientRect().top))); return tops.size; })()`)
		require.LessOrEqual(t, lines, 2, "the nav of the %s page at %d px", page, w)
		screenshot(t, ctx, dir, fmt.Sprintf("%s-%d", name, w))
	}
	setWidth(t, ctx, wide)
}

// recordConfirms makes window.confirm say yes and record what it asked
// (window.__confirms), so that an action's confirmation is checked
// without a dialog.
func recordConfirms(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, `(() => { window.__confirms = []; window.confirm = m => { window.__confirms.push(m); return true; }; return true; })()`)
}

// confirms returns what the page asked to confirm since recordConfirms.
func confirms(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `window.__confirms || []`)
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	p := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// open navigates to url and waits until the page has rendered its data,
// failing with the page's error banner if it shows one instead.
func open(t *testing.T, ctx context.Context, url, page string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	waitJS(t, ctx, `document.body.dataset.loaded === "`+page+`" || document.getElementById("error").textContent !== ""`)
	require.Empty(t, eval[string](t, ctx, `document.getElementById("error").textContent`), "the %s page shows an error", page)
	recordConfirms(t, ctx)
}

// text returns the text of the element sel selects, once there is one. It
// reads it in the page as one task: a node chromedp looked up can be
// replaced by the page's next refresh before its text is read.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	q := jsString(t, sel)
	waitJS(t, ctx, `document.querySelector(`+q+`) !== null`)
	return strings.TrimSpace(eval[string](t, ctx, `(document.querySelector(`+q+`) || {textContent: ""}).textContent`))
}

// jsString quotes s as a JS string literal.
func jsString(t *testing.T, s string) string {
	t.Helper()
	q, err := json.Marshal(s)
	require.NoError(t, err)
	return string(q)
}

// eval evaluates a JS expression.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// waitJS polls a JS expression until it is true. A poll begun just as a
// navigation replaced the document (about:blank, then the dashboard) can
// fail with the old document's context gone: it is begun again.
func waitJS(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	var err error
	for range 3 {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second)))
		if err == nil || !strings.Contains(err.Error(), "Cannot find context") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err, expr)
}

// click clicks the first element sel selects, once it is visible. The
// click runs in the page as one task (element.click()), not as chromedp's
// mouse press and release at the element's coordinates: the pages re-render
// their tables on every refresh (each second here), and a re-render that
// lands between the lookup, the press and the release swallows a mouse
// click, which then never reaches the button (CI saw a requeue that never
// happened on a busy host).
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))), sel)
	q := jsString(t, sel)
	require.True(t, eval[bool](t, ctx, `(() => { const e = document.querySelector(`+q+`); if (!e) return false; e.click(); return true; })()`),
		"%s: gone before the click", sel)
}

// The bulk queue of TestDashboardInBrowser: bulkDead dead letters
// (bulk-dead-NN, high priority), then bulkPending ready jobs (bulk-NNN,
// low priority): more than a page of each tab (25), and a jobs hash of
// more fields than inspect's first page and than a listpack holds (128),
// so that real Redis pages its HSCAN.
const (
	bulkQueue             = "bulk"
	bulkDead, bulkPending = 30, 150
	strayPrefix           = "legacy:"
	bulkSchedule          = "nightly-digest"
)

// fillBulk writes the bulk queue.
func fillBulk(t *testing.T, env *harness.Env) {
	t.Helper()
	q, err := queue.New[demo.Mail](env.Client, bulkQueue, queue.WithNamespace(env.NS))
	require.NoError(t, err)
	killJobs(t, env, q, "bulk-dead", bulkDead)
	items := make([]queue.Item[demo.Mail], bulkPending)
	for i := range items {
		id := fmt.Sprintf("bulk-%03d", i)
		items[i] = queue.Item[demo.Mail]{Payload: demo.Mail{To: id + "@example.com", Subject: "bulk"}, Options: []queue.EnqueueOption{queue.WithID(id), queue.WithPriority(queue.Low)}}
	}
	_, err = q.EnqueueBatch(env.Ctx(), items)
	require.NoError(t, err)
	_, err = q.Schedule(env.Ctx(), bulkSchedule, "0 3 * * *", demo.Mail{To: "all@example.com", Subject: "digest"}, time.UTC, queue.Skip)
	require.NoError(t, err)
}

// killJobs makes n dead letters prefix-NN in q: each is enqueued at high
// priority with no retries, taken and failed (q has no other high job
// ready).
func killJobs(t *testing.T, env *harness.Env, q *queue.Queue[demo.Mail], prefix string, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		_, err := q.Enqueue(env.Ctx(), demo.Mail{To: id + "@example.com", Subject: "dead"}, queue.WithID(id), queue.WithPriority(queue.High), queue.WithJobMaxRetries(0),
			queue.WithHeaders(map[string]string{"trace": "trace-" + id}))
		require.NoError(t, err)
		j, err := q.TryDequeue(env.Ctx())
		require.NoError(t, err)
		require.Equal(t, id, j.ID)
		dead, err := q.Nack(env.Ctx(), j, fmt.Errorf("bulk: failure %d", i))
		require.NoError(t, err)
		require.True(t, dead)
	}
}

func TestDashboardInBrowser(t *testing.T) {
	ctx, console := browser(t)
	env := harness.New(t)
	require.NoError(t, demo.Fill(env.Ctx(), env.Client, env.NS))
	lim, err := demo.Limiter(env.Client, env.NS)
	require.NoError(t, err)
	fillBulk(t, env)
	// A key under the namespace that matches a pattern under a longer
	// prefix: the schema page's stray, counted by prefix, with its hint.
	stray := env.NS.Prefix + strayPrefix + "queue:{old}:jobs"
	require.NoError(t, env.Client.HSet(env.Ctx(), stray, "j1", "{}").Err())
	require.NoError(t, env.Client.Expire(env.Ctx(), stray, time.Hour).Err())
	h, err := dashboard.New(dashboard.WithClient(env.Client), dashboard.WithNamespace(env.NS), dashboard.WithLimiter("api", lim),
		dashboard.WithInterval(demo.Job, demo.JobEvery),
		dashboard.WithToken(token), dashboard.WithWrites(), dashboard.WithRefresh(time.Second),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	// The page's API requests, each checked for the request header: the
	// handler also takes the token's header or Sec-Fetch-Site in its
	// place, so only this shows that the page sends it.
	var mu sync.Mutex
	var unmarked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") && r.Header.Get(dashboard.RequestHeader) != "1" {
			mu.Lock()
			unmarked = append(unmarked, r.Method+" "+r.URL.String())
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, unmarked, "API requests without %s", dashboard.RequestHeader)
	})
	dir := shotDir(t)
	noErrors := func(page string) {
		t.Helper()
		require.Empty(t, console.get(), "console errors on the %s page", page)
		require.Empty(t, eval[string](t, ctx, `document.getElementById("error").textContent`), "error banner on the %s page", page)
	}

	t.Run("token", func(t *testing.T) {
		// The token of the URL is kept for the tab and dropped from the URL
		// in place: no history entry, and not in the tab's history.
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
		before := eval[int](t, ctx, `history.length`)
		open(t, ctx, srv.URL+"/#token="+token, "schema")
		require.Equal(t, "", eval[string](t, ctx, `location.hash`))
		require.NotContains(t, eval[string](t, ctx, `location.href`), token)
		require.Equal(t, before+1, eval[int](t, ctx, `history.length`), "one entry: the page's, none for dropping the token")
		require.Equal(t, token, eval[string](t, ctx, `sessionStorage.getItem("redschema-token")`))

		// Two wrong tokens, then the right one: the page starts once, and
		// a route change loads the page once.
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#token=wrong-1")))
		for _, tok := range []string{"wrong-2", "wrong-3", token} {
			require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#tokenbox"))))
			require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#token"), tok)))
			click(t, ctx, "#tokensave")
		}
		waitJS(t, ctx, `document.body.dataset.loaded === "schema"`)
		require.Equal(t, 1, eval[int](t, ctx, `state.starts`))
		routes := eval[int](t, ctx, `state.routes`)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#locks")))
		waitJS(t, ctx, `document.body.dataset.loaded === "locks"`)
		require.Equal(t, routes+1, eval[int](t, ctx, `state.routes`), "one route per hash change")
		require.Equal(t, 1, eval[int](t, ctx, `state.starts`))
		require.Empty(t, eval[string](t, ctx, `document.getElementById("error").textContent`))
		refused := console.take() // the browser logs each 401 it got
		require.Len(t, refused, 3, "one refused config request per wrong token: %q", refused)
		for _, m := range refused {
			require.Contains(t, m, "401")
		}
	})

	t.Run("schema", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
		before := env.Keys()
		open(t, ctx, srv.URL+"/#token="+token, "schema")
		// A key may expire while the page loads (see requireBrowsed).
		listed, err := strconv.Atoi(text(t, ctx, "#stat-keys"))
		require.NoError(t, err)
		lo, hi := keyCounts(before, env.Keys(), func(string) string { return "" })
		require.True(t, lo[""] <= listed && listed <= hi[""], "%d keys shown, %d-%d under the prefix", listed, lo[""], hi[""])
		require.Equal(t, "1", text(t, ctx, "#stat-strays"))
		jobs := `tr[data-pattern="` + env.NS.Prefix + `queue:{{queue_name}}:jobs"]`
		require.Contains(t, text(t, ctx, jobs), "queue")
		require.NotEmpty(t, eval[string](t, ctx, `document.querySelector('`+jobs+`').title`), "the pattern's purpose")

		// The largest keys of a pattern: the bulk queue's jobs hash first.
		bulkJobs := env.NS.Prefix + "queue:{" + bulkQueue + "}:jobs"
		require.Equal(t, bulkJobs, eval[string](t, ctx, `document.querySelector('`+jobs+` details.largest li code').textContent`))

		// The stray, by prefix, and the hint of the prefix it would match
		// under.
		guess := env.NS.Prefix + strayPrefix
		require.Equal(t, "1", text(t, ctx, `tr[data-prefix="`+guess+`"] td:nth-child(2)`))
		hint := text(t, ctx, `[data-guess="`+guess+`"]`)
		require.True(t, strings.HasPrefix(hint, "1 of 1 keys that match no pattern (DB 0) are under "+guess), hint)
		require.Contains(t, hint, "run redschema serve -prefix "+guess)

		// Inspect's "more" appends the next pages of a hash of more
		// fields than one page.
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#inspect-key"), bulkJobs)))
		click(t, ctx, "#inspect-form button")
		waitJS(t, ctx, `!!document.querySelector('#inspect-out button[data-action="more"]')`)
		shown := func() int {
			return eval[int](t, ctx, `state.inspect.value.items.length`)
		}
		firstPage := shown()
		require.Less(t, firstPage, bulkPending)
		for range bulkPending {
			if eval[bool](t, ctx, `!document.querySelector('#inspect-out button[data-action="more"]')`) {
				break
			}
			before := shown()
			click(t, ctx, `#inspect-out button[data-action="more"]`)
			waitJS(t, ctx, fmt.Sprintf(`state.inspect.value.items.length > %d || !state.inspect.value.next`, before))
		}
		waitJS(t, ctx, `!document.querySelector('#inspect-out button[data-action="more"]')`)
		require.Equal(t, bulkPending, shown(), "the live jobs (dead letters are kept apart)")
		out := text(t, ctx, "#inspect-out")
		for _, id := range []string{"bulk-000", "bulk-149"} {
			require.Contains(t, out, id)
		}
		noErrors("schema")
		require.Regexp(t, `^updated \d\d:\d\d:\d\d$`, text(t, ctx, "#updated"))
		require.True(t, eval[bool](t, ctx, `document.getElementById("loading").hidden && document.getElementById("stale").hidden`))
		noErrors("schema")

		key := env.NS.Prefix + "queue:dlq:{" + demo.Queue + "}"
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#inspect-key"), key)))
		click(t, ctx, "#inspect-form button")
		waitJS(t, ctx, `document.getElementById("inspect-out").textContent.includes("package queue")`)
		require.Contains(t, text(t, ctx, "#inspect-out"), demo.DeadError)
		atBothWidths(t, ctx, dir, "schema", "schema")
		noErrors("schema")

		// A refresh that fails marks the page stale; the next good one
		// clears the mark.
		eval[bool](t, ctx, `(() => { window.__fetch = window.fetch; window.fetch = () => Promise.reject(new Error("offline")); return true; })()`)
		waitJS(t, ctx, `!document.getElementById("stale").hidden`)
		eval[bool](t, ctx, `(() => { window.fetch = window.__fetch; return true; })()`)
		waitJS(t, ctx, `document.getElementById("stale").hidden && document.getElementById("error").textContent === ""`)
		noErrors("schema")
	})

	t.Run("server", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#server", "server")
		require.Positive(t, eval[int](t, ctx, `document.querySelectorAll("#sv-detail .node").length`))
		if env.Real() {
			require.Contains(t, text(t, ctx, "#sv-role-0"), "master")
			require.Regexp(t, `\d`, text(t, ctx, "#sv-mem-0"))
			require.Regexp(t, `%$`, text(t, ctx, "#sv-hit-0"))
			require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#sv-slowlog-0").length`))
		} else {
			require.Contains(t, text(t, ctx, "#sv-detail .node .bad"), "INFO", "miniredis's missing INFO sections, in the node's row")
		}
		atBothWidths(t, ctx, dir, "server", "server")
		noErrors("server")
	})

	t.Run("keys", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#keys", "keys")
		require.Equal(t, env.NS.Prefix, text(t, ctx, "#keys-prefix"))
		before := env.Keys()
		all := len(before)
		require.Equal(t, min(all, 100), eval[int](t, ctx, `document.querySelectorAll("#keys-table tr[data-key]").length`))
		atBothWidths(t, ctx, dir, "keys", "keys")

		// Pages of 50: the next page button walks the keyspace.
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#keys-count"), "50")))
		eval[bool](t, ctx, `document.getElementById("keys-count").dispatchEvent(new Event("change"))`)
		seen := map[string]bool{}
		for page := 0; ; page++ {
			require.Less(t, page, 50)
			waitJS(t, ctx, `document.body.dataset.loaded === "keys" && !state.keysDirty`)
			for _, k := range eval[[]string](t, ctx, `[...document.querySelectorAll("#keys-table tr[data-key]")].map(tr => tr.dataset.key)`) {
				require.False(t, seen[k], "%s twice", k)
				seen[k] = true
			}
			if eval[bool](t, ctx, `!!document.getElementById("keys-done")`) {
				break
			}
			eval[bool](t, ctx, `(() => { delete document.body.dataset.loaded; return true; })()`)
			click(t, ctx, "#keys-next")
		}
		requireBrowsed(t, env.NS.Prefix, seen, before, env.Keys())

		// A pattern (500 a page: the two queues' keys on one); a key opens
		// in the inspect view; a session key is shown without its ID and
		// not as a link.
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#keys-count"), "500")))
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#keys-match"), "queue:*")))
		click(t, ctx, "#keys-form button")
		jobs := env.NS.Prefix + "queue:{" + demo.Queue + "}:jobs"
		waitJS(t, ctx, `state.keysReply.match.endsWith("queue:*") && !state.keysDirty && !!document.querySelector('#keys-table tr[data-key="`+jobs+`"]')`)
		for _, k := range eval[[]string](t, ctx, `[...document.querySelectorAll("#keys-table tr[data-key]")].map(tr => tr.dataset.key)`) {
			require.True(t, strings.HasPrefix(k, env.NS.Prefix+"queue:"), k)
		}
		click(t, ctx, `#keys-table tr[data-key="`+jobs+`"] a.key`)
		waitJS(t, ctx, `document.getElementById("keys-inspect").textContent.includes("package queue")`)
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#keys-match"), "session:user:*")))
		click(t, ctx, "#keys-form button")
		waitJS(t, ctx, fmt.Sprintf(`document.querySelectorAll("#keys-table tr[data-key]").length === %d`, demo.Sessions))
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#keys-table a.key").length`))
		for _, k := range env.Keys() {
			if id, ok := strings.CutPrefix(k, env.NS.Prefix+"session:user:{"+demo.User+"}:"); ok {
				require.NotContains(t, eval[string](t, ctx, `document.body.textContent`), id)
			}
		}
		noErrors("keys")
	})

	t.Run("queues", func(t *testing.T) {
		q, err := queue.New[demo.Mail](env.Client, demo.Queue, queue.WithNamespace(env.NS))
		require.NoError(t, err)
		stats := func(q *queue.Queue[demo.Mail]) queue.Stats {
			t.Helper()
			st, err := q.Stats(env.Ctx())
			require.NoError(t, err)
			return st
		}
		rows := func(state string) int {
			t.Helper()
			return eval[int](t, ctx, `document.querySelectorAll("#jobs-`+state+` tr[data-job]").length`)
		}
		waitRows := func(state string, n int) {
			t.Helper()
			waitJS(t, ctx, fmt.Sprintf(`document.querySelectorAll("#jobs-%s tr[data-job]").length === %d`, state, n))
		}

		// The list, the dead letters (the page's first tab) and the 90-day
		// chart, drawn in full on the first load.
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue, "queues")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#queue-table tr[data-queue="`+demo.Queue+`"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{demo.Queue, fmt.Sprint(demo.ReadyHigh), fmt.Sprint(demo.ReadyNormal), fmt.Sprint(demo.ReadyLow),
			fmt.Sprint(demo.Scheduled), fmt.Sprint(demo.InFlight), fmt.Sprint(demo.Dead), fmt.Sprint(demo.Processed), fmt.Sprint(demo.Failed)}, row[:9])
		require.Equal(t, demo.Dead, rows("dead"))
		require.Contains(t, text(t, ctx, "#jobs-dead"), demo.DeadError)
		for _, series := range []string{"processed", "failed"} {
			require.Equal(t, 90, eval[int](t, ctx, `document.querySelector('#queue-chart polyline[data-series="`+series+`"]').getAttribute("points").split(" ").length`), series)
		}
		require.Contains(t, text(t, ctx, "#queue-chart"), "per day")
		require.Regexp(t, `processed \d+`, text(t, ctx, "#queue-detail .legend"))
		noErrors("queues")
		atBothWidths(t, ctx, dir, "queues", "queues")

		// At 420 px a dead letter's actions are on screen without scrolling
		// the page or the table sideways.
		setWidth(t, ctx, narrow)
		right := eval[float64](t, ctx, `document.querySelector('#jobs-dead tr[data-job] button[data-action="requeue"]').getBoundingClientRect().right`)
		require.LessOrEqual(t, right, float64(narrow))
		setWidth(t, ctx, wide)

		// Pause (asked first) and resume.
		click(t, ctx, `button[data-action="pause"]`)
		waitJS(t, ctx, `!!document.getElementById("queue-paused")`)
		require.Equal(t, []string{"Pause queue " + demo.Queue + "? Workers stop taking its jobs."}, confirms(t, ctx))
		require.True(t, stats(q).Paused)
		// The table re-renders after the detail pane: wait for its row.
		waitJS(t, ctx, `(document.querySelector('#queue-table tr[data-queue="`+demo.Queue+`"]')?.textContent || "").includes("paused")`)
		click(t, ctx, `button[data-action="resume"]`)
		waitJS(t, ctx, `!document.getElementById("queue-paused")`)
		require.False(t, stats(q).Paused)

		// A job's page: payload, attempts' errors.
		click(t, ctx, `#jobs-dead tr[data-job="`+demo.DeadIDs[1]+`"] a`)
		waitJS(t, ctx, `!!document.getElementById("job-payload")`)
		require.Contains(t, text(t, ctx, "#job-detail h3"), demo.DeadIDs[1])
		require.Contains(t, text(t, ctx, "#job-payload"), demo.DeadIDs[1]+"@example.com")
		require.Contains(t, text(t, ctx, "#job-errors"), demo.DeadError)
		require.Contains(t, text(t, ctx, "#job-detail dl"), "dead")
		require.Contains(t, text(t, ctx, "#job-detail dl"), "Failed attempts1 of 1", "a dead letter of no retries failed its one attempt")
		atBothWidths(t, ctx, dir, "queues-job", "queues")
		noErrors("queues")

		// Requeue selected: the dead letter is ready again, at its priority.
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue+"/dead", "queues")
		click(t, ctx, `#jobs-dead tr[data-job="`+demo.DeadIDs[0]+`"] input[type=checkbox]`)
		click(t, ctx, `button[data-action="requeue-selected"]`)
		waitRows("dead", demo.Dead-1)
		st := stats(q)
		require.EqualValues(t, demo.Dead-1, st.Dead)
		require.EqualValues(t, demo.ReadyHigh+1, st.Ready[queue.High])
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue+"/pending", "queues")
		waitJS(t, ctx, `!!document.querySelector('#jobs-pending tr[data-job="`+demo.DeadIDs[0]+`"]')`)

		// Delete selected (asked first).
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue+"/dead", "queues")
		click(t, ctx, `#jobs-dead tr[data-job="`+demo.DeadIDs[1]+`"] input[type=checkbox]`)
		click(t, ctx, `button[data-action="delete-selected"]`)
		waitRows("dead", 0)
		require.Equal(t, []string{"Delete the selected jobs of " + demo.Queue + "?"}, confirms(t, ctx))
		require.Zero(t, stats(q).Dead)
		_, err = q.Peek(env.Ctx(), demo.DeadIDs[1])
		require.ErrorIs(t, err, queue.ErrNotFound)
		noErrors("queues")

		// Cancel the job in flight (asked first): its worker is told (the
		// cancel hash holds its ID) and settles it.
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue+"/active", "queues")
		waitRows("active", demo.InFlight)
		active := eval[string](t, ctx, `document.querySelector("#jobs-active tr[data-job]").dataset.job`)
		click(t, ctx, `#jobs-active tr[data-job="`+active+`"] button[data-action="cancel"]`)
		cancels := env.NS.Prefix + "queue:{" + demo.Queue + "}:cancel"
		require.Eventually(t, func() bool { return env.Client.HExists(env.Ctx(), cancels, active).Val() }, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, []string{"Cancel running job " + active + "?"}, confirms(t, ctx))
		noErrors("queues")

		// Run a scheduled job now: it is ready at once.
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue+"/scheduled", "queues")
		waitRows("scheduled", demo.Scheduled)
		scheduled := eval[string](t, ctx, `document.querySelector("#jobs-scheduled tr[data-job]").dataset.job`)
		click(t, ctx, `#jobs-scheduled tr[data-job="`+scheduled+`"] button[data-action="run-now"]`)
		waitRows("scheduled", 0)
		st = stats(q)
		require.Zero(t, st.Delayed[queue.Normal])
		require.EqualValues(t, demo.ReadyNormal+1, st.Ready[queue.Normal])
		noErrors("queues")

		// Paging and search over the bulk queue's pending jobs.
		open(t, ctx, srv.URL+"/#queues/"+bulkQueue+"/pending", "queues")
		waitRows("pending", 25)
		require.Equal(t, fmt.Sprintf("1–25 of %d", bulkPending), text(t, ctx, "#queue-range"))
		require.True(t, eval[bool](t, ctx, `document.querySelector('#queue-detail [data-action="prev"]').disabled`))
		first := eval[[]string](t, ctx, `[...document.querySelectorAll("#jobs-pending tr[data-job]")].map(tr => tr.dataset.job)`)
		click(t, ctx, `#queue-detail [data-action="next"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "26–50 of %d"`, bulkPending))
		second := eval[[]string](t, ctx, `[...document.querySelectorAll("#jobs-pending tr[data-job]")].map(tr => tr.dataset.job)`)
		require.Len(t, second, 25)
		require.NotContains(t, first, second[0])
		click(t, ctx, `#queue-detail [data-action="prev"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "1–25 of %d"`, bulkPending))
		// Typed and sent in one task: a refresh may redraw the form between two.
		require.True(t, eval[bool](t, ctx, `(() => { const i = document.getElementById("queue-q"); i.value = "bulk-077"; i.form.requestSubmit(); return true; })()`))
		// The search filters the 200 jobs read from the page's start.
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "1 matching in 1–%d of %d"`, bulkPending, bulkPending))
		require.Equal(t, []string{"bulk-077"}, eval[[]string](t, ctx, `[...document.querySelectorAll("#jobs-pending tr[data-job]")].map(tr => tr.dataset.job)`))
		atBothWidths(t, ctx, dir, "queues-bulk", "queues")

		// The queue's periodic jobs.
		require.Equal(t, bulkSchedule, text(t, ctx, `#queue-schedules tr[data-schedule="`+bulkSchedule+`"] td`))
		require.Contains(t, text(t, ctx, `#queue-schedules tr[data-schedule="`+bulkSchedule+`"]`), "0 3 * * *")

		// A job's headers, on its page.
		open(t, ctx, srv.URL+"/#queues/"+bulkQueue+"/dead/bulk-dead-03", "queues")
		require.Contains(t, text(t, ctx, "#job-headers"), "trace-bulk-dead-03")
		require.Contains(t, text(t, ctx, "#job-errors"), "bulk: failure 3")

		// A job whose stored entry does not parse is a row of its own,
		// with only its delete action, which deletes it.
		bq, err := queue.New[demo.Mail](env.Client, bulkQueue, queue.WithNamespace(env.NS))
		require.NoError(t, err)
		require.NoError(t, env.Client.HSet(env.Ctx(), env.NS.Prefix+"queue:{"+bulkQueue+"}:jobs", "bulk-000", "{not json").Err())
		open(t, ctx, srv.URL+"/#queues/"+bulkQueue+"/pending", "queues")
		bad := `#jobs-pending tr[data-job="bulk-000"]`
		waitJS(t, ctx, `!!document.querySelector('`+bad+`.corrupt')`)
		require.Contains(t, text(t, ctx, bad), "corrupt: ")
		require.Equal(t, []string{"delete"}, eval[[]string](t, ctx, `[...document.querySelectorAll('`+bad+` button')].map(b => b.dataset.action)`))
		click(t, ctx, bad+` button[data-action="delete"]`)
		waitJS(t, ctx, `!document.querySelector('`+bad+`')`)
		require.Equal(t, []string{"Delete job bulk-000?"}, confirms(t, ctx))
		require.EqualValues(t, bulkPending-1, stats(bq).Ready[queue.Low])
		noErrors("queues")

		// Requeue two selected, delete two selected (asked first): the
		// many-ID forms.
		open(t, ctx, srv.URL+"/#queues/"+bulkQueue+"/dead", "queues")
		waitRows("dead", 25)
		require.Equal(t, fmt.Sprintf("1–25 of %d", bulkDead), text(t, ctx, "#queue-range"))
		pick := func(ids ...string) {
			t.Helper()
			for _, id := range ids {
				click(t, ctx, `#jobs-dead tr[data-job="`+id+`"] input[type=checkbox]`)
			}
		}
		dead := eval[[]string](t, ctx, `[...document.querySelectorAll("#jobs-dead tr[data-job]")].map(tr => tr.dataset.job)`)
		pick(dead[0], dead[1])
		click(t, ctx, `button[data-action="requeue-selected"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "1–25 of %d"`, bulkDead-2))
		st = stats(bq)
		require.EqualValues(t, bulkDead-2, st.Dead)
		require.EqualValues(t, 2, st.Ready[queue.High])
		pick(dead[2], dead[3])
		click(t, ctx, `button[data-action="delete-selected"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("queue-range").textContent === "1–25 of %d"`, bulkDead-4))
		require.Equal(t, []string{"Delete the selected jobs of " + bulkQueue + "?"}, confirms(t, ctx))
		require.EqualValues(t, bulkDead-4, stats(bq).Dead)
		for _, id := range dead[2:4] {
			_, err := bq.Peek(env.Ctx(), id)
			require.ErrorIs(t, err, queue.ErrNotFound, id)
		}

		// Purge dead (asked first), then requeue all (asked first).
		recordConfirms(t, ctx)
		click(t, ctx, `button[data-action="purge-dead"]`)
		waitRows("dead", 0)
		require.Equal(t, []string{"Delete every dead letter of " + bulkQueue + "?"}, confirms(t, ctx))
		require.Zero(t, stats(bq).Dead)
		require.EqualValues(t, bulkPending-1, stats(bq).Ready[queue.Low])
		// The requeued high jobs first, so that killJobs takes its own.
		for range 2 {
			j, err := bq.TryDequeue(env.Ctx())
			require.NoError(t, err)
			require.NoError(t, bq.Ack(env.Ctx(), j))
		}
		killJobs(t, env, bq, "again", 3)
		waitRows("dead", 3)
		click(t, ctx, `button[data-action="requeue-all"]`)
		waitRows("dead", 0)
		require.Equal(t, []string{"Delete every dead letter of " + bulkQueue + "?", "Requeue every dead letter of " + bulkQueue + "?"}, confirms(t, ctx))
		st = stats(bq)
		require.Zero(t, st.Dead)
		require.EqualValues(t, 3, st.Ready[queue.High])
		noErrors("queues")

		// A queue whose stats hash holds a field this library did not
		// write gets its own row with the reason, naming the key; the
		// others still show, and no error banner hides the page.
		broken, err := queue.New[string](env.Client, "broken", queue.WithNamespace(env.NS))
		require.NoError(t, err)
		_, err = broken.Enqueue(env.Ctx(), "x")
		require.NoError(t, err)
		brokenStats := env.NS.Prefix + "queue:stats:{broken}"
		require.NoError(t, env.Client.HSet(env.Ctx(), brokenStats, "total_processed", "many").Err())
		open(t, ctx, srv.URL+"/#queues/"+demo.Queue, "queues")
		waitJS(t, ctx, `!!document.querySelector('#queue-table tr.corrupt[data-queue="broken"]')`)
		require.Contains(t, text(t, ctx, `#queue-table tr[data-queue="broken"] td.bad`), brokenStats)
		require.Equal(t, demo.Queue, text(t, ctx, `#queue-table tr[data-queue="`+demo.Queue+`"] td`))
		noErrors("queues")
	})

	t.Run("sessions", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#sessions/"+demo.User, "sessions")
		require.Equal(t, fmt.Sprint(demo.Sessions), text(t, ctx, "#session-count"))
		require.Equal(t, "login", text(t, ctx, "#user-status"))
		require.Equal(t, fmt.Sprint(demo.Sessions), eval[string](t, ctx, `document.querySelector('#user-table tr[data-user="`+demo.User+`"] td:nth-child(2)').textContent`))
		noErrors("sessions")
		atBothWidths(t, ctx, dir, "sessions", "sessions")

		// Revoke one session from the page.
		click(t, ctx, `#session-table tr[data-session] button[data-action="revoke"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("session-count").textContent === "%d"`, demo.Sessions-1))
		store, err := session.New(env.Client, session.WithNamespace(env.NS))
		require.NoError(t, err)
		live, err := store.List(env.Ctx(), demo.User)
		require.NoError(t, err)
		require.Len(t, live, demo.Sessions-1)
		noErrors("sessions")

		// Block, then revoke all: each asks first.
		click(t, ctx, `button[data-action="block"]`)
		waitJS(t, ctx, `document.getElementById("user-status").textContent === "blocked"`)
		require.Len(t, confirms(t, ctx), 1)
		require.Contains(t, confirms(t, ctx)[0], "Block "+demo.User)
		click(t, ctx, `button[data-action="unblock"]`)
		waitJS(t, ctx, `document.getElementById("user-status").textContent !== "blocked"`)
		click(t, ctx, `button[data-action="revoke all"]`)
		waitJS(t, ctx, `document.getElementById("session-count").textContent === "0"`)
		require.Len(t, confirms(t, ctx), 2)
		require.Contains(t, confirms(t, ctx)[1], "Revoke every session")
		live, err = store.List(env.Ctx(), demo.User)
		require.NoError(t, err)
		require.Empty(t, live)
		noErrors("sessions")
	})

	t.Run("ratelimits", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#ratelimits/id/"+demo.LimitedID, "ratelimits")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#rl-lookup-table tr[data-limiter="api"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{"api", "fixed 10/minute", "yes", fmt.Sprint(demo.LimitPerMinute), fmt.Sprint(demo.LimitPerMinute - demo.Used)}, row[:5])
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#rl-block-table tr[data-block]").length`))
		require.Contains(t, text(t, ctx, "#rl-keys"), demo.APIKey)
		noErrors("ratelimits")
		atBothWidths(t, ctx, dir, "ratelimits", "ratelimits")

		click(t, ctx, `#rl-block-table tr[data-block="`+demo.BlockedID+`"] button[data-action="lift"]`)
		waitJS(t, ctx, `document.querySelectorAll("#rl-block-table tr[data-block]").length === 0`)
		res, err := lim.Peek(env.Ctx(), demo.BlockedID)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		noErrors("ratelimits")

		// Lifting a block keeps the counters (Limiter.Unblock): the
		// identifier that had used some of its quota still has.
		require.NoError(t, lim.Block(env.Ctx(), demo.LimitedID, time.Hour))
		waitJS(t, ctx, `document.querySelectorAll('#rl-block-table tr[data-block="`+demo.LimitedID+`"]').length === 1`)
		click(t, ctx, `#rl-block-table tr[data-block="`+demo.LimitedID+`"] button[data-action="lift"]`)
		waitJS(t, ctx, `document.querySelectorAll("#rl-block-table tr[data-block]").length === 0`)
		res, err = lim.Peek(env.Ctx(), demo.LimitedID)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		require.Equal(t, demo.LimitPerMinute-demo.Used, res.Remaining, "counters kept")
		noErrors("ratelimits")
	})

	t.Run("presence", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#presence/"+demo.User, "presence")
		require.Equal(t, "1", text(t, ctx, "#pr-online"))
		require.Equal(t, "1 / 2", text(t, ctx, "#pr-admins-online"))
		require.Equal(t, fmt.Sprint(len(demo.Conversations)), text(t, ctx, "#pr-unread"))
		require.Equal(t, fmt.Sprint(len(demo.Conversations)-demo.AdminCapacity), text(t, ctx, "#pr-backlog"))
		require.Equal(t, len(demo.Devices), eval[int](t, ctx, `document.querySelectorAll("#pr-conns tr[data-conn]").length`))
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#pr-admin-table tr[data-admin="`+demo.Admin+`"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{demo.Admin, "online", "", fmt.Sprint(demo.AdminCapacity), fmt.Sprint(demo.AdminCapacity)}, row)
		noErrors("presence")
		atBothWidths(t, ctx, dir, "presence", "presence")
	})

	t.Run("locks", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#locks", "locks")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#lk-locks tr[data-lock="file/`+demo.LockedFile+`"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{"file", demo.LockedFile, demo.Worker}, row[:3])
		sem := eval[[]string](t, ctx, `[...document.querySelectorAll('#lk-sems tr[data-sem="gpu/pool"] td')].map(td => td.textContent)`)
		require.Equal(t, fmt.Sprint(demo.SemPermits), sem[2])
		job := eval[[]string](t, ctx, `[...document.querySelectorAll('#lk-jobs tr[data-job="`+demo.Job+`"] td')].map(td => td.textContent)`)
		require.Equal(t, "3600.0s", job[2])
		require.Contains(t, job[3], "in ")
		noErrors("locks")
		atBothWidths(t, ctx, dir, "locks", "locks")

		// A lock key of another type is left out and listed above the
		// tables, naming the key; the locks read still show.
		badLock := env.NS.Prefix + "lock:file:{broken}"
		require.NoError(t, env.Client.HSet(env.Ctx(), badLock, "f", "v").Err())
		open(t, ctx, srv.URL+"/#locks", "locks")
		require.Contains(t, text(t, ctx, "#lk-detail .corrupt"), badLock)
		require.Equal(t, 1, count(t, ctx, `#lk-locks tr[data-lock="file/`+demo.LockedFile+`"]`))
		noErrors("locks")
		require.NoError(t, env.Client.Del(env.Ctx(), badLock).Err())
	})

	t.Run("sensors", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#sensors", "sensors")
		require.Equal(t, "Locations: "+demo.Location+" ", eval[string](t, ctx, `document.getElementById("sn-locations").textContent`))
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#sn-locations a").length`))
		require.Equal(t, demo.Readings, eval[int](t, ctx, `document.querySelectorAll("#sn-latest tr").length - 1`))
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#sn-chart polyline").length`))
		require.Positive(t, eval[int](t, ctx, `document.querySelectorAll("#sn-chart circle").length`))
		noErrors("sensors")
		atBothWidths(t, ctx, dir, "sensors", "sensors")
	})

	t.Run("aimemory", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#aimemory/"+demo.User, "aimemory")
		require.Equal(t, fmt.Sprint(demo.ConvTokens), text(t, ctx, "#ai-tokens"))
		require.Equal(t, demo.Conv, text(t, ctx, "#ai-conv-id"))
		require.Equal(t, fmt.Sprint(demo.ConvMessages), text(t, ctx, "#ai-length"))
		require.Equal(t, demo.ConvMessages-1, eval[int](t, ctx, `document.querySelectorAll("#ai-messages tr").length - 1`))
		noErrors("aimemory")
		atBothWidths(t, ctx, dir, "aimemory", "aimemory")
	})

	t.Run("cache", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#cache", "cache")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#ca-endpoints tr[data-endpoint="GET `+demo.CachedEndpoint+`"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{demo.CachedEndpoint, "GET", fmt.Sprint(demo.CacheEntries), fmt.Sprint(demo.CacheHits), "66.7%"}, row[:5])
		require.Equal(t, fmt.Sprint(demo.CacheEntries), eval[string](t, ctx, `document.querySelector('#ca-tags tr[data-tag="`+demo.CacheTag+`"] td:nth-child(2)').textContent`))
		noErrors("cache")
		atBothWidths(t, ctx, dir, "cache", "cache")

		// An entry's metadata key of another type is left out and listed
		// above the tables, naming the key; the endpoint's other entries
		// still count.
		badMeta := env.NS.Prefix + "cache:meta:cache:api:" + demo.CachedEndpoint + ":GET:{broken}"
		require.NoError(t, env.Client.Set(env.Ctx(), badMeta, "x", time.Hour).Err())
		open(t, ctx, srv.URL+"/#cache", "cache")
		require.Contains(t, text(t, ctx, "#ca-detail .corrupt"), badMeta)
		require.Equal(t, fmt.Sprint(demo.CacheEntries), eval[string](t, ctx, `document.querySelector('#ca-endpoints tr[data-endpoint="GET `+demo.CachedEndpoint+`"] td:nth-child(3)').textContent`))
		noErrors("cache")
		require.NoError(t, env.Client.Del(env.Ctx(), badMeta).Err())
	})

	t.Run("metrics", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#metrics", "metrics")
		require.Equal(t, fmt.Sprint(demo.Requests), text(t, ctx, "#mt-total"))
		require.Equal(t, fmt.Sprint(demo.Errors), text(t, ctx, "#mt-errors"))
		require.Equal(t, fmt.Sprint(demo.Requests), eval[string](t, ctx, `document.querySelector('#mt-endpoints tr[data-endpoint] td:nth-child(2)').textContent`))
		require.Positive(t, eval[int](t, ctx, `document.querySelectorAll('[data-histogram^="api_latency_ms"] rect').length`))
		require.Contains(t, eval[string](t, ctx, `document.querySelector('[data-histogram^="api_latency_ms"] p').textContent`), fmt.Sprintf("count %d", demo.Requests))
		noErrors("metrics")
		atBothWidths(t, ctx, dir, "metrics", "metrics")
	})
}

// requireBrowsed checks the keys the keys page listed (seen) against the
// keys under prefix before and after the browse: a key present in both
// is listed (SCAN's guarantee), and nothing is listed that is in
// neither. A key may expire or be written while the pages load (a
// rate-limit window, a lock's lease), so only those two bounds hold.
// The page shows a session key with its ID replaced by a reference, so
// session keys are checked by count only, per user and template: at
// least those present in both, at most those present in either.
func requireBrowsed(t *testing.T, prefix string, seen map[string]bool, before, after []string) {
	t.Helper()
	shape := func(k string) string {
		// Also a stray session key under another prefix, which the
		// page shows by reference too (keys.Registry.Guess).
		for _, p := range []string{"session:user:", "session:rotation:"} {
			if strings.HasPrefix(k, prefix) && strings.Contains(k, p) {
				return k[:strings.LastIndex(k, ":")+1] + "*"
			}
		}
		return k
	}
	least, most := keyCounts(before, after, shape)
	got := map[string]int{}
	for k := range seen {
		got[shape(k)]++
	}
	for s, n := range most {
		require.GreaterOrEqual(t, got[s], least[s], "keys listed like %s", s)
		require.LessOrEqual(t, got[s], n, "keys listed like %s", s)
	}
	for s := range got {
		require.Contains(t, most, s, "listed, never under the prefix")
	}
}

// keyCounts returns, for each shape of key, how many keys are in both
// snapshots and how many in either (a SCAN may return a key twice; it
// counts once): a count taken between them lies in that range.
func keyCounts(before, after []string, shape func(string) string) (both, either map[string]int) {
	in := map[string]int{} // 1 before, 2 after, 3 both
	for _, k := range before {
		in[k] |= 1
	}
	for _, k := range after {
		in[k] |= 2
	}
	both, either = map[string]int{}, map[string]int{}
	for k, w := range in {
		either[shape(k)]++
		if w == 3 {
			both[shape(k)]++
		}
	}
	return both, either
}
