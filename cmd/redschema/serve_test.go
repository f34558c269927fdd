package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
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
	t.Setenv("REDSCHEMA_TOKEN", "")
	code, err := run(context.Background(), []string{"serve", "-url", "redis://" + m.Addr(), "-addr", "0.0.0.0:0"}, &out)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "not a loopback address")
	t.Setenv("REDSCHEMA_TOKEN", "short-token")
	code, err = run(context.Background(), []string{"serve", "-url", "redis://" + m.Addr(), "-addr", "0.0.0.0:0"}, &out)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "at least 16 characters")
}

// startServe runs serve with args until the test ends and returns the
// first line it prints and everything it printed so far.
func startServe(t *testing.T, args ...string) (string, *lockedBuf) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuf{}
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, append([]string{"serve"}, args...), out)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if line, _, ok := strings.Cut(out.String(), "\n"); ok {
			return line, out
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve ended: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed nothing")
		}
	}
}

// A token the operator gave, from a file or the environment, is never
// printed; the startup line names where it came from and its
// fingerprint.
func TestServeNeverPrintsAGivenToken(t *testing.T) {
	m := miniredis.RunT(t)
	const secret = "operator-chosen-token-0123456789"
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("  "+secret+"  \nignored\n"), 0o600))
	t.Setenv("REDSCHEMA_TOKEN", "")
	line, out := startServe(t, "-url", "redis://"+m.Addr(), "-addr", "127.0.0.1:0", "-write", "-token-file", file)
	assert.NotContains(t, out.String(), secret)
	assert.Contains(t, line, "token from -token-file, fingerprint "+dashboard.Fingerprint(secret))
	url := regexp.MustCompile(`http://\S+/`).FindString(line)
	req, _ := http.NewRequest("GET", url+"api/config", nil)
	req.Header.Set(dashboard.TokenHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	t.Setenv("REDSCHEMA_TOKEN", secret)
	line, out = startServe(t, "-url", "redis://"+m.Addr(), "-addr", "127.0.0.1:0")
	assert.NotContains(t, out.String(), secret)
	assert.Contains(t, line, "token from $REDSCHEMA_TOKEN")

	var buf bytes.Buffer
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	code, err := run(context.Background(), []string{"serve", "-url", "redis://" + m.Addr(), "-token-file", empty}, &buf)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "first line is empty")
}

// -tls-cert and -tls-key serve HTTPS; a public address without them
// gets a warning that the token travels in clear.
func TestServeTLS(t *testing.T) {
	m := miniredis.RunT(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	t.Setenv("REDSCHEMA_TOKEN", "operator-chosen-token-0123456789")
	line, _ := startServe(t, "-url", "redis://"+m.Addr(), "-addr", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile)
	url := regexp.MustCompile(`https://\S+/`).FindString(line)
	require.NotEmpty(t, url, line)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", url+"api/config", nil)
	req.Header.Set(dashboard.TokenHeader, "operator-chosen-token-0123456789")
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	var buf bytes.Buffer
	code, err := run(context.Background(), []string{"serve", "-url", "redis://" + m.Addr(), "-tls-cert", certFile}, &buf)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "go together")

	_, out := startServe(t, "-url", "redis://"+m.Addr(), "-addr", "0.0.0.0:0")
	assert.Contains(t, out.String(), "warning: plain HTTP on a non-loopback address")
}

// selfSigned writes a certificate for 127.0.0.1 and its key under dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redschema test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
