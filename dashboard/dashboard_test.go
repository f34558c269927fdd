package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

const testToken = "s3cret-test-token"

type fixture struct {
	env *harness.Env
	srv *httptest.Server
	log *syncWriter
}

func setup(t *testing.T, opts ...dashboard.Option) *fixture {
	t.Helper()
	env := harness.New(t)
	require.NoError(t, demo.Fill(env.Ctx(), env.Client, env.NS))
	buf := &syncWriter{}
	logger := slog.New(slog.NewTextHandler(buf, nil))
	h, err := dashboard.New(append([]dashboard.Option{dashboard.WithClient(env.Client), dashboard.WithNamespace(env.NS),
		dashboard.WithLogger(logger)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{env: env, srv: srv, log: buf}
}

// get fetches path with the token and decodes the JSON reply into v.
func (f *fixture) get(t *testing.T, path string, v any) int {
	t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set(dashboard.TokenHeader, testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if v != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	return resp.StatusCode
}

// post sends form with the given headers and returns the status and body.
func (f *fixture) post(t *testing.T, path string, form url.Values, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func tokenHdr() map[string]string { return map[string]string{dashboard.TokenHeader: testToken} }

func TestNewValidates(t *testing.T) {
	env := harness.New(t)
	for name, opts := range map[string][]dashboard.Option{
		"no client":       nil,
		"writes no token": {dashboard.WithClient(env.Client), dashboard.WithWrites()},
		"short refresh":   {dashboard.WithClient(env.Client), dashboard.WithRefresh(1)},
		"two clients":     {dashboard.WithClient(env.Client), dashboard.WithClients(keys.Layout{}.Open(0, false, func(int) redisClient { return env.Client }))},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := dashboard.New(opts...)
			require.ErrorIs(t, err, dashboard.ErrInvalid)
		})
	}
}

func TestPageAndAssets(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	for path, want := range map[string]string{"/": "<title>redschema dashboard</title>", "/static/app.js": "loadSchema", "/static/style.css": "table.grid"} {
		resp, err := http.Get(f.srv.URL + path)
		require.NoError(t, err)
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, b.String(), want, path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
	}
}

func TestSchema(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	var s struct {
		DBs []struct {
			Scanned  int64
			Patterns []struct {
				Pattern, Owner string
				Keys           int64
				NoTTL          int64 `json:"no_ttl"`
				Bytes          int64
			}
			Unmatched     int64
			UnmatchedKeys []string `json:"unmatched_keys"`
		}
	}
	// A stray key and a session index without its TTL show as problems.
	c := f.env.Client
	require.NoError(t, c.Set(f.env.Ctx(), f.env.NS.Prefix+"stray:thing", "x", 0).Err())
	require.Equal(t, http.StatusOK, f.get(t, "/api/schema", &s))
	require.Len(t, s.DBs, 1)
	db := s.DBs[0]
	require.EqualValues(t, len(f.env.Keys()), db.Scanned)
	require.EqualValues(t, 1, db.Unmatched)
	require.Equal(t, []string{f.env.NS.Prefix + "stray:thing"}, db.UnmatchedKeys)
	counts := map[string]int64{}
	for _, p := range db.Patterns {
		counts[p.Pattern] = p.Keys
		if p.Keys > 0 && harness.Selected() != harness.Mini {
			require.Positive(t, p.Bytes, p.Pattern)
		}
	}
	pre := f.env.NS.Prefix
	require.EqualValues(t, 1, counts[pre+"queue:{{queue_name}}:jobs"])
	require.EqualValues(t, 1, counts[pre+"queue:dlq:{{queue_name}}"])
	require.EqualValues(t, demo.Sessions, counts[pre+"session:user:{{user_id}}:{session_id}"])
	require.EqualValues(t, 1, counts[pre+"user:{{user_id}}"])
}

func TestInspect(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	key, err := keysOf(t, "queue", "queue:dlq:{queue_name}").Key(f.env.NS, demo.Queue)
	require.NoError(t, err)
	var in struct {
		Owner, Type string
		Value       any
		Error       string
	}
	require.Equal(t, http.StatusOK, f.get(t, "/api/inspect?key="+url.QueryEscape(key), &in))
	require.Equal(t, "queue", in.Owner)
	require.Equal(t, "list", in.Type)
	require.Empty(t, in.Error)
	b, _ := json.Marshal(in.Value)
	require.Contains(t, string(b), demo.DeadError)
	require.Contains(t, string(b), demo.DeadIDs[0])

	missing, err := keysOf(t, "queue", "queue:dlq:{queue_name}").Key(f.env.NS, "nope")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, f.get(t, "/api/inspect?key="+url.QueryEscape(missing), nil))

	// A session index shows references, never the session IDs.
	idx, err := keysOf(t, "session", "session:index:{user_id}").Key(f.env.NS, demo.User)
	require.NoError(t, err)
	raw := f.rawGet(t, "/api/inspect?key="+url.QueryEscape(idx))
	require.Contains(t, raw, `"ref":`)
	ids, err := f.env.Client.ZRange(f.env.Ctx(), idx, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, ids, demo.Sessions)
	for _, id := range ids {
		require.NotContains(t, raw, id)
	}
	require.Equal(t, http.StatusBadRequest, f.get(t, "/api/inspect?key="+url.QueryEscape(f.env.NS.Prefix+"nobody:owns:this"), nil))
}

type queueStats struct {
	Name           string
	Ready          map[string]int64
	Scheduled      map[string]int64
	InFlight       int64 `json:"in_flight"`
	Dead           int64
	TotalProcessed int64 `json:"total_processed"`
	TotalFailed    int64 `json:"total_failed"`
	History        struct{ At, Processed, Failed []int64 }
}

type jobRow struct {
	ID, Priority, Payload string
	LastError             string `json:"last_error"`
	At                    string
}

type sessionsReply struct {
	Users []struct {
		ID       string
		Sessions int64
	}
	Status   string
	Record   map[string]any
	Sessions []struct {
		Ref, Email, UserAgent string
	}
}

func TestSessions(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
	ctx := f.env.Ctx()
	// Reading a user's sessions slides none of them: last_activity and
	// every TTL stay as they were. Each session is first made to look a
	// minute idle (Store.Get would stamp now and reset the TTL).
	type seen struct {
		last string
		ttl  time.Duration
	}
	before := map[string]seen{}
	for _, k := range f.env.Keys() {
		if strings.Contains(k, "session:user:") {
			last, err := f.env.Client.HGet(ctx, k, "last_activity").Result()
			require.NoError(t, err)
			at, err := time.Parse(time.RFC3339, last)
			require.NoError(t, err)
			last = at.Add(-time.Minute).UTC().Format("2006-01-02T15:04:05Z")
			require.NoError(t, f.env.Client.HSet(ctx, k, "last_activity", last).Err())
			ttl, err := f.env.Client.PTTL(ctx, k).Result()
			require.NoError(t, err)
			ttl -= time.Minute
			require.NoError(t, f.env.Client.PExpire(ctx, k, ttl).Err())
			before[k] = seen{last, ttl}
		}
	}
	require.Len(t, before, demo.Sessions)
	var r sessionsReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/sessions?user="+demo.User, &r))
	for k, b := range before {
		last, err := f.env.Client.HGet(ctx, k, "last_activity").Result()
		require.NoError(t, err)
		ttl, err := f.env.Client.PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, b.last, last, "%s: last_activity", k)
		require.LessOrEqual(t, ttl, b.ttl, "%s: TTL", k)
	}
	require.Equal(t, "login", r.Status)
	require.Len(t, r.Sessions, demo.Sessions)
	require.Len(t, r.Users, 1)
	require.Equal(t, demo.User, r.Users[0].ID)
	require.EqualValues(t, demo.Sessions, r.Users[0].Sessions)
	var all sessionsReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/sessions", &all))
	require.Len(t, all.Users, 1)
	require.Empty(t, all.Sessions)

	// No session ID (a digest that can revoke) and no refresh-token
	// digest reaches the page.
	raw := f.rawGet(t, "/api/sessions?user="+demo.User)
	for _, k := range f.env.Keys() {
		if i := strings.Index(k, "session:user:"); i >= 0 {
			id := k[strings.LastIndex(k, ":")+1:]
			require.NotContains(t, raw, id)
			h, err := f.env.Client.HGetAll(f.env.Ctx(), k).Result()
			require.NoError(t, err)
			if d := h["refresh_token_hash"]; d != "" {
				require.NotContains(t, raw, d)
			}
		}
	}

	code, body := f.post(t, "/api/session/revoke", url.Values{"user": {demo.User}, "ref": {r.Sessions[0].Ref}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"revoked":true`)
	f.get(t, "/api/sessions?user="+demo.User, &r)
	require.Len(t, r.Sessions, demo.Sessions-1)

	code, body = f.post(t, "/api/user/block", url.Values{"user": {demo.User}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	f.get(t, "/api/sessions?user="+demo.User, &r)
	require.Equal(t, "blocked", r.Status)
	code, _ = f.post(t, "/api/user/unblock", url.Values{"user": {demo.User}}, tokenHdr())
	require.Equal(t, http.StatusOK, code)

	code, body = f.post(t, "/api/session/revoke-all", url.Values{"user": {demo.User}}, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"revoked":1`)
	f.get(t, "/api/sessions?user="+demo.User, &r)
	require.Empty(t, r.Sessions)
	require.Contains(t, f.log.String(), "action=session.revoke_all")
}

func (f *fixture) rawGet(t *testing.T, path string) string {
	var v json.RawMessage
	f.get(t, path, &v)
	return string(v)
}

func TestSafety(t *testing.T) {
	form := url.Values{"queue": {demo.Queue}, "id": {demo.DeadIDs[0]}}
	t.Run("read-only refuses actions", func(t *testing.T) {
		f := setup(t, dashboard.WithToken(testToken))
		code, body := f.post(t, "/api/queue/requeue", form, tokenHdr())
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, body, "read-only")
		require.Contains(t, f.log.String(), "dashboard request refused")
	})
	t.Run("token required", func(t *testing.T) {
		f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
		code, _ := f.post(t, "/api/queue/requeue", form, nil)
		require.Equal(t, http.StatusForbidden, code, "no header from the page: cross-site")
		code, _ = f.post(t, "/api/queue/requeue", form, map[string]string{dashboard.RequestHeader: "1"})
		require.Equal(t, http.StatusUnauthorized, code)
		code, _ = f.post(t, "/api/queue/requeue", form, map[string]string{dashboard.TokenHeader: "wrong"})
		require.Equal(t, http.StatusUnauthorized, code)
		resp, err := pageGet(f.srv.URL + "/api/queues")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		// The token travels in its header only, never in a form field.
		withTok := url.Values{"queue": form["queue"], "id": form["id"], "token": {testToken}}
		code, _ = f.post(t, "/api/queue/requeue", withTok, map[string]string{dashboard.RequestHeader: "1"})
		require.Equal(t, http.StatusUnauthorized, code)
	})
	t.Run("cross-site refused", func(t *testing.T) {
		f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
		for name, hdr := range map[string]map[string]string{
			"sec-fetch-site": {"Sec-Fetch-Site": "cross-site"},
			"same-site":      {"Sec-Fetch-Site": "same-site"},
			"origin":         {"Origin": "https://evil.example"},
		} {
			hdr[dashboard.TokenHeader] = testToken
			code, body := f.post(t, "/api/queue/requeue", form, hdr)
			require.Equal(t, http.StatusForbidden, code, name)
			require.Contains(t, body, "cross-site", name)
		}
		// The dead letter is still there.
		var list struct{ Queues []queueStats }
		f.get(t, "/api/queues", &list)
		require.EqualValues(t, demo.Dead, list.Queues[0].Dead)
		// A same-origin request from the page passes.
		code, body := f.post(t, "/api/queue/requeue", form, map[string]string{dashboard.TokenHeader: testToken,
			"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"})
		require.Equal(t, http.StatusOK, code, body)
	})
	t.Run("GET cannot act", func(t *testing.T) {
		f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
		require.Equal(t, http.StatusMethodNotAllowed, f.get(t, "/api/queue/requeue?queue=emails&id=welcome-ada", nil))
	})
	t.Run("no token: loopback hosts only", func(t *testing.T) {
		f := setup(t)
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/config", nil)
		req.Header.Set(dashboard.RequestHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		req.Host = "attacker.example"
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

// A client given with WithClient is read in its own database: the page's
// config said DB 0 for a client on DB 3.
func TestWithClientKeepsItsDatabase(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), DB: 3, ContextTimeoutEnabled: true})
	defer c.Close()
	h, err := dashboard.New(dashboard.WithClient(c))
	require.NoError(t, err)
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := pageGet(srv.URL + "/api/config")
	require.NoError(t, err)
	defer resp.Body.Close()
	var cfg struct{ DBs []int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&cfg))
	require.Equal(t, []int{3}, cfg.DBs)
}

// A Redis that stops answering gives each page an error within the
// request deadline (5 s), not a request that hangs, even through a
// client without a read timeout; the page works again once Redis
// answers.
func TestHungRedisIsAnErrorWithinTheDeadline(t *testing.T) {
	env := harness.New(t)
	require.NoError(t, demo.Fill(env.Ctx(), env.Client, env.NS))
	pc, proxy := env.ProxyClient(&redis.Options{MaxRetries: -1, ReadTimeout: -1})
	h, err := dashboard.New(dashboard.WithClient(pc), dashboard.WithNamespace(env.NS))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func() (int, string) {
		resp, err := pageGet(srv.URL + "/api/queues")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := get()
	require.Equal(t, http.StatusOK, code, body)

	proxy.Stall()
	done := make(chan struct{})
	var stalledCode int
	var stalledBody string
	go func() {
		defer close(done)
		stalledCode, stalledBody = get()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // the deadline, with room for a loaded machine
		proxy.Resume()
		<-done
		t.Fatal("a request to a stalled Redis did not end within its deadline")
	}
	proxy.Resume()
	require.Equal(t, http.StatusGatewayTimeout, stalledCode, stalledBody)
	require.Contains(t, stalledBody, "Redis did not answer within 5s")

	code, body = get()
	require.Equal(t, http.StatusOK, code, body)
}

// A CLIENT PAUSE of the server (a private one: pausing the shared server
// would stall other tests) gives the page a 504 within the request
// deadline, and the page recovers when the pause ends.
func TestClientPauseIsAnErrorWithinTheDeadline(t *testing.T) {
	if harness.Selected() != harness.Server {
		t.Skip("runs once, on the real-server backend")
	}
	addr := harness.PrivateRedis(t)
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	h, err := dashboard.New(dashboard.WithClient(c))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func() (int, string) {
		resp, err := pageGet(srv.URL + "/api/queues")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := get()
	require.Equal(t, http.StatusOK, code, body)

	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Do(context.Background(), "CLIENT", "PAUSE", 8000, "ALL").Err())
	code, body = get() // an answer after the pause (8 s) would be a 200
	require.Equal(t, http.StatusGatewayTimeout, code, body)
	require.Contains(t, body, "Redis did not answer within 5s")

	require.NoError(t, admin.Do(context.Background(), "CLIENT", "UNPAUSE").Err())
	code, body = get()
	require.Equal(t, http.StatusOK, code, body)
}
