package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/keys"
)

// scanHook counts SCAN commands and holds each for delay.
type scanHook struct {
	scans atomic.Int64
	delay atomic.Int64 // nanoseconds
}

func (h *scanHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scanHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *scanHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "scan") {
			h.scans.Add(1)
			time.Sleep(time.Duration(h.delay.Load()))
		}
		return next(ctx, cmd)
	}
}

// schemaServer serves a dashboard over a miniredis holding the demo data
// and three stray keys under "zentoria:", through a client that counts
// SCANs.
func schemaServer(t *testing.T) (*httptest.Server, *scanHook) {
	t.Helper()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	require.NoError(t, demo.Fill(ctx, c, keys.Namespace{}))
	for _, k := range []string{"queue:{a}:jobs", "session:index:{u1}", "user:{u2}"} {
		require.NoError(t, c.Set(ctx, "zentoria:"+k, "v", 0).Err())
	}
	hook := &scanHook{}
	c.AddHook(hook)
	h, err := dashboard.New(dashboard.WithClient(c))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, hook
}

func schemaGet(t *testing.T, srv *httptest.Server) (int, string) {
	resp, err := pageGet(srv.URL + "/api/schema")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Concurrent schema requests share one scan in flight; the page names
// the prefix under which stray keys would match.
func TestSchemaScanShared(t *testing.T) {
	srv, hook := schemaServer(t)
	hook.delay.Store(int64(200 * time.Millisecond))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := schemaGet(t, srv)
			require.Equal(t, http.StatusOK, code, body)
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, hook.scans.Load(), "four concurrent requests, one SCAN (the keyspace fits one COUNT)")

	_, body := schemaGet(t, srv)
	var rep struct {
		DBs []struct {
			Guesses []struct {
				Prefix string
				Keys   int64
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.NotEmpty(t, rep.DBs[0].Guesses, body)
	require.Equal(t, "zentoria:", rep.DBs[0].Guesses[0].Prefix)
	require.EqualValues(t, 3, rep.DBs[0].Guesses[0].Keys)
}

// A scan longer than the request's deadline goes on after the request
// gives up with a 504 that says so; the next request gets its result
// without scanning again.
func TestSlowSchemaScanFinishesAfterTheRequest(t *testing.T) {
	srv, hook := schemaServer(t)
	hook.delay.Store(int64(6 * time.Second)) // past the 5 s request deadline
	code, body := schemaGet(t, srv)
	require.Equal(t, http.StatusGatewayTimeout, code, body)
	require.Contains(t, body, "a later refresh shows it")
	hook.delay.Store(0)
	require.Eventually(t, func() bool {
		code, _ := schemaGet(t, srv)
		return code == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond)
	require.EqualValues(t, 1, hook.scans.Load(), "the request that timed out did not start a second scan")
}
