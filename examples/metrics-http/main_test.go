package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestServe runs the program on the suite's backend and a free port, reads
// /metrics over HTTP, and stops it.
func TestServe(t *testing.T) {
	t.Setenv("REDIS_KEY_PREFIX", connecttest.Use(t, "metrics", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out connecttest.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	stopped := connecttest.CheckShutdown(t)
	go func() { done <- run(ctx, "127.0.0.1:0", &out, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "after 500 requests: requests:total=500 requests:accepted=500 errors:total=100") {
		t.Fatalf("totals:\n%s", out.String())
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{
		`http_endpoint_requests_total{endpoint="GET /api/forum/questions/{id}"} 200`,
		`http_endpoint_errors_total{endpoint="POST /api/auth/login"} 100`,
		`ai_tokens_used{model="small-model",type="prompt"} 4200`,
		`api_requests_total{endpoint="/api/auth/login",method="POST",status="401"} 100`,
		"\nhttp_connections ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stopped()
}
