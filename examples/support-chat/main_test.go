package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestSupportChat drives the server over HTTP on the suite's backend: two
// admins of capacity 1 go online, three conversations arrive (the third
// waits in the backlog), a user writes (unread, dashboard), an admin goes
// offline (their conversation is requeued and waits), a resolution frees
// a place (the backlog moves), and the event stream saw it all.
func TestSupportChat(t *testing.T) {
	// Checked once the test's defers stopped the API and the client closed.
	t.Cleanup(connecttest.CheckShutdown(t))
	rdb, ns := connecttest.Open(t, "support")
	h, closeAPI, err := newAPI(rdb, ns)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer closeAPI()

	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
		}
		var v any
		_ = json.Unmarshal(b, &v)
		if m, ok := v.(map[string]any); ok {
			return m
		}
		return map[string]any{"list": v}
	}
	list := func(path string) []any {
		t.Helper()
		l, _ := do("GET", path, "", 200)["list"].([]any)
		return l
	}

	// The event stream.
	req, _ := http.NewRequest("GET", srv.URL+"/api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: Content-Type %q", ct)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	for _, a := range []string{"ann", "bob"} {
		do("POST", "/api/admins/"+a+"?capacity=1", "", 200)
		do("PUT", "/api/admins/"+a+"/availability?status=online", "", 200)
	}
	first := do("POST", "/api/conversations?id=c1&priority=normal", "", 200)["admin"]
	second := do("POST", "/api/conversations?id=c2&priority=urgent", "", 200)["admin"]
	if first == "" || second == "" || first == second {
		t.Fatalf("least-loaded: c1 to %v, c2 to %v", first, second)
	}
	if got := do("POST", "/api/conversations?id=c3&priority=low", "", 200)["admin"]; got != "" {
		t.Fatalf("c3 went to %v with everyone at capacity", got)
	}
	if b := list("/api/backlog"); len(b) != 1 {
		t.Fatalf("backlog %v", b)
	}
	do("POST", "/api/conversations?id=c1&priority=urgent", "", 200) // open already: no change
	do("POST", "/api/conversations?id=&priority=low", "", 400)
	do("POST", "/api/conversations?id=c9&priority=asap", "", 400)

	m := do("POST", "/api/conversations/c1/messages", `{"content":"my heater is off","sender_role":"user","sender_id":"u1"}`, 200)
	if m["id"] != 1.0 || m["sender_role"] != "user" || m["content"] != "my heater is off" {
		t.Fatalf("message %v", m)
	}
	do("POST", "/api/conversations/c1/messages", `{"content":"x","sender_role":"robot"}`, 400)
	do("POST", "/api/conversations/nope/messages", `{"content":"x","sender_role":"user"}`, 404)
	if u := list("/api/unread"); len(u) != 1 || u[0].(map[string]any)["conversation"] != "c1" {
		t.Fatalf("unread %v", u)
	}
	d := do("GET", "/api/admins/"+first.(string)+"/dashboard", "", 200)
	if d["assigned_to_me"] != 1.0 || d["unread_count"] != 1.0 || d["total_active"] != 3.0 {
		t.Fatalf("dashboard %v", d)
	}
	do("POST", "/api/conversations/c1/messages", `{"content":"on it","sender_role":"admin","sender_id":"`+first.(string)+`"}`, 200)
	if u := list("/api/unread"); len(u) != 0 {
		t.Fatalf("unread after the reply: %v", u)
	}
	if msgs := list("/api/conversations/c1/messages?limit=10"); len(msgs) != 2 {
		t.Fatalf("messages %v", msgs)
	}
	do("POST", "/api/conversations/c1/typing?user=u1&username=john", "", 200)
	if ty := list("/api/conversations/c1/typing"); len(ty) != 1 {
		t.Fatalf("typers %v", ty)
	}

	// The admin of c2 (urgent) goes offline: c2 is requeued and, with
	// nobody free, waits ahead of c3 (low).
	do("PUT", "/api/admins/"+second.(string)+"/availability?status=offline", "", 200)
	b := list("/api/backlog")
	if len(b) != 2 || b[0].(map[string]any)["conversation"] != "c2" {
		t.Fatalf("backlog after offline: %v", b)
	}
	do("POST", "/api/conversations/c2/assign?admin="+first.(string), "", 409) // at capacity
	// A resolution frees a place: the backlog's head takes it.
	if r := do("POST", "/api/conversations/c1/resolve", "", 200); r["resolved_by"] != first {
		t.Fatalf("resolve %v", r)
	}
	do("POST", "/api/conversations/c1/resolve", "", 404)
	d = do("GET", "/api/admins/"+first.(string)+"/dashboard", "", 200)
	if d["resolved_today"] != 1.0 || d["assigned_to_me"] != 1.0 {
		t.Fatalf("dashboard after resolve %v", d)
	}
	if b := list("/api/backlog"); len(b) != 1 || b[0].(map[string]any)["conversation"] != "c3" {
		t.Fatalf("backlog after resolve: %v", b)
	}

	// The stream saw assignments, messages, the read, the requeue and
	// the resolution.
	seen := map[string]int{}
	deadline := time.After(10 * time.Second)
	for seen["resolved"] == 0 || seen["assigned"] < 7 || seen["message"] < 2 || seen["read"] < 1 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended; saw %v", seen)
			}
			if k, ok := strings.CutPrefix(l, "event: "); ok {
				seen[k]++
			}
		case <-deadline:
			t.Fatalf("events seen: %v", seen)
		}
	}
}
