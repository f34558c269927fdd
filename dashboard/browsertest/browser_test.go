package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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

func (c *consoleLog) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// shotDir is where screenshots go: $DASHBOARD_SCREENSHOTS, or a temp dir.
func shotDir(t *testing.T) string {
	if d := os.Getenv("DASHBOARD_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
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

// waitJS polls a JS expression until it is true.
func waitJS(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second)))
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

func TestDashboardInBrowser(t *testing.T) {
	ctx, console := browser(t)
	env := harness.New(t)
	require.NoError(t, demo.Fill(env.Ctx(), env.Client, env.NS))
	lim, err := demo.Limiter(env.Client, env.NS)
	require.NoError(t, err)
	h, err := dashboard.New(dashboard.WithClient(env.Client), dashboard.WithNamespace(env.NS), dashboard.WithLimiter("api", lim),
		dashboard.WithInterval(demo.Job, demo.JobEvery),
		dashboard.WithToken(token), dashboard.WithWrites(), dashboard.WithRefresh(time.Second),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dir := shotDir(t)
	noErrors := func(page string) {
		t.Helper()
		require.Empty(t, console.get(), "console errors on the %s page", page)
		require.Empty(t, eval[string](t, ctx, `document.getElementById("error").textContent`), "error banner on the %s page", page)
	}

	t.Run("schema", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#token="+token, "schema")
		require.Equal(t, fmt.Sprint(len(env.Keys())), text(t, ctx, "#stat-keys"))
		require.Equal(t, "0", text(t, ctx, "#stat-strays"))
		require.Contains(t, text(t, ctx, `tr[data-pattern="`+env.NS.Prefix+`queue:{{queue_name}}:jobs"]`), "queue")
		noErrors("schema")

		key := env.NS.Prefix + "queue:dlq:{" + demo.Queue + "}"
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#inspect-key"), key)))
		click(t, ctx, "#inspect-form button")
		waitJS(t, ctx, `document.getElementById("inspect-out").textContent.includes("package queue")`)
		require.Contains(t, text(t, ctx, "#inspect-out"), demo.DeadError)
		screenshot(t, ctx, dir, "schema")
		noErrors("schema")
	})

	t.Run("queues", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#queues", "queues")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#queue-table tr[data-queue="`+demo.Queue+`"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{demo.Queue, fmt.Sprint(demo.ReadyHigh), fmt.Sprint(demo.ReadyNormal), fmt.Sprint(demo.ReadyLow),
			fmt.Sprint(demo.Scheduled), fmt.Sprint(demo.InFlight), fmt.Sprint(demo.Dead), fmt.Sprint(demo.Processed), fmt.Sprint(demo.Failed)}, row[:9])
		require.Equal(t, demo.Dead, eval[int](t, ctx, `document.querySelectorAll("#jobs-dead tr[data-job]").length`))
		require.Equal(t, demo.InFlight, eval[int](t, ctx, `document.querySelectorAll("#jobs-active tr[data-job]").length`))
		require.Contains(t, text(t, ctx, "#jobs-dead"), demo.DeadError)
		waitJS(t, ctx, `!!document.querySelector("#queue-chart polyline")`) // two samples of the totals make a line
		noErrors("queues")
		screenshot(t, ctx, dir, "queues")

		// Requeue a dead letter from the page.
		click(t, ctx, `#jobs-dead tr[data-job="`+demo.DeadIDs[0]+`"] button[data-action="requeue"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.querySelectorAll("#jobs-dead tr[data-job]").length === %d`, demo.Dead-1))
		waitJS(t, ctx, `!!document.querySelector('#jobs-pending tr[data-job="`+demo.DeadIDs[0]+`"]')`)
		q, err := queue.New[demo.Mail](env.Client, demo.Queue, queue.WithNamespace(env.NS))
		require.NoError(t, err)
		st, err := q.Stats(env.Ctx())
		require.NoError(t, err)
		require.EqualValues(t, demo.Dead-1, st.Dead)
		require.EqualValues(t, demo.ReadyHigh+1, st.Ready[queue.High])
		noErrors("queues")
	})

	t.Run("sessions", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#sessions/"+demo.User, "sessions")
		require.Equal(t, fmt.Sprint(demo.Sessions), text(t, ctx, "#session-count"))
		require.Equal(t, "login", text(t, ctx, "#user-status"))
		require.Equal(t, fmt.Sprint(demo.Sessions), eval[string](t, ctx, `document.querySelector('#user-table tr[data-user="`+demo.User+`"] td:nth-child(2)').textContent`))
		noErrors("sessions")
		screenshot(t, ctx, dir, "sessions")

		// Revoke one session from the page.
		click(t, ctx, `#session-table tr[data-session] button[data-action="revoke"]`)
		waitJS(t, ctx, fmt.Sprintf(`document.getElementById("session-count").textContent === "%d"`, demo.Sessions-1))
		store, err := session.New(env.Client, session.WithNamespace(env.NS))
		require.NoError(t, err)
		live, err := store.List(env.Ctx(), demo.User)
		require.NoError(t, err)
		require.Len(t, live, demo.Sessions-1)
		noErrors("sessions")
	})

	t.Run("ratelimits", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#ratelimits/id/"+demo.LimitedID, "ratelimits")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#rl-lookup-table tr[data-limiter="api"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{"api", "fixed 10/minute", "yes", fmt.Sprint(demo.LimitPerMinute), fmt.Sprint(demo.LimitPerMinute - demo.Used)}, row[:5])
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#rl-block-table tr[data-block]").length`))
		require.Contains(t, text(t, ctx, "#rl-keys"), demo.APIKey)
		noErrors("ratelimits")
		screenshot(t, ctx, dir, "ratelimits")

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
		screenshot(t, ctx, dir, "presence")
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
		screenshot(t, ctx, dir, "locks")
	})

	t.Run("sensors", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#sensors", "sensors")
		require.Equal(t, "Locations: "+demo.Location+" ", eval[string](t, ctx, `document.getElementById("sn-locations").textContent`))
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#sn-locations a").length`))
		require.Equal(t, demo.Readings, eval[int](t, ctx, `document.querySelectorAll("#sn-latest tr").length - 1`))
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#sn-chart polyline").length`))
		require.Positive(t, eval[int](t, ctx, `document.querySelectorAll("#sn-chart circle").length`))
		noErrors("sensors")
		screenshot(t, ctx, dir, "sensors")
	})

	t.Run("aimemory", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#aimemory/"+demo.User, "aimemory")
		require.Equal(t, fmt.Sprint(demo.ConvTokens), text(t, ctx, "#ai-tokens"))
		require.Equal(t, demo.Conv, text(t, ctx, "#ai-conv-id"))
		require.Equal(t, fmt.Sprint(demo.ConvMessages), text(t, ctx, "#ai-length"))
		require.Equal(t, demo.ConvMessages-1, eval[int](t, ctx, `document.querySelectorAll("#ai-messages tr").length - 1`))
		noErrors("aimemory")
		screenshot(t, ctx, dir, "aimemory")
	})

	t.Run("cache", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#cache", "cache")
		row := eval[[]string](t, ctx, `[...document.querySelectorAll('#ca-endpoints tr[data-endpoint="GET `+demo.CachedEndpoint+`"] td')].map(td => td.textContent)`)
		require.Equal(t, []string{demo.CachedEndpoint, "GET", fmt.Sprint(demo.CacheEntries), fmt.Sprint(demo.CacheHits), "66.7%"}, row[:5])
		require.Equal(t, fmt.Sprint(demo.CacheEntries), eval[string](t, ctx, `document.querySelector('#ca-tags tr[data-tag="`+demo.CacheTag+`"] td:nth-child(2)').textContent`))
		noErrors("cache")
		screenshot(t, ctx, dir, "cache")
	})

	t.Run("metrics", func(t *testing.T) {
		open(t, ctx, srv.URL+"/#metrics", "metrics")
		require.Equal(t, fmt.Sprint(demo.Requests), text(t, ctx, "#mt-total"))
		require.Equal(t, fmt.Sprint(demo.Errors), text(t, ctx, "#mt-errors"))
		require.Equal(t, fmt.Sprint(demo.Requests), eval[string](t, ctx, `document.querySelector('#mt-endpoints tr[data-endpoint] td:nth-child(2)').textContent`))
		require.Positive(t, eval[int](t, ctx, `document.querySelectorAll('[data-histogram^="api_latency_ms"] rect').length`))
		require.Contains(t, eval[string](t, ctx, `document.querySelector('[data-histogram^="api_latency_ms"] p').textContent`), fmt.Sprintf("count %d", demo.Requests))
		noErrors("metrics")
		screenshot(t, ctx, dir, "metrics")
	})
}
