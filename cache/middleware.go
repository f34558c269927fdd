package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// MiddlewareOption configures Middleware. Without options it caches GET
// and HEAD by path and canonical query, shared by every user, for the
// statuses WithStatuses lists as its default.
type MiddlewareOption func(*middlewareOptions)

type middlewareOptions struct {
	vary     []string
	user     func(*http.Request) string
	tags     func(*http.Request) []string
	statuses []int
}

// defaultStatuses are the statuses the middleware stores unless
// WithStatuses says otherwise: those HTTP calls cacheable by default,
// without 206 (ranges) and 5xx.
var defaultStatuses = []int{200, 203, 204, 300, 301, 308, 404, 405, 410, 414}

// WithVary makes the values of these request headers part of the key, and
// lists them in the responses' Vary header.
//
// Default: none.
func WithVary(headers ...string) MiddlewareOption {
	return func(o *middlewareOptions) { o.vary = append(o.vary, headers...) }
}

// WithUser keys entries per user: user returns the request's user ID (""
// for an anonymous request, which shares the public entries). A user's
// entries are tagged "user:{id}" (InvalidateTag("user:42") drops them)
// and served with Cache-Control: private. Without it, requests with an
// Authorization header bypass the cache.
//
// Default: none (entries are shared by every user).
func WithUser(user func(*http.Request) string) MiddlewareOption {
	return func(o *middlewareOptions) { o.user = user }
}

// WithTagsFor gives each stored response the tags tags returns for its
// request (e.g. "files" for every /api/v1/files/ path).
//
// Default: none.
func WithTagsFor(tags func(*http.Request) []string) MiddlewareOption {
	return func(o *middlewareOptions) { o.tags = tags }
}

// WithStatuses sets the response statuses that are stored (the default:
// those HTTP calls cacheable by default, without 206 and 5xx); a 5xx
// makes Middleware panic.
//
// Default: 200, 203, 204, 300, 301, 308, 404, 405, 410, 414. Range: 100 to 499.
func WithStatuses(codes ...int) MiddlewareOption {
	return func(o *middlewareOptions) { o.statuses = codes }
}

// Middleware returns net/http middleware that answers GET and HEAD
// requests from c. The key is the request path (the API cache's
// endpoint, whose policy rule gives the TTL), "GET", and the hash of the
// canonical query plus the WithVary headers and the WithUser ID. On a miss the handler
// runs once across all instances (HEAD runs it as GET) and its response is
// stored when cacheable: a status of WithStatuses (never a 5xx), no
// Set-Cookie, no "Cache-Control: no-store" or "private" (unless the entry
// is per user), no "Vary: *". An uncacheable response is not shared with
// requests waiting for it: they run the handler themselves.
//
// Responses carry an ETag (the handler's, or a hash of the body) and an
// If-None-Match that matches it gets 304; Cache-Control: max-age is the
// freshness left (public, or private per user) unless the handler set
// Cache-Control; Cache-Status (RFC 9211) says what happened:
//
//	redschema; hit; ttl=25                       fresh from the cache
//	redschema; hit; ttl=-3; detail=stale         stale, being revalidated
//	redschema; fwd=miss; fwd-status=200; stored  loaded by this request
//	redschema; fwd=miss; collapsed               loaded by another request
//	redschema; fwd=request; fwd-status=200; stored  "Cache-Control: no-cache"
//	redschema; fwd=uri-miss; detail=uncacheable  not stored
//	redschema; fwd=bypass                        not handled (no-store, Authorization, method)
//
// A request with "Cache-Control: no-cache" (or "Pragma: no-cache") is
// revalidated: the handler runs and its response replaces the entry;
// "no-store" bypasses the cache. When the cache fails (Redis down), the
// handler answers and the error goes to the Cache's error hook.
//
// The handler runs with a copy of the request, and a response served
// from the cache runs no handler: the middleware stores the pattern an
// http.ServeMux behind it matched with the response (Response.Pattern)
// and sets it on the request it received (r.Pattern) before answering, so
// a metrics middleware outside this one labels hits and misses alike by
// their route.
//
// Middleware panics, with an error matching ErrInvalid, on a nil cache or
// a 5xx in WithStatuses: configuration mistakes, found at start-up.
func Middleware(c *Cache[Response], opts ...MiddlewareOption) func(http.Handler) http.Handler {
	o := middlewareOptions{statuses: defaultStatuses}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	const op = "middleware"
	if c == nil {
		panic(pkg.Invalidf(op, "nil Cache"))
	}
	for _, s := range o.statuses {
		if s < 100 || s >= 500 {
			panic(pkg.Invalidf(op, "status %d cannot be stored", s))
		}
	}
	for i, h := range o.vary {
		o.vary[i] = textproto.CanonicalMIMEHeaderKey(h)
	}
	m := &mw{c: c, o: o}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}
}

type mw struct {
	c *Cache[Response]
	o middlewareOptions
}

const cacheName = "redschema"

func (m *mw) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Cache-Status", cacheName+"; fwd=method")
		next.ServeHTTP(w, r)
		return
	}
	cc := strings.ToLower(strings.Join(r.Header.Values("Cache-Control"), ","))
	user := ""
	if m.o.user != nil {
		user = m.o.user(r)
	}
	if hasDirective(cc, "no-store") || (r.Header.Get("Authorization") != "" && m.o.user == nil) {
		w.Header().Set("Cache-Status", cacheName+"; fwd=bypass")
		next.ServeHTTP(w, r)
		return
	}
	noCache := hasDirective(cc, "no-cache") || strings.Contains(strings.ToLower(r.Header.Get("Pragma")), "no-cache")
	key := m.key(r, user)
	var tags []string
	if m.o.tags != nil {
		tags = m.o.tags(r)
	}
	if user != "" {
		tags = append(tags, "user:"+user)
	}
	opts := []FetchOption{WithTags(tags...)}
	if noCache {
		opts = append(opts, WithRevalidate())
	}
	ctx := r.Context()
	const op = "middleware"
	var ran atomic.Bool // this request's handler ran as the loader
	// The loader may run after serve returned (a background refresh):
	// it reads a copy of r, never r, which serve writes (its pattern).
	src := r.WithContext(ctx)
	load := func(lctx context.Context) ([]byte, bool, error) {
		ran.Store(true)
		rec := &recorder{h: http.Header{}, status: http.StatusOK}
		req := src.Clone(lctx)
		req.Method = http.MethodGet
		next.ServeHTTP(rec, req)
		resp := rec.response()
		resp.Pattern = req.Pattern
		b, err := m.c.codec.Marshal(resp)
		if err != nil {
			return nil, false, err
		}
		return b, m.cacheable(resp, user != ""), nil
	}
	ref, err := m.c.ref(op, key)
	var cfg *fetchConfig
	if err == nil {
		cfg, err = m.c.config(op, key, opts)
	}
	var resp Response
	var res Result
	if err == nil {
		resp, res, err = m.c.decode(ctx, op, ref, cfg, load)
	}
	if err == nil && !httpStatus(resp.Status) {
		// another writer's value that decodes as a Response (a Cache[T]
		// of the same Key, JSON without a status): WriteHeader would
		// panic on its status, so it is reported and loaded again
		m.c.s.corrupt(ctx, ref.value, fmt.Errorf("status %d is not an HTTP status", resp.Status))
		resp, res, err = m.c.reload(ctx, op, ref, cfg, load)
		if err == nil && !httpStatus(resp.Status) {
			err = pkg.Fail(op, ref.value, nil, fmt.Errorf("the handler's status %d is not an HTTP status", resp.Status))
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return // the client went away
	case err != nil:
		m.c.s.report(ctx, ref.value, err)
		w.Header().Set("Cache-Status", cacheName+"; fwd=bypass; detail=error")
		next.ServeHTTP(w, r)
		return
	case res.noStore && !ran.Load():
		// Another request's uncacheable response (it may set a cookie):
		// never shared.
		w.Header().Set("Cache-Status", cacheName+"; fwd=uri-miss; detail=uncacheable")
		next.ServeHTTP(w, r)
		return
	}
	// The route of the request: the pattern the mux matched for the
	// request that produced resp (this one, another one collapsed with
	// it, or an earlier one for a hit).
	r.Pattern = resp.Pattern
	m.write(w, r, resp, res, noCache, user != "")
}

// key is the request's cache key: the path, GET, and the canonical query
// with the vary headers and the user appended.
func (m *mw) key(r *http.Request, user string) Key {
	var b strings.Builder
	b.WriteString(r.URL.Query().Encode())
	for _, h := range m.o.vary {
		b.WriteString("\nvary:")
		b.WriteString(h)
		b.WriteByte('=')
		b.WriteString(strings.Join(r.Header.Values(h), ","))
	}
	if user != "" {
		b.WriteString("\nuser=")
		b.WriteString(user)
	}
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	return Key{Endpoint: path, Method: http.MethodGet, Params: b.String()}
}

// cacheable reports whether resp may be stored.
func (m *mw) cacheable(resp Response, perUser bool) bool {
	if !slices.Contains(m.o.statuses, resp.Status) || resp.Header.Get("Set-Cookie") != "" {
		return false
	}
	cc := strings.ToLower(strings.Join(resp.Header.Values("Cache-Control"), ","))
	if hasDirective(cc, "no-store") || (hasDirective(cc, "private") && !perUser) {
		return false
	}
	return !slices.Contains(resp.Header.Values("Vary"), "*")
}

// write sends resp, or 304 when If-None-Match matches its ETag.
func (m *mw) write(w http.ResponseWriter, r *http.Request, resp Response, res Result, revalidated, perUser bool) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = slices.Clone(vs)
	}
	if res.noStore {
		h.Set("Cache-Status", fmt.Sprintf("%s; fwd=uri-miss; fwd-status=%d; detail=uncacheable", cacheName, resp.Status))
		w.WriteHeader(resp.Status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(resp.Body)
		}
		return
	}
	secs := int64(res.TTL.Seconds())
	if secs < 0 {
		secs = 0
	}
	if h.Get("Cache-Control") == "" {
		scope := "public"
		if perUser {
			scope = "private"
		}
		h.Set("Cache-Control", scope+", max-age="+strconv.FormatInt(secs, 10))
	}
	if len(m.o.vary) > 0 {
		h.Set("Vary", strings.Join(m.o.vary, ", "))
	}
	h.Set("ETag", resp.ETag)
	h.Set("Cache-Status", cacheStatus(res, resp.Status, revalidated))
	if resp.Status == http.StatusOK && etagMatch(r.Header.Get("If-None-Match"), resp.ETag) {
		h.Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(resp.Body)
	}
}

// httpStatus reports whether code is one WriteHeader takes (100..999).
func httpStatus(code int) bool { return code >= 100 && code <= 999 }

func cacheStatus(res Result, status int, revalidated bool) string {
	ttl := int64(res.TTL.Seconds())
	switch {
	case res.Status == Hit:
		return fmt.Sprintf("%s; hit; ttl=%d", cacheName, ttl)
	case res.Status == Stale:
		return fmt.Sprintf("%s; hit; ttl=%d; detail=stale", cacheName, min(ttl, -1))
	case res.Collapsed:
		return cacheName + "; fwd=miss; collapsed"
	}
	fwd := "miss"
	if revalidated {
		fwd = "request"
	}
	s := fmt.Sprintf("%s; fwd=%s; fwd-status=%d", cacheName, fwd, status)
	if res.Stored {
		s += "; stored"
	}
	return s
}

// hasDirective reports whether the lower-cased Cache-Control value cc has
// directive d.
func hasDirective(cc, d string) bool {
	for _, part := range strings.Split(cc, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
		if name == d {
			return true
		}
	}
	return false
}

// etagMatch is If-None-Match's weak comparison.
func etagMatch(header, etag string) bool {
	if header == "" || etag == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// recorder captures a handler's response.
type recorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}

// hopHeaders are not stored with a response.
var hopHeaders = []string{"Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Date", "Age", "Cache-Status", "Content-Length", "Proxy-Connection", "Te", "Trailer"}

func (r *recorder) response() Response {
	h := r.h.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
	}
	body := bytes.Clone(r.body.Bytes())
	etag := h.Get("ETag")
	h.Del("ETag")
	if etag == "" {
		sum := sha256.Sum256(body)
		etag = `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	}
	if len(h) == 0 {
		h = nil
	}
	return Response{Status: r.status, Header: h, Body: body, ETag: etag}
}
