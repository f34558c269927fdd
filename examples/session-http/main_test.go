package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/redschema/redschema/connect/connecttest"
)

type client struct {
	t *testing.T
	h http.Handler
}

func (c client) do(method, path, handle string, form url.Values) (int, string) {
	c.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if handle != "" {
		r.Header.Set("Authorization", "Bearer "+handle)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// Two devices of one user: the device list shows IDs that can log a device
// out but never authenticate, and no device's handle or refresh token.
func TestSessionListHoldsNoCredential(t *testing.T) {
	// Checked once the test's defers stopped the API and the client closed.
	t.Cleanup(connecttest.CheckShutdown(t))
	rdb, ns := connecttest.Open(t, "session")
	a, err := newApp(rdb, ns)
	if err != nil {
		t.Fatal(err)
	}
	c := client{t, a.routes()}
	type login struct {
		Handle  string `json:"handle"`
		Refresh string `json:"refresh_token"`
		ID      string `json:"session_id"`
	}
	var dev [2]login
	for i, d := range []string{"laptop", "phone"} {
		code, body := c.do("POST", "/login?user=alice&device="+d, "", nil)
		if code != 200 {
			t.Fatalf("login: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &dev[i]); err != nil {
			t.Fatal(err)
		}
	}
	code, body := c.do("GET", "/sessions", dev[0].Handle, nil)
	if code != 200 {
		t.Fatalf("sessions: %d %s", code, body)
	}
	var list []struct {
		ID      string `json:"session_id"`
		Current bool   `json:"current"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("listed %d sessions: %s", len(list), body)
	}
	for _, d := range dev {
		for _, secret := range []string{d.Handle, strings.Split(d.Handle, ".")[0], d.Refresh} {
			if strings.Contains(body, secret) {
				t.Fatalf("GET /sessions shows a credential: %s", body)
			}
		}
	}
	user := base64.RawURLEncoding.EncodeToString([]byte("alice"))
	for _, e := range list {
		for _, h := range []string{e.ID, e.ID + "." + user} {
			if code, _ := c.do("GET", "/me", h, nil); code != http.StatusUnauthorized {
				t.Fatalf("a listed ID authenticates: %d", code)
			}
		}
	}
	// The laptop logs the phone out by its ID.
	if code, body := c.do("DELETE", "/sessions/"+dev[1].ID, dev[0].Handle, nil); code != 200 || !strings.Contains(body, "true") {
		t.Fatalf("revoke the phone: %d %s", code, body)
	}
	if code, _ := c.do("GET", "/me", dev[1].Handle, nil); code != http.StatusUnauthorized {
		t.Fatalf("the phone's handle still works: %d", code)
	}
	if code, _ := c.do("POST", "/refresh", "", url.Values{"handle": {dev[1].Handle}, "refresh_token": {dev[1].Refresh}}); code != http.StatusUnauthorized {
		t.Fatalf("the phone's refresh token still works: %d", code)
	}
	if code, body := c.do("POST", "/refresh", "", url.Values{"handle": {dev[0].Handle}, "refresh_token": {dev[0].Refresh}}); code != 200 {
		t.Fatalf("the laptop's refresh: %d %s", code, body)
	}
	if code, _ := c.do("POST", "/logout-everywhere", dev[0].Handle, nil); code != 200 {
		t.Fatalf("logout everywhere: %d", code)
	}
	if code, _ := c.do("GET", "/me", dev[0].Handle, nil); code != http.StatusUnauthorized {
		t.Fatalf("the laptop's handle still works after logging out everywhere: %d", code)
	}
}
