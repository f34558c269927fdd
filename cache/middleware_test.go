package cache

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

type mwFixture struct {
	srv   *httptest.Server
	calls atomic.Int64
	c     *Cache[Response]
}

func newMW(t *testing.T, e *harness.Env, opts ...MiddlewareOption) *mwFixture {
	f := &mwFixture{c: newCache[Response](t, e, WithPolicy(SeedPolicy()))}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/files/list", func(w http.ResponseWriter, r *http.Request) {
		n := f.calls.Add(1)
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"files":["a","b"],"call":`+itoa(n)+`,"accept":"`+r.Header.Get("Accept")+`"}`)
	})
	mux.HandleFunc("/api/v1/boom", func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/api/v1/login", func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "secret-" + itoa(f.calls.Load())})
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/api/v1/me", func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		io.WriteString(w, `{"user":"`+r.Header.Get("X-User")+`"}`)
	})
	opts = append([]MiddlewareOption{
		WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		WithTagsFor(func(r *http.Request) []string {
			if strings.HasPrefix(r.URL.Path, "/api/v1/files/") {
				return []string{"files"}
			}
			return nil
		}),
	}, opts...)
	f.srv = httptest.NewServer(Middleware(f.c, opts...)(mux))
	t.Cleanup(f.srv.Close)
	return f
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (f *mwFixture) get(t *testing.T, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestMiddleware(t *testing.T) {
	e := harness.New(t)
	f := newMW(t, e, WithVary("Accept"))

	res, body := f.get(t, "/api/v1/files/list?b=2&a=1")
	assert.Equal(t, 200, res.StatusCode)
	assert.Contains(t, res.Header.Get("Cache-Status"), "redschema; fwd=miss; fwd-status=200; stored")
	assert.Equal(t, "public, max-age=30", res.Header.Get("Cache-Control"), "the seed policy: files/list 30s")
	assert.Equal(t, "Accept", res.Header.Get("Vary"))
	etag := res.Header.Get("ETag")
	require.NotEmpty(t, etag)

	res, body2 := f.get(t, "/api/v1/files/list?a=1&b=2")
	assert.Equal(t, body, body2, "same canonical query, same entry")
	assert.Regexp(t, `^redschema; hit; ttl=(29|30)$`, res.Header.Get("Cache-Status"))
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.EqualValues(t, 1, f.calls.Load())

	res, body = f.get(t, "/api/v1/files/list?a=1&b=2", "If-None-Match", etag)
	assert.Equal(t, http.StatusNotModified, res.StatusCode)
	assert.Empty(t, body)

	res, _ = f.get(t, "/api/v1/files/list?a=1&b=2", "Accept", "text/csv")
	assert.Contains(t, res.Header.Get("Cache-Status"), "fwd=miss", "another Vary value, another entry")
	assert.EqualValues(t, 2, f.calls.Load())

	res, _ = f.get(t, "/api/v1/files/list?a=1&b=2", "Cache-Control", "no-cache")
	assert.Contains(t, res.Header.Get("Cache-Status"), "redschema; fwd=request; fwd-status=200; stored")
	assert.EqualValues(t, 3, f.calls.Load(), "no-cache reloads")
	res, _ = f.get(t, "/api/v1/files/list?a=1&b=2")
	assert.Contains(t, res.Header.Get("Cache-Status"), "hit")
	assert.EqualValues(t, 3, f.calls.Load())

	// 5xx and Set-Cookie are never stored, and never shared.
	for i := 0; i < 2; i++ {
		res, _ = f.get(t, "/api/v1/boom")
		assert.Equal(t, 503, res.StatusCode)
		assert.Contains(t, res.Header.Get("Cache-Status"), "uncacheable")
	}
	assert.EqualValues(t, 5, f.calls.Load())
	cookies := map[string]bool{}
	for i := 0; i < 3; i++ {
		res, _ = f.get(t, "/api/v1/login")
		cookies[res.Header.Get("Set-Cookie")] = true
	}
	assert.Len(t, cookies, 3, "every request got its own cookie")
	assert.EqualValues(t, 8, f.calls.Load())

	// Per user: private, keyed and tagged by user.
	res, body = f.get(t, "/api/v1/me", "X-User", "42")
	assert.Equal(t, `{"user":"42"}`, body)
	assert.True(t, strings.HasPrefix(res.Header.Get("Cache-Control"), "private"))
	_, body = f.get(t, "/api/v1/me", "X-User", "7")
	assert.Equal(t, `{"user":"7"}`, body)
	res, _ = f.get(t, "/api/v1/me", "X-User", "42")
	assert.Contains(t, res.Header.Get("Cache-Status"), "hit")
	n, err := f.c.InvalidateTag(e.Ctx(), "user:42")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	res, _ = f.get(t, "/api/v1/me", "X-User", "42")
	assert.Contains(t, res.Header.Get("Cache-Status"), "fwd=miss")

	// HEAD answers from the GET entry, without a body.
	req, _ := http.NewRequest(http.MethodHead, f.srv.URL+"/api/v1/files/list?a=1&b=2", nil)
	hres, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	hres.Body.Close()
	assert.Contains(t, hres.Header.Get("Cache-Status"), "hit")

	// Authorization without WithUser would share private answers: bypass.
	g := newMW(t, e)
	g2 := httptest.NewServer(Middleware(g.c)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })))
	defer g2.Close()
	areq, _ := http.NewRequest(http.MethodGet, g2.URL+"/private", nil)
	areq.Header.Set("Authorization", "Bearer t")
	ares, err := http.DefaultClient.Do(areq)
	require.NoError(t, err)
	ares.Body.Close()
	assert.Equal(t, "redschema; fwd=bypass", ares.Header.Get("Cache-Status"))

	// Other methods pass.
	pres, err := http.Post(f.srv.URL+"/api/v1/files/list", "text/plain", nil)
	require.NoError(t, err)
	pres.Body.Close()
	assert.Equal(t, "redschema; fwd=method", pres.Header.Get("Cache-Status"))
}

// Concurrent requests for one missing response run the handler once.
func TestMiddlewareCollapses(t *testing.T) {
	e := harness.New(t)
	f := newMW(t, e)
	var wg sync.WaitGroup
	statuses := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := f.get(t, "/api/v1/files/list")
			statuses <- res.Header.Get("Cache-Status")
		}()
	}
	wg.Wait()
	close(statuses)
	assert.EqualValues(t, 1, f.calls.Load())
	stored := 0
	for s := range statuses {
		if strings.Contains(s, "stored") {
			stored++
		}
	}
	assert.Equal(t, 1, stored, "one request loaded, the others were collapsed or hit")
}

// The pattern the mux matched travels with the response: stored with it
// (Response.Pattern, "pattern" in its JSON) and set on the request the
// middleware received, for the miss that ran the handler and for the hit
// that did not.
func TestMiddlewarePattern(t *testing.T) {
	e := harness.New(t)
	c := newCache[Response](t, e, WithPolicy(SeedPolicy()))
	var runs atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/files/{id}", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		io.WriteString(w, "file "+r.PathValue("id"))
	})
	h := Middleware(c)(mux)
	var seen []string
	for i := 0; i < 2; i++ {
		r := httptest.NewRequest("GET", "/api/v1/files/7", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, "file 7", w.Body.String())
		seen = append(seen, r.Pattern)
	}
	assert.Equal(t, int64(1), runs.Load(), "the second request is a hit")
	assert.Equal(t, []string{"GET /api/v1/files/{id}", "GET /api/v1/files/{id}"}, seen)

	b, err := json.Marshal(Response{Status: 200, Body: []byte("x"), Pattern: "GET /a/{id}"})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"pattern":"GET /a/{id}"`)
	var back Response
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "GET /a/{id}", back.Pattern)
	require.NoError(t, json.Unmarshal([]byte(`{"status":200,"body":"eA==","body_base64":true}`), &back))
	assert.Equal(t, "", back.Pattern, "an entry written before the field")
}

// A value of another writer that decodes as a Response without an HTTP
// status (a Cache of another type on the same Key: its JSON has no
// status) is reported as foreign data and loaded again, where
// WriteHeader would panic on status 0.
func TestMiddlewareForeignValueWithoutStatus(t *testing.T) {
	e := harness.New(t)
	f := newMW(t, e)
	other := newCache[map[string][]string](t, e, WithPolicy(SeedPolicy()))
	key := Key{Endpoint: "/api/v1/files/list", Method: http.MethodGet}
	require.NoError(t, other.Set(e.Ctx(), key, map[string][]string{"files": {"x"}}))

	res, body := f.get(t, "/api/v1/files/list")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `"call":1`, "the handler's response")
	assert.EqualValues(t, 1, f.c.Stats().Corrupt)
	res, body = f.get(t, "/api/v1/files/list")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `"call":1`, "the response loaded again is cached")
	assert.EqualValues(t, 1, f.calls.Load())
}
