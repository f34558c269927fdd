package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redschema/redschema/connect/connecttest"
	"github.com/redschema/redschema/keys"
)

// TestHomeAutomation runs the program on the suite's backend and a free
// port: its demo must pass (it checks every status it gets) and end with
// a clean audit; then the test drives the API itself (permissions, the
// unread queue's order, the metrics, the audit) and stops the server.
func TestHomeAutomation(t *testing.T) {
	prefix := connecttest.Use(t, "ha", 1)
	t.Setenv("REDIS_KEY_PREFIX", prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out connecttest.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	stopped := connecttest.CheckShutdown(t)
	go func() { done <- run(ctx, "127.0.0.1:0", &out, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"(status login, session until",
		"may not switch the light (403)",
		`RateLimit-Policy "15m";q=1000;w=900`,
		"5 wrong passwords for carol-",
		`goes to "ann"`,
		"dashboard assigned_to_me=1 unread_count=1",
		"unread_count=0",
		"refused at once (401)",
		"resolved by ann",
		`8. audit of "` + prefix + `": `,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), " 0 problems\n") {
		t.Errorf("demo audit found problems")
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out.String())
	}

	c := newClient("http://" + addr)
	must := func(_ http.Header, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bob, err := c.login(ctx, "bob", adminPassword, "bob-phone")
	if err != nil {
		t.Fatal(err)
	}
	must(c.call(ctx, "GET", "/api/admin/team", "", nil, http.StatusUnauthorized, nil))

	// Two users, one conversation each; the urgent one is first in the
	// unread queue although it came second.
	users := map[string]string{}
	for _, u := range []string{"dora", "eve"} {
		must(c.call(ctx, "POST", "/api/auth/register", "", map[string]string{"user_id": u, "password": "long enough"}, http.StatusCreated, nil))
		l, err := c.login(ctx, u, "long enough", "phone")
		if err != nil {
			t.Fatal(err)
		}
		users[u] = l.Token
	}
	must(c.call(ctx, "GET", "/api/admin/team", users["dora"], nil, http.StatusForbidden, nil))
	must(c.call(ctx, "POST", "/api/support/messages", users["dora"], map[string]string{"content": "hello?"}, http.StatusNotFound, nil))
	must(c.call(ctx, "PUT", "/api/admin/presence", bob.Token, map[string]string{"status": "online"}, http.StatusOK, nil))
	must(c.call(ctx, "PUT", "/api/admin/presence", bob.Token, map[string]string{"status": "asleep"}, http.StatusBadRequest, nil))
	for _, x := range []struct{ user, prio string }{{"dora", "normal"}, {"eve", "urgent"}} {
		var o struct {
			Admin string `json:"admin"`
		}
		must(c.call(ctx, "POST", "/api/support/conversation?priority="+x.prio, users[x.user], nil, http.StatusOK, &o))
		if o.Admin != "bob" {
			t.Fatalf("%s's conversation went to %q, want bob (the only one online)", x.user, o.Admin)
		}
		must(c.call(ctx, "POST", "/api/support/messages", users[x.user], map[string]string{"content": "help"}, http.StatusCreated, nil))
	}
	var q struct {
		Unread []struct {
			Conversation string `json:"conversation"`
		} `json:"unread"`
	}
	must(c.call(ctx, "GET", "/api/admin/queue", bob.Token, nil, http.StatusOK, &q))
	if len(q.Unread) != 2 || q.Unread[0].Conversation != "eve" || q.Unread[1].Conversation != "dora" {
		t.Fatalf("unread queue %+v, want eve (urgent) then dora", q.Unread)
	}
	// The support messages' limit is per user: the 21st in a minute is
	// refused (dora's 404 above counted too: the limit comes first).
	for i := 3; i <= messageLimit.Rate; i++ {
		must(c.call(ctx, "POST", "/api/support/messages", users["dora"], map[string]string{"content": "still there?"}, http.StatusCreated, nil))
	}
	must(c.call(ctx, "POST", "/api/support/messages", users["dora"], map[string]string{"content": "hello??"}, http.StatusTooManyRequests, nil))
	must(c.call(ctx, "POST", "/api/support/messages", users["eve"], map[string]string{"content": "me too"}, http.StatusCreated, nil))

	// Metrics by route template, flushed within a second or two.
	var m metricsReply
	deadline := time.Now().Add(5 * time.Second)
	for {
		must(c.call(ctx, "GET", "/api/admin/metrics", bob.Token, nil, http.StatusOK, &m))
		if m.Endpoints["POST /api/support/messages"][0] >= 24 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := m.Endpoints["POST /api/support/messages"]; got != [2]int64{24, 2} {
		t.Errorf("POST /api/support/messages: %v requests/errors, want [24 2] (1 in the demo)", got)
	}
	if m.Total <= m.Accepted || m.Errors == 0 || m.MaxConns < 1 {
		t.Errorf("metrics %+v", m)
	}

	var au keys.AuditSummary
	must(c.call(ctx, "GET", "/api/admin/audit", bob.Token, nil, http.StatusOK, &au))
	if len(au.Problems) != 0 || au.Scanned == 0 || au.Patterns["user:{user_id}"] < 3 {
		t.Fatalf("audit %+v", au)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stopped()
	if !strings.Contains(out.String(), "stopped; final audit of \""+prefix+"\": ") || !strings.Contains(out.String(), "keys, 0 problems") {
		t.Fatalf("no clean final audit:\n%s", out.String())
	}
}
