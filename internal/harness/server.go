package harness

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// PrivateRedis starts a redis-server of the test's own on a free loopback
// port, stopped when the test ends, and returns its address once it
// answers: for a test that must do what would disturb the shared server
// (CLIENT PAUSE, a second shard). It skips the test when redis-server is
// not installed.
func PrivateRedis(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: free port: %v", err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + port
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	WaitFor(t, "redis-server on "+addr, func() bool { return c.Ping(context.Background()).Err() == nil })
	return addr
}

// PrivateClient returns a client, without retries, of a redis-server of
// the test's own (PrivateRedis), closed when the test ends, on every tier:
// for a test that sets what would disturb the shared server (maxmemory).
func (e *Env) PrivateClient() *redis.Client {
	e.T.Helper()
	c := redis.NewClient(&redis.Options{Addr: PrivateRedis(e.T), ContextTimeoutEnabled: true, MaxRetries: -1})
	e.T.Cleanup(func() { _ = c.Close() })
	return c
}
