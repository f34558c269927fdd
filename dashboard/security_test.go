package dashboard_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
)

// serve runs one request through the handler as if it came from remote,
// and returns the status and body.
func serveAs(h http.Handler, r *http.Request, remote string) (int, string) {
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// A page on another site cannot read the dashboard, even one without a
// token: a browser sends no custom header cross-site without a CORS
// preflight, which the dashboard never grants.
func TestCrossSiteReadsRefused(t *testing.T) {
	f := setup(t)
	for name, hdr := range map[string]map[string]string{
		"no header (an <img> or no-cors fetch of an old browser)": {},
		"cross-site":           {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"same-site":            {"Sec-Fetch-Site": "same-site"},
		"typed into the tab":   {"Sec-Fetch-Site": "none"},
		"wrong header spelled": {"X-Requested-With": "1"},
	} {
		for _, path := range []string{"/api/queues", "/api/schema", "/api/sessions?user=ada", "/api/inspect?key=x"} {
			req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s: %s", name, path, b)
			require.Contains(t, string(b), "cross-site", name)
		}
	}
	require.Contains(t, f.log.String(), `origin=https://evil.example`, "the refusal log names the Origin")
	for name, hdr := range map[string]map[string]string{
		"the page's header":        {dashboard.RequestHeader: "1"},
		"the browser: same-origin": {"Sec-Fetch-Site": "same-origin"},
	} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/queues", nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
	}
	// The page and its assets need nothing: they hold no data.
	resp, err := http.Get(f.srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// Without a token, dashboard.New serves loopback clients only: a remote
// client naming "localhost" in its Host header is refused.
func TestNoTokenServesLoopbackClientsOnly(t *testing.T) {
	env := setup(t).env
	h, err := dashboard.New(dashboard.WithClient(env.Client), dashboard.WithNamespace(env.NS))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	get := func(host string) *http.Request {
		r := httptest.NewRequest("GET", "http://"+host+"/api/config", nil)
		r.Header.Set(dashboard.RequestHeader, "1")
		return r
	}
	code, body := serveAs(h, get("localhost:8080"), "203.0.113.7:51000")
	require.Equal(t, http.StatusForbidden, code, body)
	code, _ = serveAs(h, get("localhost:8080"), "127.0.0.1:51000")
	require.Equal(t, http.StatusOK, code)
	code, _ = serveAs(h, get("[::1]:8080"), "[::1]:51000")
	require.Equal(t, http.StatusOK, code)
	code, _ = serveAs(h, get("attacker.example"), "127.0.0.1:51000")
	require.Equal(t, http.StatusForbidden, code, "DNS rebinding: a loopback client with a foreign Host")
}

// Wrong tokens are throttled per client address; another address is
// not affected, and a right token from the throttled address waits too.
func TestWrongTokensThrottled(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	h, err := dashboard.New(dashboard.WithClient(f.env.Client), dashboard.WithNamespace(f.env.NS), dashboard.WithToken(testToken))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	get := func(token string) *http.Request {
		r := httptest.NewRequest("GET", "http://dash.example/api/config", nil)
		r.Header.Set(dashboard.TokenHeader, token)
		return r
	}
	for i := 0; i < 10; i++ {
		code, _ := serveAs(h, get("guess"), "198.51.100.1:1000")
		require.Equal(t, http.StatusUnauthorized, code, "guess %d", i+1)
	}
	code, body := serveAs(h, get(testToken), "198.51.100.1:1001")
	require.Equal(t, http.StatusTooManyRequests, code, body)
	code, body = serveAs(h, get(testToken), "198.51.100.2:1000")
	require.Equal(t, http.StatusOK, code, body)
}

// Each action's log line names the token that made it by its
// fingerprint, never the token.
func TestActionLogNamesTheToken(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithWrites())
	form := url.Values{"queue": {demo.Queue}, "id": {demo.DeadIDs[0]}}
	code, body := f.post(t, "/api/queue/requeue", form, tokenHdr())
	require.Equal(t, http.StatusOK, code, body)
	log := f.log.String()
	require.Contains(t, log, "token="+dashboard.Fingerprint(testToken))
	require.NotContains(t, log, testToken)
	require.Len(t, dashboard.Fingerprint(testToken), 8)
	require.NotEqual(t, dashboard.Fingerprint(testToken), dashboard.Fingerprint(testToken+"x"))
}

// A large reply is compressed for a client that accepts gzip, and the
// same JSON once decompressed.
func TestLargeRepliesCompressed(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken))
	fetch := func(gz bool) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/schema", nil)
		req.Header.Set(dashboard.TokenHeader, testToken)
		if gz {
			req.Header.Set("Accept-Encoding", "br, gzip;q=0.8")
		}
		tr := &http.Transport{DisableCompression: true}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	plainResp, plain := fetch(false)
	require.Empty(t, plainResp.Header.Get("Content-Encoding"))
	gzResp, packed := fetch(true)
	require.Equal(t, "gzip", gzResp.Header.Get("Content-Encoding"))
	require.Less(t, len(packed), len(plain)/3, "compressed %d of %d bytes", len(packed), len(plain))
	zr, err := gzip.NewReader(strings.NewReader(string(packed)))
	require.NoError(t, err)
	unpacked, err := io.ReadAll(zr)
	require.NoError(t, err)
	var a, b map[string]any
	require.NoError(t, json.Unmarshal(plain, &a))
	require.NoError(t, json.Unmarshal(unpacked, &b))
	require.Equal(t, a, b)
}
