package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "app.json")
	require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
	return f
}

// With -config, the dashboard reads the application's keys with its own
// options: the chat admins under its tag, its limiters by name, its
// prefix.
func TestServeWithConfig(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	ns := keys.Namespace{Prefix: "ha:"}
	ch, err := chat.New(c, chat.WithNamespace(ns), chat.WithTag("support"))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, ch.AddAdmin(ctx, "alice", 3))
	require.NoError(t, ch.AddAdmin(ctx, "bob", 2))

	file := writeConfig(t, `{
		"prefix": "ha:",
		"chat": {"tag": "support"},
		"queue": {"seed_consumers": true},
		"metrics": {"shared_keys": true},
		"presence": {"profile": "compact", "ttl": "30m"},
		"limiters": {"api": {"rules": [{"algorithm": "fixed", "rate": 100, "per": "1m"}], "runtime_config": true}},
		"intervals": {"token-cleanup": "1h"}
	}`)
	t.Setenv("REDSCHEMA_TOKEN", "")
	line, _ := startServe(t, "-url", "redis://"+m.Addr(), "-addr", "127.0.0.1:0", "-config", file)
	base := regexp.MustCompile(`http://\S+/`).FindString(line)
	get := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set(dashboard.RequestHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	var cfg struct{ Prefix string }
	get("api/config", &cfg)
	assert.Equal(t, "ha:", cfg.Prefix)
	var pres struct{ Admins []struct{ ID string } }
	get("api/presence", &pres)
	assert.Len(t, pres.Admins, 2, "the admins under the application's chat tag")
	var rl struct{ Limiters []string }
	get("api/ratelimits", &rl)
	assert.Equal(t, []string{"api"}, rl.Limiters)
}

// chat.without_tag gives the dashboard the mode of an application that
// shares the home-automation backend's keys: chat's admins under the
// backend's untagged keys, and an availability word the backend's
// node-redis wrote without a TTL shown as that word.
func TestServeWithSharedKeysConfig(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	ns := keys.Namespace{Prefix: "ha:", NoHashTags: true}
	ch, err := chat.New(c, chat.WithNamespace(ns), chat.WithoutTag())
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, ch.AddAdmin(ctx, "alice", 3))
	require.NoError(t, c.Set(ctx, "ha:admin:alice:presence", "busy", 0).Err()) // the backend's SET, no TTL

	file := writeConfig(t, `{
		"prefix": "ha:", "no_hash_tags": true,
		"chat": {"without_tag": true}
	}`)
	t.Setenv("REDSCHEMA_TOKEN", "")
	line, _ := startServe(t, "-url", "redis://"+m.Addr(), "-addr", "127.0.0.1:0", "-config", file)
	base := regexp.MustCompile(`http://\S+/`).FindString(line)
	req, _ := http.NewRequest("GET", base+"api/presence", nil)
	req.Header.Set(dashboard.RequestHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var pres struct {
		Admins []struct{ ID, Availability string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&pres))
	require.Len(t, pres.Admins, 1, "the admin under the backend's untagged roster")
	assert.Equal(t, "alice", pres.Admins[0].ID)
	assert.Equal(t, "busy", pres.Admins[0].Availability, "the backend's word, read although it has no TTL")
}

func TestConfigErrors(t *testing.T) {
	m := miniredis.RunT(t)
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field":  {`{"prefx": "ha:"}`, `unknown field "prefx"`},
		"bad algorithm":  {`{"limiters": {"api": {"rules": [{"algorithm": "leaky", "rate": 1, "per": "1s"}]}}}`, `algorithm "leaky"`},
		"no rules":       {`{"limiters": {"api": {}}}`, `limiter "api": no rules`},
		"bad profile":    {`{"presence": {"profile": "chatty"}}`, `presence profile "chatty"`},
		"bad duration":   {`{"intervals": {"job": 5}}`, `a duration is a string`},
		"bad prefix":     {`{"prefix": "ha"}`, `ha`},
		"limiter policy": {`{"limiters": {"api": {"rules": [{"algorithm": "fixed", "rate": 0, "per": "1s"}]}}}`, `limiter "api"`},
	} {
		file := writeConfig(t, tc.body)
		var out bytes.Buffer
		code, err := run(context.Background(), []string{"serve", "-url", "redis://" + m.Addr(), "-config", file}, &out)
		assert.Equal(t, 2, code, name)
		assert.ErrorContains(t, err, tc.want, name)
	}
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"audit", "-url", "redis://" + m.Addr(), "-config", writeConfig(t, `{}`), "-prefix", "x:"}, &out)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "drop -prefix")
}
