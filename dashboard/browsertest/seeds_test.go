package browsertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// seedPage is a check of one page over a seed program's keyspace: the
// page's hash, and what the page must show of the program's data.
type seedPage struct {
	hash, page string
	shows      func(t *testing.T, ctx context.Context)
}

// count returns the number of elements sel selects.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	return eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// shows waits until the page's JS expression expr holds (the page
// refreshes every second, so a part that failed once, under load, shows
// on a later refresh), failing with what the page shows in sel.
func shows(t *testing.T, ctx context.Context, expr, sel, what string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the page does not show %s (%s: %v); it shows:\n%s", what, expr, err,
			eval[string](t, ctx, fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText`, sel)))
	}
}

// number returns the text of sel as an integer.
func number(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := strconv.Atoi(text(t, ctx, sel))
	require.NoError(t, err, sel)
	return n
}

// TestOtherSeedsInBrowser runs the other seed systems' programs (000
// home-automation, 002 presence-service, 003 sensor-collector, 004
// chat-app; 001 is TestSeedSystemInBrowser's), each on a keyspace of its
// own, and drives the dashboard over what it left in Chromium: every page
// loads without a console error, the schema page agrees with the
// program's clean audit, and the pages of the program's features show its
// data. Screenshots: seedNNN-<page>.png.
func TestOtherSeedsInBrowser(t *testing.T) {
	for _, s := range []struct {
		seed  string
		prog  seedProgram
		opts  []dashboard.Option
		pages func(t *testing.T, c redis.UniversalClient, ns keys.Namespace) []seedPage
	}{
		{"000", seedProgram{name: "home-automation", prefixEnv: "REDIS_KEY_PREFIX", serves: true},
			[]dashboard.Option{dashboard.WithChat(chat.WithTag("support"))},
			func(*testing.T, redis.UniversalClient, keys.Namespace) []seedPage {
				return []seedPage{
					{"metrics", "metrics", func(t *testing.T, ctx context.Context) {
						require.Positive(t, number(t, ctx, "#mt-total"), "requests the program's demo made")
						require.Positive(t, count(t, ctx, "#mt-endpoints tr[data-endpoint]"), "its routes")
					}},
					{"sessions", "sessions", func(t *testing.T, ctx context.Context) {
						shows(t, ctx, `document.querySelectorAll("#user-table tr[data-user]").length > 0`, "main", "the users it logged in")
					}},
					{"presence", "presence", func(t *testing.T, ctx context.Context) {
						shows(t, ctx, `document.querySelectorAll("#pr-admin-table tr[data-admin]").length === 2`, "#pr-detail", "its support admins, ann and bob")
					}},
				}
			}},
		{"002", seedProgram{name: "presence-service", prefixEnv: "KEY_PREFIX", serves: true},
			[]dashboard.Option{dashboard.WithPresence(presence.WithProfile(presence.DetailedProfile()))},
			func(t *testing.T, c redis.UniversalClient, ns keys.Namespace) []seedPage {
				user := firstArg(t, context.Background(), c, ns, "presence", "presence:{user_id}")
				require.NotEmpty(t, user, "the program leaves presence records")
				return []seedPage{
					{"presence/" + user, "presence", func(t *testing.T, ctx context.Context) {
						h := text(t, ctx, "#pr-detail h3")
						require.Contains(t, h, "User "+user+": ")
						require.Contains(t, h, "last seen", "a real record, with its last seen")
					}},
				}
			}},
		{"003", seedProgram{name: "sensor-collector", module: true, prefixEnv: "KEY_PREFIX"}, nil,
			func(*testing.T, redis.UniversalClient, keys.Namespace) []seedPage {
				return []seedPage{
					{"sensors/living_room/temperature", "sensors", func(t *testing.T, ctx context.Context) {
						require.GreaterOrEqual(t, count(t, ctx, "#sn-locations a"), 3, "kitchen, living room, study")
						require.Positive(t, count(t, ctx, "#sn-latest tr td"), "the latest readings")
						require.Positive(t, count(t, ctx, "#sn-chart circle"), "hourly buckets in the chart")
					}},
				}
			}},
		{"004", seedProgram{name: "chat-app", prefixEnv: "KEY_PREFIX", serves: true},
			[]dashboard.Option{dashboard.WithPresence(presence.WithProfile(presence.CompactProfile())),
				dashboard.WithInterval("unread-reminder", 2*time.Hour), dashboard.WithInterval("cleanup-tokens", 24*time.Hour)},
			func(*testing.T, redis.UniversalClient, keys.Namespace) []seedPage {
				return []seedPage{
					{"locks", "locks", func(t *testing.T, ctx context.Context) {
						shows(t, ctx, `document.querySelectorAll("#lk-jobs tr td:first-child").length === 2`, "#lk-detail", "unread-reminder and cleanup-tokens, which ran")
					}},
					{"queues", "queues", func(t *testing.T, ctx context.Context) {
						require.Equal(t, 1, count(t, ctx, `#queue-table tr[data-queue="fcm"]`), "the push queue")
					}},
					{"presence", "presence", func(t *testing.T, ctx context.Context) {
						shows(t, ctx, `+document.getElementById("pr-online").textContent > 0`, "#pr-detail", "a user still online")
					}},
				}
			}},
	} {
		t.Run(s.seed+"-"+s.prog.name, func(t *testing.T) {
			url, opts, prefix := seedRedis(t)
			c := redis.NewUniversalClient(opts)
			ns := keys.Namespace{Prefix: prefix}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = keys.ForEachNode(ctx, c, func(ctx context.Context, n redis.UniversalClient) error {
					it := n.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 1000).Iterator()
					for it.Next(ctx) {
						n.Del(ctx, it.Val())
					}
					return it.Err()
				})
				_ = c.Close()
			})
			runSeed(t, s.prog, url, prefix)
			pages := s.pages(t, c, ns)
			ctx, console := browser(t)
			h, err := dashboard.New(append([]dashboard.Option{dashboard.WithClient(c), dashboard.WithNamespace(ns), dashboard.WithToken(token),
				dashboard.WithRefresh(time.Second), dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, s.opts...)...)
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

			open(t, ctx, srv.URL+"/#token="+token, "schema")
			for _, id := range []string{"#stat-strays", "#stat-nottl", "#stat-wrong"} {
				require.Equal(t, "0", text(t, ctx, id), id)
			}
			require.NotEqual(t, "0", text(t, ctx, "#stat-keys"))
			noErrors("schema")
			screenshot(t, ctx, dir, "seed"+s.seed+"-schema")
			shown := map[string]bool{}
			for _, p := range pages {
				open(t, ctx, srv.URL+"/#"+p.hash, p.page)
				p.shows(t, ctx)
				noErrors(p.page)
				screenshot(t, ctx, dir, "seed"+s.seed+"-"+p.page)
				shown[p.page] = true
			}
			for _, page := range []string{"queues", "sessions", "ratelimits", "presence", "locks", "cache", "metrics", "sensors"} {
				if !shown[page] {
					open(t, ctx, srv.URL+"/#"+page, page)
					noErrors(page)
				}
			}
		})
	}
}
