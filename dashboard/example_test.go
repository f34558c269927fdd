package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/queue"
)

func Example() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	// Some data to show: a queue with two jobs.
	ctx := context.Background()
	q, _ := queue.New[string](rdb, "emails")
	_, _ = q.Enqueue(ctx, "hello")
	_, _ = q.Enqueue(ctx, "world", queue.WithPriority(queue.High))

	// The dashboard, read-only; "redschema serve" mounts the same handler.
	h, err := dashboard.New(dashboard.WithClient(rdb),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()

	// The page marks its requests with dashboard.RequestHeader; a request
	// without it (or the token's header) is refused as cross-site.
	req, _ := http.NewRequest("GET", srv.URL+"/api/queues", nil)
	req.Header.Set(dashboard.RequestHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	fmt.Println(resp.StatusCode, strings.Contains(body, `"ready":{"high":1,"low":0,"normal":1}`))

	// Actions are refused: the handler is read-only.
	resp, err = http.Post(srv.URL+"/api/queue/delete", "application/x-www-form-urlencoded", strings.NewReader("queue=emails&id=x"))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200 true
	// 403
}
