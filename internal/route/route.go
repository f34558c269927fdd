// Package route carries the pattern that http.ServeMux matched back out
// through middleware that passes a copy of the request on.
//
// ServeMux records the pattern it matched (r.Pattern) on the request value
// it receives. A middleware that calls r.WithContext (to add a value to
// the context) hands the mux a copy, so the layers outside it would never
// see the pattern: the metrics middleware, which labels requests by route,
// would record every request as unmatched. Each redschema middleware that
// passes a copy on calls Serve, which copies the pattern back when the
// handler returns, so the metrics middleware finds it whatever order the
// middleware are in.
package route

import "net/http"

// Serve calls next with w and inner, a copy of r that the middleware made
// (r.WithContext, r.Clone), then sets r.Pattern to inner.Pattern: the
// pattern the mux behind it matched, or r's own when no mux ran (a copy
// starts with r's pattern). It does so when next panics too, so a layer
// that records the panic sees the route. Without a copy (inner == r) it
// only calls next.
func Serve(next http.Handler, w http.ResponseWriter, r, inner *http.Request) {
	if inner != r {
		defer func() { r.Pattern = inner.Pattern }()
	}
	next.ServeHTTP(w, inner)
}
