package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestAPI drives the server over HTTP on the suite's backend: a miss, a
// hit, a write that invalidates the tag, a miss again, per-user entries.
func TestAPI(t *testing.T) {
	// Checked once the test's defers stopped the API and the client closed.
	t.Cleanup(connecttest.CheckShutdown(t))
	rdb, ns := connecttest.Open(t, "cache")
	h, closeAPI, err := newAPI(rdb, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAPI()
	srv := httptest.NewServer(h)
	defer srv.Close()

	do := func(method, path, user string) (int, string, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Cache-Status"), string(b)
	}
	expect := func(method, path, user, status, body string) {
		t.Helper()
		_, cs, b := do(method, path, user)
		if !strings.Contains(cs, status) || !strings.Contains(b, body) {
			t.Fatalf("%s %s: Cache-Status %q body %q; want %q and %q", method, path, cs, b, status, body)
		}
	}
	expect("GET", "/api/v1/files/list", "", "fwd=miss", `"a.txt"`)
	expect("GET", "/api/v1/files/list", "", "hit", `"a.txt"`)
	expect("GET", "/api/v1/files/a.txt", "", "fwd=miss", `"name":"a.txt"`)
	if code, _, b := do("POST", "/api/v1/files?name=b.txt", ""); code != http.StatusCreated || !strings.Contains(b, `"invalidated":2`) {
		t.Fatalf("POST: %d %s", code, b)
	}
	expect("GET", "/api/v1/files/list", "", "fwd=miss", `"b.txt"`)
	expect("GET", "/api/v1/files/b.txt", "", "fwd=miss", `"name":"b.txt"`)
	expect("GET", "/api/v1/files/nope", "", "fwd=miss", "no such file")
	expect("GET", "/api/v1/files/nope", "", "hit", "no such file")
	expect("GET", "/api/v1/me", "42", "fwd=miss", `"user":"42"`)
	expect("GET", "/api/v1/me", "7", "fwd=miss", `"user":"7"`)
	expect("GET", "/api/v1/me", "42", "hit", `"user":"42"`)
	expect("GET", "/api/v1/settings/theme", "", "fwd=miss", "dark")
}
