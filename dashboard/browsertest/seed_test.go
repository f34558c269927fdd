package browsertest

import (
	"bufio"
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
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/session"
)

// seedRedis returns the URL the seed program and the dashboard share on
// the suite's backend (on miniredis, a server of this test's own whose
// clock runs: the program's retries wait on server time), the client
// options for the dashboard, and a key prefix of this test's own.
func seedRedis(t *testing.T) (string, *redis.UniversalOptions, string) {
	prefix := fmt.Sprintf("zentoria-%04x:", time.Now().UnixNano()%0x10000)
	switch harness.Selected() {
	case harness.Mini:
		m := miniredis.RunT(t)
		return "redis://" + m.Addr() + "/0", &redis.UniversalOptions{Addrs: []string{m.Addr()}, ContextTimeoutEnabled: true}, prefix
	case harness.Server:
		addr := os.Getenv("REDIS_ADDR")
		return "redis://" + addr + "/0", &redis.UniversalOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true}, prefix
	}
	addrs := os.Getenv("REDIS_CLUSTER_ADDRS")
	return addrs, &redis.UniversalOptions{Addrs: strings.Split(addrs, ","), IsClusterMode: true, ContextTimeoutEnabled: true}, prefix
}

// seedProgram is one of the seed-system programs of examples/.
type seedProgram struct {
	name      string // its directory under examples/
	module    bool   // a module of its own, built in its directory
	prefixEnv string // the variable that sets its key prefix
	serves    bool   // it serves after its demo (else it ends after it)
}

var aiPlatform = seedProgram{name: "ai-platform", prefixEnv: "KEY_PREFIX", serves: true}

// runSeedProgram builds examples/ai-platform (seed 001's system), runs it
// against url under prefix until its demo is done and it serves, then
// stops it: what it leaves in Redis is a realistic seed 001 keyspace.
func runSeedProgram(t *testing.T, url, prefix string) string {
	t.Helper()
	return runSeed(t, aiPlatform, url, prefix)
}

// runSeed builds the seed program p, runs it against url under prefix
// until its demo is done and it serves (then stops it) or it ends, and
// requires its own audit to report no problem. It returns its output.
func runSeed(t *testing.T, p seedProgram, url, prefix string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), p.name)
	build := exec.Command("go", "build", "-o", bin, "./examples/"+p.name)
	build.Dir = root
	if p.module {
		build = exec.Command("go", "build", "-o", bin, ".")
		build.Dir = filepath.Join(root, "examples", p.name)
	}
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the seed program %s: %s", p.name, out)

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "REDIS_URL="+url, p.prefixEnv+"="+prefix, "ADDR=127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log strings.Builder
	deadline := time.After(2 * time.Minute)
	for served := false; !served; {
		select {
		case l, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				if p.serves || err != nil {
					t.Fatalf("the seed program %s ended early (%v):\n%s", p.name, err, log.String())
				}
				require.Contains(t, log.String(), " 0 problems", "the seed program's own audit")
				return log.String()
			}
			log.WriteString(l + "\n")
			served = p.serves && strings.HasPrefix(l, "serving on ")
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the seed program %s did not finish its demo in time:\n%s", p.name, log.String())
		}
	}
	go func() {
		for range lines { // drain
		}
	}()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
	require.Contains(t, log.String(), " 0 problems", "the seed program's own audit")
	return log.String()
}

// TestSeedSystemInBrowser fills Redis with the seed 001 system
// (examples/ai-platform, every database of its layout), then drives the
// dashboard over it with "-layout seed" in Chromium: every page loads
// without a console error, the schema page agrees with the program's
// clean audit, a dead letter the program left is requeued from the page
// and a session the program created is revoked from the page.
func TestSeedSystemInBrowser(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no chromium installed: the browser tests need it (apt-get install -y chromium; .ci/run installs it)")
	}
	url, opts, prefix := seedRedis(t)
	cs, err := keys.SeedLayout().Clients(opts)
	require.NoError(t, err)
	rctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, db := range cs.DBs() {
			_ = keys.ForEachNode(c, cs.ForDB(db), func(c context.Context, n redis.UniversalClient) error {
				it := n.Scan(c, 0, keys.Namespace{Prefix: prefix}.Match(), 1000).Iterator()
				for it.Next(c) {
					n.Del(c, it.Val())
				}
				return it.Err()
			})
		}
		cs.Close()
	})
	runSeedProgram(t, url, prefix)
	ctx, console := browser(t)

	ns := keys.Namespace{Prefix: prefix}
	h, err := dashboard.New(dashboard.WithClients(cs), dashboard.WithNamespace(ns), dashboard.WithToken(token), dashboard.WithWrites(),
		dashboard.WithRefresh(time.Second), dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
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

	// Schema: keys in several databases, no stray, no missing TTL, no
	// wrong type or database (the program's own audit said 0 problems).
	open(t, ctx, srv.URL+"/#token="+token, "schema")
	for _, id := range []string{"#stat-strays", "#stat-nottl", "#stat-wrong"} {
		require.Equal(t, "0", text(t, ctx, id), id)
	}
	require.NotEqual(t, "0", text(t, ctx, "#stat-keys"))
	noErrors("schema")
	atBothWidths(t, ctx, dir, "seed-schema", "schema")
	firstScreen(t, ctx, dir, "dashboard-schema")

	// Queues: requeue a dead letter the program left.
	open(t, ctx, srv.URL+"/#queues", "queues")
	deadQueue := eval[string](t, ctx, `(() => { for (const tr of document.querySelectorAll("#queue-table tr[data-queue]")) { if (+tr.children[6].textContent > 0) return tr.dataset.queue; } return ""; })()`)
	require.NotEmpty(t, deadQueue, "the program leaves a dead letter (sync-crm)")
	open(t, ctx, srv.URL+"/#queues/"+deadQueue, "queues")
	waitJS(t, ctx, `document.querySelector("h3") && [...document.querySelectorAll("h3")].some(h => h.textContent === "Queue `+deadQueue+`")`)
	q, err := queue.New[json.RawMessage](cs.For(keys.Queues), deadQueue, queue.WithNamespace(ns))
	require.NoError(t, err)
	before, err := q.Stats(rctx)
	require.NoError(t, err)
	require.Positive(t, before.Dead)
	// The daily chart, drawn in full (90 days) on the first load.
	require.Equal(t, 90, eval[int](t, ctx, `document.querySelector('#queue-chart polyline[data-series="processed"]').getAttribute("points").split(" ").length`))
	noErrors("queues")
	atBothWidths(t, ctx, dir, "seed-queues", "queues")
	firstScreen(t, ctx, dir, "dashboard-queues")
	click(t, ctx, `#jobs-dead tr[data-job] button[data-action="requeue"]`)
	waitJS(t, ctx, fmt.Sprintf(`document.querySelectorAll("#jobs-dead tr[data-job]").length === %d`, before.Dead-1))
	after, err := q.Stats(rctx)
	require.NoError(t, err)
	require.Equal(t, before.Dead-1, after.Dead)
	noErrors("queues")

	// Sessions: revoke one of a user's sessions the program created.
	sc := cs.For(keys.Sessions)
	open(t, ctx, srv.URL+"/#sessions", "sessions")
	user := eval[string](t, ctx, `(document.querySelector("#user-table tr[data-user]") || {dataset: {}}).dataset.user || ""`)
	require.NotEmpty(t, user, "the page lists the users the program logged in")
	store, err := session.New(sc, session.WithNamespace(ns))
	require.NoError(t, err)
	live, err := store.List(rctx, user)
	require.NoError(t, err)
	require.NotEmpty(t, live)
	open(t, ctx, srv.URL+"/#sessions/"+user, "sessions")
	require.Equal(t, fmt.Sprint(len(live)), text(t, ctx, "#session-count"))
	noErrors("sessions")
	atBothWidths(t, ctx, dir, "seed-sessions", "sessions")
	click(t, ctx, `#session-table tr[data-session] button[data-action="revoke"]`)
	waitJS(t, ctx, fmt.Sprintf(`document.getElementById("session-count").textContent === "%d"`, len(live)-1))
	now, err := store.List(rctx, user)
	require.NoError(t, err)
	require.Len(t, now, len(live)-1)
	noErrors("sessions")

	// Every other page loads without errors over the seed keyspace.
	for _, p := range []struct{ hash, page string }{
		{"ratelimits", "ratelimits"}, {"presence", "presence"}, {"locks", "locks"}, {"cache", "cache"},
		{"metrics", "metrics"}, {"sensors", "sensors"}, {"server", "server"}, {"keys", "keys"},
		{"aimemory/" + firstArg(t, rctx, cs.For(keys.AIMemory), ns, "aimemory", "ai:memory:user:{user_id}"), "aimemory"},
	} {
		open(t, ctx, srv.URL+"/#"+p.hash, p.page)
		noErrors(p.page)
		atBothWidths(t, ctx, dir, "seed-"+p.page, p.page)
	}
	require.NotEqual(t, "0", text(t, ctx, "#ai-length"), "the program's AI conversations")
}

// firstScreen saves the first screen of the page at 1400 px as name.png:
// the README's screenshots (docs/dashboard-schema.png and
// docs/dashboard-queues.png are copies of this test's).
func firstScreen(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	setWidth(t, ctx, wide)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name+".png"))
}

// firstArg returns the least first placeholder value of the keys of the
// pattern (owner, template) found under ns, or "".
func firstArg(t *testing.T, ctx context.Context, c redis.UniversalClient, ns keys.Namespace, owner, template string) string {
	t.Helper()
	var tmpl *keys.Template
	for _, s := range dashboard.Schemas() {
		for _, tt := range s.Templates {
			if p := tt.Pattern(); p.Owner == owner && p.Template == template {
				tmpl = tt
			}
		}
	}
	require.NotNil(t, tmpl, template)
	var mu sync.Mutex // the nodes of a cluster are scanned at once
	var found string
	require.NoError(t, keys.ForEachNode(ctx, c, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, tmpl.Match(ns, nil), 1000).Iterator()
		for it.Next(ctx) {
			if a, err := tmpl.Parse(ns, it.Val()); err == nil && len(a) > 0 {
				mu.Lock()
				if found == "" || a[0] < found {
					found = a[0] // the least, whatever the order of the nodes
				}
				mu.Unlock()
			}
		}
		return it.Err()
	}))
	return found
}
