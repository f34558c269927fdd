package dashboard_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

type redisClient = redis.UniversalClient

// syncWriter is a log sink safe for the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// keysOf returns the registered template of owner spelled tmpl.
func keysOf(t *testing.T, owner, tmpl string) *keys.Template {
	t.Helper()
	for _, s := range dashboard.Schemas() {
		for _, tt := range s.Templates {
			if p := tt.Pattern(); p.Owner == owner && p.Template == tmpl {
				return tt
			}
		}
	}
	t.Fatalf("no pattern %s of %s", tmpl, owner)
	return nil
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// pageGet is a GET as the dashboard's page sends it: with the header
// that marks requests from the page (dashboard.RequestHeader).
func pageGet(url string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(dashboard.RequestHeader, "1")
	return http.DefaultClient.Do(req)
}
