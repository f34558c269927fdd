package route

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

type key struct{}

// Serve hands next the copy and carries the pattern the mux set on it
// back to the request it was given, when next returns and when it panics.
func TestServe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(key{}) != true {
			t.Error("the handler did not get the copy")
		}
	})
	mux.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Serve(next, w, r, r.WithContext(context.WithValue(r.Context(), key{}, true)))
		})
	}
	h := wrap(mux)

	r := httptest.NewRequest("GET", "/items/7", nil)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if r.Pattern != "GET /items/{id}" {
		t.Errorf("pattern %q after the handler", r.Pattern)
	}

	r = httptest.NewRequest("GET", "/boom", nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	if r.Pattern != "GET /boom" {
		t.Errorf("pattern %q after a panic", r.Pattern)
	}

	// No mux behind: the request keeps the pattern it came with.
	r = httptest.NewRequest("GET", "/x", nil)
	r.Pattern = "GET /outer/"
	wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(httptest.NewRecorder(), r)
	if r.Pattern != "GET /outer/" {
		t.Errorf("pattern %q without a mux", r.Pattern)
	}

	// Without a copy, Serve only calls next.
	r = httptest.NewRequest("GET", "/items/8", nil)
	Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { r.Pattern = "set" }), httptest.NewRecorder(), r, r)
	if r.Pattern != "set" {
		t.Errorf("pattern %q without a copy", r.Pattern)
	}
}
