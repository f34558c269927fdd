package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

// serveConfig is what the serve command's flags say.
type serveConfig struct {
	addr    string
	write   bool
	token   string
	refresh time.Duration
}

// serve runs the dashboard (package dashboard) on cfg.addr until ctx is
// done or SIGINT/SIGTERM arrives. It refuses a non-loopback address
// without a token; with -write and no token it makes one and prints the
// URL that carries it.
func serve(ctx context.Context, out io.Writer, cs *keys.Clients, ns keys.Namespace, cfg serveConfig) (int, error) {
	host, _, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		return 2, fmt.Errorf("-addr %q: %v", cfg.addr, err)
	}
	if cfg.token == "" && !loopback(host) {
		return 2, fmt.Errorf("-addr %s is not a loopback address: give a -token (or $REDSCHEMA_TOKEN)", cfg.addr)
	}
	if cfg.write && cfg.token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return 2, err
		}
		cfg.token = hex.EncodeToString(b)
	}
	logger := slog.New(slog.NewTextHandler(out, nil))
	opts := []dashboard.Option{dashboard.WithClients(cs), dashboard.WithNamespace(ns), dashboard.WithLogger(logger),
		dashboard.WithRefresh(cfg.refresh)}
	if cfg.token != "" {
		opts = append(opts, dashboard.WithToken(cfg.token))
	}
	if cfg.write {
		opts = append(opts, dashboard.WithWrites())
	}
	h, err := dashboard.New(opts...)
	if err != nil {
		return 2, err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return 2, err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	mode := "read-only"
	if cfg.write {
		mode = "writes enabled"
	}
	if cfg.token != "" {
		fmt.Fprintf(out, "redschema dashboard (%s) on %s#token=%s\n", mode, url, cfg.token)
	} else {
		fmt.Fprintf(out, "redschema dashboard (%s) on %s\n", mode, url)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return 1, err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return 1, err
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return 1, err
	}
	return 0, nil
}

// loopback reports whether host (from -addr) is localhost or a loopback
// address; an empty host means every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
