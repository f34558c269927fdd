package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
)

// syncBuffer is a bytes.Buffer safe for the server and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testRedis points REDIS_URL at the backend the test suite runs on: the
// cluster of REDIS_CLUSTER_ADDRS, the server of REDIS_ADDR, or (neither
// set) the embedded one. It returns a key prefix of this test's own,
// whose keys are deleted when the test ends.
func testRedis(t *testing.T) string {
	t.Helper()
	url := ""
	switch {
	case os.Getenv("REDIS_CLUSTER_ADDRS") != "":
		url = os.Getenv("REDIS_CLUSTER_ADDRS")
	case os.Getenv("REDIS_ADDR") != "":
		url = "redis://" + os.Getenv("REDIS_ADDR") + "/0"
	}
	t.Setenv("REDIS_URL", url)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "metrics-test-" + hex.EncodeToString(b) + ":"
	t.Setenv("REDIS_KEY_PREFIX", prefix)
	if url == "" {
		return prefix // the embedded Redis goes with the program
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rdb, closeRedis, err := connect.Open(ctx, url)
		if err != nil {
			t.Error(err)
			return
		}
		defer closeRedis()
		del := func(ctx context.Context, c *redis.Client) error {
			it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for it.Next(ctx) {
				if err := c.Del(ctx, it.Val()).Err(); err != nil {
					return err
				}
			}
			return it.Err()
		}
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			err = cc.ForEachMaster(ctx, del)
		} else {
			err = del(ctx, rdb.(*redis.Client))
		}
		if err != nil {
			t.Error(err)
		}
	})
	return prefix
}

// TestServe runs the program on the suite's backend and a free port, reads
// /metrics over HTTP, and stops it.
func TestServe(t *testing.T) {
	testRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
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
}
