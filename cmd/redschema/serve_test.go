package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// apiConfig is what /api/config answers.
type apiConfig struct {
	RefreshMs int64 `json:"refresh_ms"`
	Writable  bool
	DBs       []int
}

// serveAndConfig runs "serve -addr 127.0.0.1:0 -write" with args, reads
// /api/config with the token it prints, stops it and returns the config.
func serveAndConfig(t *testing.T, args ...string) apiConfig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuf{}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-write"}, args...), out)
		done <- result{code, err}
	}()
	re := regexp.MustCompile(`\(writes enabled\) on (http://127\.0\.0\.1:\d+/)#token=([0-9a-f]{32})`)
	var match []string
	for deadline := time.Now().Add(10 * time.Second); match == nil; match = re.FindStringSubmatch(out.String()) {
		select {
		case r := <-done:
			t.Fatalf("serve ended: %d %v\n%s", r.code, r.err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no URL: %s", out.String())
		}
	}

	req, _ := http.NewRequest("GET", match[1]+"api/config", nil)
	req.Header.Set("X-Redschema-Token", match[2])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var cfg apiConfig
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&cfg))
	resp.Body.Close()

	cancel()
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, 0, r.code)
	return cfg
}

func TestServe(t *testing.T) {
	m := miniredis.RunT(t)
	cfg := serveAndConfig(t, "-url", "redis://"+m.Addr(), "-layout", "seed", "-refresh", "2s")
	assert.Equal(t, int64(2000), cfg.RefreshMs)
	assert.True(t, cfg.Writable)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, cfg.DBs)
}

func TestServeNeedsTokenOffLoopback(t *testing.T) {
	m := miniredis.RunT(t)
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"serve", "-url", "redis://" + m.Addr(), "-addr", "0.0.0.0:0", "-token", ""}, &out)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "not a loopback address")
}
