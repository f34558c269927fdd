// Package demo connects the example programs to Redis: the server named by
// REDIS_URL ("redis://host:port/db", parsed by redis.ParseURL), a cluster
// when REDIS_URL is a comma-separated list of host:port, or a miniredis
// started in-process when REDIS_URL is unset. It prints one line saying
// which. A program copied out of this repository replaces it with its own
// redis.NewClient call.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Connect returns a client and a function that closes it (and stops the
// embedded server). Diagnostics go to w.
func Connect(w io.Writer) (redis.UniversalClient, func(), error) {
	url := os.Getenv("REDIS_URL")
	var c redis.UniversalClient
	stop := func() {}
	switch {
	case url == "":
		m, err := miniredis.Run()
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(w, "redis: embedded miniredis on %s (set REDIS_URL to use a server)\n", m.Addr())
		c = redis.NewClient(&redis.Options{Addr: m.Addr()})
		stop = m.Close
	case strings.Contains(url, ",") && !strings.Contains(url, "://"):
		fmt.Fprintf(w, "redis: cluster %s\n", url)
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(url, ",")})
	default:
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		fmt.Fprintf(w, "redis: %s db %d\n", opt.Addr, opt.DB)
		c = redis.NewClient(opt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		stop()
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	return c, func() { _ = c.Close(); stop() }, nil
}

// Addr returns the listen address for HTTP examples: ADDR, or
// 127.0.0.1:8080.
func Addr() string {
	if a := os.Getenv("ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:8080"
}

// SignalContext returns a context cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
