package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

// serveConfig is what the serve command's flags say.
type serveConfig struct {
	addr    string
	write   bool
	token   string // from -token-file or $REDSCHEMA_TOKEN; "" to make one up (with -write)
	from    string // where token came from, for the startup line
	refresh time.Duration
	tlsCert string
	tlsKey  string
	app     []dashboard.Option // from -config
}

// minTokenLen is the shortest token serve accepts on a non-loopback
// address: the tokens it makes up have 32 hex digits.
const minTokenLen = 16

// serve runs the dashboard (package dashboard) on cfg.addr until ctx is
// done or SIGINT/SIGTERM arrives. It refuses a non-loopback address
// without a token of at least minTokenLen characters; with -write and no
// token it makes one and prints the URL that carries it (a token it was
// given is never printed).
func serve(ctx context.Context, out io.Writer, cs *keys.Clients, ns keys.Namespace, cfg serveConfig) (int, error) {
	host, _, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		return 2, fmt.Errorf("-addr %q: %v", cfg.addr, err)
	}
	public := !loopback(host)
	switch {
	case public && cfg.token == "":
		return 2, fmt.Errorf("-addr %s is not a loopback address: give a token (-token-file, or $REDSCHEMA_TOKEN)", cfg.addr)
	case public && len(cfg.token) < minTokenLen:
		return 2, fmt.Errorf("-addr %s is not a loopback address: the token (%s) must have at least %d characters", cfg.addr, cfg.from, minTokenLen)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return 2, errors.New("-tls-cert and -tls-key go together")
	}
	var certs []tls.Certificate
	if cfg.tlsCert != "" {
		c, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			return 2, fmt.Errorf("-tls-cert, -tls-key: %v", err)
		}
		certs = []tls.Certificate{c}
	}
	generated := false
	if cfg.write && cfg.token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return 2, err
		}
		cfg.token, generated = hex.EncodeToString(b), true
	}
	logger := slog.New(slog.NewTextHandler(out, nil))
	opts := []dashboard.Option{dashboard.WithClients(cs), dashboard.WithNamespace(ns), dashboard.WithLogger(logger),
		dashboard.WithRefresh(cfg.refresh)}
	opts = append(opts, cfg.app...)
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
	scheme := "http"
	if certs != nil {
		ln, scheme = tls.NewListener(ln, &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}), "https"
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	url := scheme + "://" + ln.Addr().String() + "/"
	mode := "read-only"
	if cfg.write {
		mode = "writes enabled"
	}
	// the startup line and its warning in one write, so that a reader of
	// the first line (a test, a supervisor's log) has the warning too
	var msg string
	switch {
	case generated:
		msg = fmt.Sprintf("redschema dashboard (%s) on %s#token=%s\n", mode, url, cfg.token)
	case cfg.token != "":
		msg = fmt.Sprintf("redschema dashboard (%s) on %s (token from %s, fingerprint %s)\n", mode, url, cfg.from, dashboard.Fingerprint(cfg.token))
	default:
		msg = fmt.Sprintf("redschema dashboard (%s) on %s\n", mode, url)
	}
	if public && certs == nil {
		msg += "warning: plain HTTP on a non-loopback address: the token crosses the network in clear; give -tls-cert and -tls-key\n"
	}
	fmt.Fprint(out, msg)
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

// readToken returns the token serve uses and where it came from: the
// first line of -token-file (surrounding space trimmed), else
// $REDSCHEMA_TOKEN, else "" (none). A token never comes from the command
// line, where ps shows it.
func readToken(file string) (token, from string, err error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", "", fmt.Errorf("-token-file: %v", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if token = strings.TrimSpace(line); token == "" {
			return "", "", fmt.Errorf("-token-file %s: the first line is empty", file)
		}
		return token, "-token-file", nil
	}
	if token = os.Getenv("REDSCHEMA_TOKEN"); token != "" {
		return token, "$REDSCHEMA_TOKEN", nil
	}
	return "", "", nil
}
