package cache_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
)

func connect() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

type File struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// A read-through cache of the AI platform's API responses: the loader runs
// on a miss only, the TTL comes from its table, and a tag invalidates.
func Example() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	files, err := cache.New[[]File](rdb, cache.WithPolicy(cache.SeedPolicy()))
	if err != nil {
		panic(err)
	}
	defer files.Close()
	loads := 0
	list := func(ctx context.Context) ([]File, error) {
		loads++
		return []File{{ID: "1", Name: "report.pdf"}}, nil
	}
	key := cache.NewKey("/api/v1/files/list", "GET", url.Values{"page": {"1"}})
	for i := 0; i < 3; i++ {
		got, err := files.Get(ctx, key, list, cache.WithTags("files"))
		if err != nil {
			panic(err)
		}
		fmt.Println(got[0].Name)
	}
	fmt.Println("loads:", loads)
	fmt.Println("ttl:", rdb.TTL(ctx, "cache:api:/api/v1/files/list:GET:{"+key.ParamsHash()+"}").Val())

	n, _ := files.InvalidateTag(ctx, "files")
	fmt.Println("invalidated:", n)
	_, _ = files.Get(ctx, key, list, cache.WithTags("files"))
	fmt.Println("loads:", loads)
	// Output:
	// report.pdf
	// report.pdf
	// report.pdf
	// loads: 1
	// ttl: 30s
	// invalidated: 1
	// loads: 2
}

// ErrNotFound from a loader is returned to the caller, and cached for a
// while with WithNegativeTTL.
func ExampleCache_Get_notFound() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	files, _ := cache.New[File](rdb, cache.WithNegativeTTL(10*time.Second))
	defer files.Close()
	lookups := 0
	find := func(ctx context.Context) (File, error) {
		lookups++
		return File{}, fmt.Errorf("file 404: %w", cache.ErrNotFound)
	}
	for i := 0; i < 3; i++ {
		_, err := files.Get(ctx, cache.NewKey("/api/v1/files/404", "GET", nil), find)
		fmt.Println(errors.Is(err, cache.ErrNotFound))
	}
	fmt.Println("lookups:", lookups)
	// Output:
	// true
	// true
	// true
	// lookups: 1
}

// Middleware caches GET responses, answers If-None-Match with 304 and says
// what it did in Cache-Status.
func ExampleMiddleware() {
	rdb, stop := connect()
	defer stop()
	responses, _ := cache.New[cache.Response](rdb, cache.WithPolicy(cache.SeedPolicy()))
	defer responses.Close()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"models":["small","large"]}`)
	})
	srv := httptest.NewServer(cache.Middleware(responses)(api))
	defer srv.Close()

	get := func(etag string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/ai/models", nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		res.Body.Close()
		return res
	}
	first := get("")
	fmt.Println(first.StatusCode, first.Header.Get("Cache-Status"), "|", first.Header.Get("Cache-Control"))
	second := get(first.Header.Get("ETag"))
	status, _, _ := strings.Cut(second.Header.Get("Cache-Status"), "; ttl=")
	fmt.Println(second.StatusCode, status)
	// Output:
	// 200 redschema; fwd=miss; fwd-status=200; stored | public, max-age=86400
	// 304 redschema; hit
}

// Another package reuses the machinery for keys it owns: a value pattern
// and a meta pattern with the same placeholders and hash tag.
func ExampleNewStore() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	reg := &keys.Registry{}
	value := reg.MustRegister(keys.Pattern{Template: "ai:rag:query:{query_hash}", Type: keys.String, TTL: 30 * time.Minute,
		Tag: "query_hash", Owner: "example", Purpose: "RAG chunks"})
	meta := reg.MustRegister(keys.Pattern{Template: "ai:rag:meta:{query_hash}", Type: keys.Hash, TTL: 30 * time.Minute,
		Tag: "query_hash", Owner: "example", Purpose: "RAG cache metadata"})

	rag, err := cache.NewStore(rdb, cache.Layout{Value: value, Meta: meta})
	if err != nil {
		panic(err)
	}
	defer rag.Close()
	ref, _ := rag.Ref("5f3a")
	for i := 0; i < 2; i++ {
		res, err := rag.Fetch(ctx, ref, func(ctx context.Context) ([]byte, error) {
			return []byte(`["chunk 1","chunk 2"]`), nil
		}, cache.WithTTL(30*time.Minute))
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Status, string(res.Value))
	}
	fmt.Println(ref.Key())
	// Output:
	// loaded ["chunk 1","chunk 2"]
	// hit ["chunk 1","chunk 2"]
	// ai:rag:query:{5f3a}
}

// An admin tool reads the API cache's sums per endpoint and its tags
// through an Inspector.
func ExampleNewInspector() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	files, err := cache.New[[]File](rdb)
	if err != nil {
		panic(err)
	}
	list := func(ctx context.Context) ([]File, error) { return []File{{ID: "1", Name: "report.pdf"}}, nil }
	key := cache.NewKey("/api/v1/files/list", "GET", nil)
	for i := 0; i < 3; i++ { // a load, then two hits
		if _, err := files.Get(ctx, key, list, cache.WithTags("files")); err != nil {
			panic(err)
		}
	}
	_ = files.Close() // flushes the hit counts

	in, err := cache.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	o, err := in.Overview(ctx)
	if err != nil {
		panic(err)
	}
	for _, e := range o.Endpoints {
		fmt.Printf("%s %s: %d entry, %d hits, hit rate %.2f\n", e.Method, e.Endpoint, e.Entries, e.Hits, e.HitRate())
	}
	for _, t := range o.Tags {
		fmt.Printf("tag %s: %d\n", t.Tag, t.Members)
	}
	// Output:
	// GET /api/v1/files/list: 1 entry, 2 hits, hit rate 0.67
	// tag files: 1
}
