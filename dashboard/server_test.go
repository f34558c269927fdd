package dashboard

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/internal/harness"
)

// serverFixture is a dashboard over the demo data set, and its server.
type serverFixture struct {
	env *harness.Env
	h   *Handler
	url string
}

func newServerFixture(t *testing.T) *serverFixture {
	t.Helper()
	env := harness.New(t)
	require.NoError(t, demo.Fill(env.Ctx(), env.Client, env.NS))
	h, err := New(WithClient(env.Client), WithNamespace(env.NS), WithToken("server-test-token"),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &serverFixture{env: env, h: h, url: srv.URL}
}

// get fetches path as the page does and returns the status and body.
func (f *serverFixture) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", f.url+path, nil)
	require.NoError(t, err)
	req.Header.Set(TokenHeader, "server-test-token")
	req.Header.Set("X-Redschema-Request", "1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

type serverReply struct {
	Nodes []serverNode `json:"nodes"`
}

func TestServerPage(t *testing.T) {
	f := newServerFixture(t)
	status, body := f.get(t, "/api/server")
	require.Equal(t, http.StatusOK, status, string(body))
	var r serverReply
	require.NoError(t, json.Unmarshal(body, &r))
	require.NotEmpty(t, r.Nodes)
	if !f.env.Real() {
		// miniredis answers no multi-section INFO and no SLOWLOG: the
		// node says so in its row, and the page is still served.
		require.Len(t, r.Nodes, 1)
		require.Contains(t, r.Nodes[0].Error, "INFO")
		require.Contains(t, r.Nodes[0].SlowlogError, "SLOWLOG")
		require.NotNil(t, r.Nodes[0].Slowlog)
		return
	}
	if f.env.Backend == harness.Cluster {
		require.Len(t, r.Nodes, 3, "one row per master")
	}
	var keys int64
	addrs := map[string]bool{}
	for _, n := range r.Nodes {
		require.Empty(t, n.Error)
		require.Empty(t, n.SlowlogError)
		require.NotEmpty(t, n.Addr)
		require.False(t, addrs[n.Addr], "each node once")
		addrs[n.Addr] = true
		require.Regexp(t, `^\d+\.\d+`, n.Version)
		require.Equal(t, "master", n.Role)
		require.Positive(t, n.UptimeS)
		require.Positive(t, n.UsedMemory)
		require.Positive(t, n.UsedMemoryRSS)
		require.NotEmpty(t, n.MaxMemoryPolicy)
		require.Positive(t, n.FragRatio)
		require.Positive(t, n.ConnectedClients)
		require.GreaterOrEqual(t, n.HitRate, 0.0)
		require.LessOrEqual(t, n.HitRate, 1.0)
		if n.KeyspaceHits+n.KeyspaceMisses > 0 {
			require.InDelta(t, float64(n.KeyspaceHits)/float64(n.KeyspaceHits+n.KeyspaceMisses), n.HitRate, 1e-9)
		}
		keys += n.DBKeys["db0"]
	}
	require.GreaterOrEqual(t, keys, int64(len(f.env.Keys())), "db0 holds at least the demo's keys")
}

func TestParseInfo(t *testing.T) {
	text := "# Server\r\nredis_version:7.2.4\r\nuptime_in_seconds:99\r\n\r\n# Clients\r\nconnected_clients:5\r\nblocked_clients:1\r\n" +
		"# Memory\r\nused_memory:1024\r\nused_memory_rss:4096\r\nmaxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\nmem_fragmentation_ratio:4.00\r\n" +
		"# Stats\r\ninstantaneous_ops_per_sec:12\r\nkeyspace_hits:3\r\nkeyspace_misses:1\r\nevicted_keys:7\r\nexpired_keys:8\r\n" +
		"# Replication\r\nrole:slave\r\nmaster_link_status:down\r\nconnected_slaves:0\r\n" +
		"# Keyspace\r\ndb0:keys=10,expires=2,avg_ttl=0\r\ndb6:keys=3,expires=0,avg_ttl=0\r\n"
	out := serverNode{DBKeys: map[string]int64{}}
	parseInfo(text, &out)
	require.Equal(t, serverNode{Version: "7.2.4", Role: "slave", UptimeS: 99, MasterLinkStatus: "down", UsedMemory: 1024,
		UsedMemoryRSS: 4096, MaxMemoryPolicy: "allkeys-lru", FragRatio: 4, ConnectedClients: 5, BlockedClients: 1, OpsPerSec: 12,
		KeyspaceHits: 3, KeyspaceMisses: 1, HitRate: 0.75, EvictedKeys: 7, ExpiredKeys: 8,
		DBKeys: map[string]int64{"db0": 10, "db6": 3}}, out)
}

// TestSlowlogShowsOnlyTheKey: a SLOWLOG entry reaches the page as its
// command, its key (a session ID in it replaced by its reference) and
// its argument count; no other argument, whatever the command.
func TestSlowlogShowsOnlyTheKey(t *testing.T) {
	f := newServerFixture(t)
	const secret = "hunter2-secret"
	sessKey := f.env.NS.Prefix + "session:user:{42}:d1b3c0ffee"
	long := strings.Repeat("k", 128) + "... (40 more bytes)"
	at := time.Unix(1700000000, 0)
	for _, c := range []struct {
		args    []string
		command string
		key     string
		n       int
	}{
		{[]string{"AUTH", "admin", secret}, "auth", "", 2},
		{[]string{"auth", secret}, "auth", "", 1},
		{[]string{"CONFIG", "SET", "requirepass", secret}, "config", "", 3},
		{[]string{"HELLO", "3", "AUTH", "default", secret}, "hello", "", 4},
		{[]string{"MIGRATE", "h", "6379", "", "0", "5000", "AUTH", secret, "KEYS", "a"}, "migrate", "", 9},
		{[]string{"SET", sessKey, secret, "PX", "100"}, "set", f.env.NS.Prefix + "session:user:{42}:ref-" + f.h.ref("42", "d1b3c0ffee"), 4},
		{[]string{"EVALSHA", "abc123", "1", sessKey, secret}, "evalsha", f.env.NS.Prefix + "session:user:{42}:ref-" + f.h.ref("42", "d1b3c0ffee"), 4},
		{[]string{"EVAL", "return ARGV[1] -- " + secret, "0", secret}, "eval", "", 3},
		{[]string{"FCALL", "f", "0", secret}, "fcall", "", 3},
		{[]string{"OBJECT", "ENCODING", f.env.NS.Prefix + "stray:x"}, "object", f.env.NS.Prefix + "stray:x", 2},
		{[]string{"MEMORY", "DOCTOR"}, "memory", "", 1},
		{[]string{"HGETALL", long}, "hgetall", "(a key cut by SLOWLOG)", 1},
		{[]string{"MADE-UP", "stray:y", secret}, "made-up", "", 2},
		{[]string{"HGETALL", "other-app:session:user:{42}:d1b3c0ffee"}, "hgetall", "(a key outside " + f.env.NS.Prefix + ")", 1},
		{[]string{"HGETALL", f.env.NS.Prefix + "app:session:user:{42}:d1b3c0ffee"}, "hgetall",
			f.env.NS.Prefix + "app:session:user:{42}:ref-" + f.h.ref("42", "d1b3c0ffee"), 1},
		{append(append([]string{"DEL", f.env.NS.Prefix + "a"}, strings.Split(strings.Repeat("b ", 29), " ")[:29]...), "... (19 more arguments)"), "del", f.env.NS.Prefix + "a", 49},
	} {
		e := f.h.slowEntry(redis.SlowLog{ID: 7, Time: at, Duration: 12500 * time.Microsecond, Args: c.args})
		require.Equal(t, slowEntry{ID: 7, At: at.UTC(), DurationUs: 12500, Command: c.command, Key: c.key, Args: c.n}, e, "%q", c.args)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		require.NotContains(t, string(b), secret)
		require.NotContains(t, string(b), "d1b3c0ffee")
	}
}

// TestSlowlogOnServer runs a slow script on a real server, its key a
// session key and its argument a secret, and finds it on the server
// page with the key shown without the session ID and no argument.
func TestSlowlogOnServer(t *testing.T) {
	f := newServerFixture(t)
	if !f.env.Real() {
		t.Skip("miniredis has no SLOWLOG")
	}
	ctx := f.env.Ctx()
	threshold := time.Duration(0)
	err := keysForEachNode(t, f, func(c redis.UniversalClient) {
		v, err := c.ConfigGet(ctx, "slowlog-log-slower-than").Result()
		require.NoError(t, err)
		us, err := strconv.ParseInt(v["slowlog-log-slower-than"], 10, 64)
		require.NoError(t, err)
		if us < 0 || us > 200_000 {
			t.Skipf("slowlog-log-slower-than is %d µs: no slow entry can be made in a test", us)
		}
		threshold = max(threshold, time.Duration(us)*time.Microsecond)
	})
	require.NoError(t, err)
	const id = "c0ffee5e55"
	secret := "s3cr3t-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	key := f.env.NS.Prefix + "session:user:{slow-user}:" + id
	busy := max(2*threshold, 20*time.Millisecond)
	// A read-only busy loop on server time: it writes nothing.
	script := `local t = redis.call('TIME'); local start = t[1] * 1e6 + t[2]
repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - start >= tonumber(ARGV[2])
return #ARGV[1]`
	require.NoError(t, f.env.Client.Eval(ctx, script, []string{key}, secret, busy.Microseconds()).Err())

	status, body := f.get(t, "/api/server")
	require.Equal(t, http.StatusOK, status, string(body))
	require.NotContains(t, string(body), secret)
	require.NotContains(t, string(body), id)
	require.NotContains(t, string(body), "redis.call")
	var r serverReply
	require.NoError(t, json.Unmarshal(body, &r))
	want := f.env.NS.Prefix + "session:user:{slow-user}:ref-" + f.h.ref("slow-user", id)
	found := false
	for _, n := range r.Nodes {
		for _, e := range n.Slowlog {
			if e.Key == want {
				found = true
				require.Equal(t, "eval", e.Command)
				require.Equal(t, 5, e.Args, "script, key count, key, two ARGV")
				require.GreaterOrEqual(t, e.DurationUs, busy.Microseconds())
			}
		}
	}
	require.True(t, found, "the slow script's entry, its key shown with the session reference")
}

func keysForEachNode(t *testing.T, f *serverFixture, fn func(c redis.UniversalClient)) error {
	t.Helper()
	ns, err := f.h.nodes(f.env.Ctx())
	if err != nil {
		return err
	}
	for _, n := range ns {
		fn(n.c)
	}
	return nil
}

type keysReply struct {
	Prefix string   `json:"prefix"`
	Count  int      `json:"count"`
	Keys   []keyRow `json:"keys"`
	Cursor string   `json:"cursor"`
}

// browse pages through /api/keys with match and count until the cursor
// is "", returning every page.
func (f *serverFixture) browse(t *testing.T, match string, count int) []keysReply {
	t.Helper()
	var pages []keysReply
	cursor := ""
	for {
		q := url.Values{"match": {match}, "count": {strconv.Itoa(count)}, "cursor": {cursor}}
		status, body := f.get(t, "/api/keys?"+q.Encode())
		require.Equal(t, http.StatusOK, status, string(body))
		var r keysReply
		require.NoError(t, json.Unmarshal(body, &r))
		pages = append(pages, r)
		if r.Cursor == "" {
			return pages
		}
		cursor = r.Cursor
		require.Less(t, len(pages), 10_000, "the browse ends")
	}
}

// TestKeyBrowserPaging: paging with a small page lists every key under
// the namespace exactly once, each page within its count.
func TestKeyBrowserPaging(t *testing.T) {
	f := newServerFixture(t)
	ctx := f.env.Ctx()
	const strays = 1234
	pipe := f.env.Client.Pipeline()
	for i := range strays {
		pipe.Set(ctx, fmt.Sprintf("%sstray:%04d", f.env.NS.Prefix, i), "x", time.Hour)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	want := f.env.Keys()
	require.Greater(t, len(want), strays)

	for _, count := range []int{37, 500} {
		seen := map[string]int{}
		pages := f.browse(t, "*", count)
		for _, p := range pages {
			require.Equal(t, f.env.NS.Prefix, p.Prefix)
			require.LessOrEqual(t, len(p.Keys), count)
			for _, k := range p.Keys {
				if !k.Redacted {
					seen[k.Key]++
				}
			}
		}
		redacted := 0
		for _, p := range pages {
			for _, k := range p.Keys {
				if k.Redacted {
					redacted++
				}
			}
		}
		for _, k := range want {
			if strings.Contains(k, "session:user:") || strings.Contains(k, "session:rotation:") {
				continue // shown with a reference, counted below
			}
			// SCAN's guarantee: every key present throughout is returned at
			// least once; a keyspace that changes meanwhile (other tests
			// share the server) can make it return a key twice.
			require.GreaterOrEqual(t, seen[k], 1, "count %d: %s listed", count, k)
			delete(seen, k)
		}
		require.Empty(t, seen, "count %d: only the namespace's keys", count)
		require.GreaterOrEqual(t, redacted, demo.Sessions, "count %d: the sessions, by reference", count)
		if count == 37 {
			require.GreaterOrEqual(t, len(pages), len(want)/37, "small pages")
		}
	}

	// A glob under the prefix: each of its 100 keys at least once (a
	// keyspace that other tests change can make SCAN repeat some).
	globbed := map[string]bool{}
	for _, p := range f.browse(t, "stray:01*", 50) {
		for _, k := range p.Keys {
			require.True(t, strings.HasPrefix(k.Key, f.env.NS.Prefix+"stray:01"), k.Key)
			require.Equal(t, "string", k.Type)
			require.Empty(t, k.Owner, "a stray has no owner")
			require.Greater(t, k.TTLMs, int64(59*60*1000))
			globbed[k.Key] = true
		}
	}
	require.Len(t, globbed, 100)
}

// TestKeyBrowserCountCap: a page never holds more than 500 keys, and the
// count given is capped to it.
func TestKeyBrowserCountCap(t *testing.T) {
	f := newServerFixture(t)
	ctx := f.env.Ctx()
	pipe := f.env.Client.Pipeline()
	for i := range 1200 {
		pipe.Set(ctx, fmt.Sprintf("%scap:%04d", f.env.NS.Prefix, i), "x", time.Hour)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	// SCAN returns every key present throughout at least once; while other
	// tests grow the shared server's keyspace, a rehash can make it return
	// some twice, so the test counts distinct keys.
	distinct := map[string]bool{}
	pages := f.browse(t, "cap:*", 100000)
	for _, p := range pages {
		require.Equal(t, keysMax, p.Count)
		require.LessOrEqual(t, len(p.Keys), keysMax)
		for _, k := range p.Keys {
			require.True(t, strings.HasPrefix(k.Key, f.env.NS.Prefix+"cap:"), k.Key)
			distinct[k.Key] = true
		}
	}
	require.Len(t, distinct, 1200)
	require.GreaterOrEqual(t, len(pages), 3)

	status, body := f.get(t, "/api/keys")
	require.Equal(t, http.StatusOK, status)
	var r keysReply
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, keysDefault, r.Count)
	require.LessOrEqual(t, len(r.Keys), keysDefault)
}

// TestKeyBrowserRows: each key with its owner, pattern, type and TTL; a
// session key without its session ID.
func TestKeyBrowserRows(t *testing.T) {
	f := newServerFixture(t)
	var rows []keyRow
	for _, p := range f.browse(t, "*", 500) {
		rows = append(rows, p.Keys...)
	}
	byKey := map[string]keyRow{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	jobs := byKey[f.env.NS.Prefix+"queue:{"+demo.Queue+"}:jobs"]
	require.Equal(t, "queue", jobs.Owner)
	require.Equal(t, f.env.NS.Prefix+"queue:{{queue_name}}:jobs", jobs.Pattern)
	require.Equal(t, "hash", jobs.Type)

	body, err := json.Marshal(rows)
	require.NoError(t, err)
	sessions := 0
	for _, k := range f.env.Keys() {
		id, ok := strings.CutPrefix(k, f.env.NS.Prefix+"session:user:{"+demo.User+"}:")
		if !ok {
			continue
		}
		sessions++
		require.NotContains(t, string(body), id, "a session ID")
		shown := byKey[f.env.NS.Prefix+"session:user:{"+demo.User+"}:ref-"+f.h.ref(demo.User, id)]
		require.True(t, shown.Redacted)
		require.Equal(t, "session", shown.Owner)
		require.Equal(t, "hash", shown.Type)
		require.Positive(t, shown.TTLMs, "a session has a TTL")
	}
	require.Equal(t, demo.Sessions, sessions)
}

func TestKeyBrowserRefusesBadInput(t *testing.T) {
	f := newServerFixture(t)
	for _, q := range []string{
		"match=" + url.QueryEscape("a[b"),
		"match=" + url.QueryEscape(`a\`),
		"match=" + url.QueryEscape("a\x01"),
		"match=" + strings.Repeat("a", maxGlob+1),
		"cursor=!!!",
		"cursor=" + keysCursor{node: 99}.String(),
		"cursor=" + url.QueryEscape("MS4yLjMueA"), // "1.2.3.x"
		"count=0",
		"count=x",
	} {
		status, body := f.get(t, "/api/keys?"+q)
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", q, body)
	}
	status, _ := f.get(t, "/api/keys?match="+url.QueryEscape(`a\[b[xy]*`))
	require.Equal(t, http.StatusOK, status)
}
