package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

type middleware = func(http.Handler) http.Handler

// orderFixture is one service: a mux, the redschema middleware in front
// of it, each over its own namespace, and a recorder.
type orderFixture struct {
	e      *harness.Env
	rec    *metrics.Recorder
	reader *metrics.Reader
	mux    *http.ServeMux
	layers map[string]middleware
	cookie *http.Cookie
	csrf   string
}

func newOrderFixture(t *testing.T, e *harness.Env, name string) *orderFixture {
	t.Helper()
	ctx := e.Ctx()
	ns := e.NS.Sub(name + ":")
	rec, err := metrics.New(e.Client, metrics.WithNamespace(ns), metrics.WithoutFlusher())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec.Close(context.Background()) })
	f := &orderFixture{e: e, rec: rec, mux: http.NewServeMux(), layers: map[string]middleware{}}
	f.reader, err = metrics.NewReader(e.Client, rec.Definitions(), metrics.WithNamespace(ns))
	require.NoError(t, err)

	f.mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "item "+r.PathValue("id"))
	})
	f.mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	f.mux.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) { panic("boom") })

	l, err := ratelimit.New(e.Client, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(1000)}},
		ratelimit.WithNamespace(ns))
	require.NoError(t, err)
	f.layers["ratelimit"] = ratelimit.Middleware(l)

	store, err := session.New(e.Client, session.WithNamespace(ns))
	require.NoError(t, err)
	sess, tok, err := store.Create(ctx, session.Info{UserID: "ada"})
	require.NoError(t, err)
	f.cookie = session.Cookie("", tok.Handle, sess)
	f.csrf, err = session.CSRFToken(tok.Handle)
	require.NoError(t, err)
	f.layers["session"] = session.Middleware(store)

	c, err := cache.New[cache.Response](e.Client, cache.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	f.layers["cache"] = cache.Middleware(c)

	// A middleware of the user's own that passes a copy on and does not
	// copy the pattern back.
	f.layers["own"] = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ownKey{}, true)))
		})
	}
	return f
}

type ownKey struct{}

// handler stacks the named layers around the mux, outermost first; the
// metrics middleware is the layer named "metrics".
func (f *orderFixture) handler(t *testing.T, order []string, mopts ...metrics.MiddlewareOption) http.Handler {
	t.Helper()
	var h http.Handler = f.mux
	for i := len(order) - 1; i >= 0; i-- {
		if order[i] == "metrics" {
			h = metrics.Middleware(f.rec, mopts...)(h)
			continue
		}
		mw, ok := f.layers[order[i]]
		require.True(t, ok, order[i])
		h = mw(h)
	}
	return h
}

// serve sends the test's requests: /items/1 twice (the second a cache
// hit where a cache sits in front), /items/2, a POST, a path no route
// matches, and a handler that panics.
func (f *orderFixture) serve(t *testing.T, h http.Handler) {
	t.Helper()
	do := func(method, path string, wantCode int) {
		r := httptest.NewRequest(method, path, nil)
		r.AddCookie(f.cookie)
		if method == http.MethodPost {
			r.Header.Set("X-CSRF-Token", f.csrf)
		}
		w := httptest.NewRecorder()
		if wantCode == 0 {
			assert.Panics(t, func() { h.ServeHTTP(w, r) }, path)
			return
		}
		h.ServeHTTP(w, r)
		require.Equal(t, wantCode, w.Code, "%s %s: %s", method, path, w.Body.String())
	}
	do("GET", "/items/1", 200)
	do("GET", "/items/1", 200)
	do("GET", "/items/2", 200)
	do("POST", "/items", 201)
	do("GET", "/nowhere", 404)
	do("GET", "/boom", 0)
}

// endpoints flushes the recorder and reads the endpoints it recorded.
func (f *orderFixture) endpoints(t *testing.T) map[string]int64 {
	t.Helper()
	ctx := f.e.Ctx()
	require.NoError(t, f.rec.Flush(ctx))
	snap, err := f.reader.Read(ctx)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, ep := range snap.HTTP.Endpoints {
		out[ep.Endpoint] = ep.Requests
	}
	return out
}

// The route label survives the ratelimit, session and cache middleware
// between the metrics middleware and the mux, in either order and
// stacked in any order: no request of a matched route is recorded as
// unmatched, a cache hit included (the route travels with the cached
// response), and a panicking handler is recorded under its route.
func TestMiddlewareOrder(t *testing.T) {
	e := harness.New(t)
	orders := [][]string{
		{"metrics", "ratelimit"}, {"ratelimit", "metrics"},
		{"metrics", "session"}, {"session", "metrics"},
		{"metrics", "cache"}, {"cache", "metrics"},
	}
	for _, p := range permutations([]string{"ratelimit", "session", "cache"}) {
		orders = append(orders, append([]string{"metrics"}, p...), append(p, "metrics"))
	}
	orders = append(orders,
		[]string{"ratelimit", "metrics", "cache", "session"},
		[]string{"session", "cache", "metrics", "ratelimit"},
	)
	for i, order := range orders {
		t.Run(strings.Join(order, ">"), func(t *testing.T) {
			f := newOrderFixture(t, e, "o"+strconv.Itoa(i))
			f.serve(t, f.handler(t, order))
			want := map[string]int64{
				"GET /items/{id}":          3,
				"POST /items":              1,
				"GET " + metrics.Unmatched: 1,
				"GET /boom":                1,
			}
			if index(order, "cache") >= 0 && index(order, "cache") < index(order, "metrics") {
				// A cache in front of the metrics answers the hit
				// before them; the panic is seen twice: the cache's
				// loader run, then the cache steps aside and the
				// handler runs again.
				want["GET /items/{id}"], want["GET /boom"] = 2, 2
			}
			assert.Equal(t, want, f.endpoints(t))
		})
	}
}

// A middleware of the user's own that passes a copy on and does not copy
// the pattern back hides it: its requests are unmatched, unless the
// metrics middleware is given the mux (WithMux).
func TestMiddlewareOwnLayer(t *testing.T) {
	e := harness.New(t)
	f := newOrderFixture(t, e, "own")
	f.serve(t, f.handler(t, []string{"metrics", "own", "ratelimit"}))
	assert.Equal(t, map[string]int64{"GET " + metrics.Unmatched: 5, "POST " + metrics.Unmatched: 1}, f.endpoints(t))

	g := newOrderFixture(t, e, "ownmux")
	g.serve(t, g.handler(t, []string{"metrics", "own", "ratelimit"}, metrics.WithMux(g.mux)))
	assert.Equal(t, map[string]int64{
		"GET /items/{id}":          3,
		"POST /items":              1,
		"GET " + metrics.Unmatched: 1,
		"GET /boom":                1,
	}, g.endpoints(t))
}

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// permutations returns every order of list.
func permutations(list []string) [][]string {
	if len(list) <= 1 {
		return [][]string{append([]string(nil), list...)}
	}
	var out [][]string
	for i := range list {
		rest := append(append([]string(nil), list[:i]...), list[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{list[i]}, p...))
		}
	}
	return out
}
