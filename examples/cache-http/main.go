// Command cache-http serves a small file API through the cache
// middleware (seed 001's API cache):
//
//	GET  /api/v1/files/list      cached 30s, tag "files"
//	GET  /api/v1/files/{id}      cached 300s, tag "files"
//	GET  /api/v1/settings/theme  cached 3600s
//	GET  /api/v1/me              cached per user (X-User header), tag "user:{id}"
//	POST /api/v1/files?name=...  adds a file and invalidates tag "files"
//
// Handlers sleep 50 ms, as a database would; responses say in
// Cache-Status whether they were a hit or a miss.
//
//	go run ./examples/cache-http                 # embedded Redis
//	curl -i http://127.0.0.1:8080/api/v1/files/list
//	curl -i -X POST 'http://127.0.0.1:8080/api/v1/files?name=b.txt'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	h, closeAPI, err := newAPI(rdb, keys.Namespace{})
	if err != nil {
		return err
	}
	defer closeAPI()
	srv := &http.Server{Addr: connect.HTTPAddr(), Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Printf("listening on http://%s  (try: curl -i http://%s/api/v1/files/list)\n", srv.Addr, srv.Addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Println("stopped")
	return nil
}

// api is the demo's "database": a list of file names.
type api struct {
	mu    sync.Mutex
	files []string
	resp  *cache.Cache[cache.Response]
}

// newAPI returns the API handler, wrapped in the cache middleware, and a
// function that closes the cache. Its keys are under ns.
func newAPI(rdb redis.UniversalClient, ns keys.Namespace) (http.Handler, func(), error) {
	resp, err := cache.New[cache.Response](rdb, cache.WithNamespace(ns),
		cache.WithPolicy(cache.SeedPolicy()),
		cache.WithGrace(10*time.Second), // serve stale for 10s while one refresh runs
		cache.WithErrorHook(func(_ context.Context, key string, err error) { log.Printf("cache %s: %v", key, err) }),
	)
	if err != nil {
		return nil, nil, err
	}
	a := &api{files: []string{"a.txt"}, resp: resp}
	cached := cache.Middleware(resp,
		cache.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		cache.WithTagsFor(func(r *http.Request) []string {
			if strings.HasPrefix(r.URL.Path, "/api/v1/files/") {
				return []string{"files"}
			}
			return nil
		}),
	)
	reads := http.NewServeMux()
	reads.HandleFunc("GET /api/v1/files/list", a.list)
	reads.HandleFunc("GET /api/v1/files/{id}", a.file)
	reads.HandleFunc("GET /api/v1/settings/theme", func(w http.ResponseWriter, r *http.Request) { slow(); writeJSON(w, map[string]string{"theme": "dark"}) })
	reads.HandleFunc("GET /api/v1/me", func(w http.ResponseWriter, r *http.Request) {
		slow()
		writeJSON(w, map[string]string{"user": r.Header.Get("X-User")})
	})
	mux := http.NewServeMux()
	mux.Handle("GET /", cached(reads))
	mux.HandleFunc("POST /api/v1/files", a.add)
	return mux, func() { _ = resp.Close() }, nil
}

func slow() { time.Sleep(50 * time.Millisecond) }

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	slow()
	a.mu.Lock()
	files := append([]string(nil), a.files...)
	a.mu.Unlock()
	writeJSON(w, map[string]any{"files": files})
}

func (a *api) file(w http.ResponseWriter, r *http.Request) {
	slow()
	id := r.PathValue("id")
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range a.files {
		if f == id {
			writeJSON(w, map[string]string{"name": f})
			return
		}
	}
	http.Error(w, `{"error":"no such file"}`, http.StatusNotFound)
}

// add stores a file, then invalidates every cached response tagged
// "files": the next reads load again.
func (a *api) add(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		http.Error(w, "name required", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.files = append(a.files, name)
	a.mu.Unlock()
	n, err := a.resp.InvalidateTag(r.Context(), "files")
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, map[string]any{"added": name, "invalidated": n})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
