package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestAIPlatform runs the program on the suite's backend (eight databases,
// or DB 0 of a cluster)
// and a free port: its demo must pass (it checks every status it gets)
// and end with a clean audit of every database; then the test drives the
// API itself (authentication, invalidation, sessions, AI memory, dead
// letters, the login limit, the audit) and stops the server.
func TestAIPlatform(t *testing.T) {
	prefix, cluster := connecttest.Use(t, "zentoria", 8), connecttest.Cluster()
	dbs := 8
	if cluster {
		dbs = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out connecttest.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	stopped := connecttest.CheckShutdown(t)
	go func() { done <- run(ctx, "127.0.0.1:0", prefix, &out, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"(2 live sessions in her index)",
		"the next call with it is refused (401)",
		"GET /api/v1/files/list   fwd=miss; fwd-status=200; stored, then hit; ttl=",
		"the listing was invalidated (fwd=miss",
		"): success, success",
		"sync-crm failed after 3 attempts: in the dead-letter list",
		"processed 2, failed attempts 3, dead 1",
		"turn 1: RAG loaded (1 source), response loaded (streamed on pubsub:ai:response: true)",
		"RAG hit, response hit (the model ran 2 times for 3 turns)",
		"topics [billing invoices]",
		"the 4th call at once gets 429",
		"admitted again at once (X-RateLimit-Limit 20",
		"ai_tokens_used 124 prompt + 87 completion, file_uploads_bytes 68",
		"files:processed 1, files:uploaded 1, system:notification 1, workflow:completed 3, workflow:started 5",
		fmt.Sprintf("9. audit: %d databases, ", dbs),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// The seed's 86400 s, read back within a second (a whole second less
	// on a real server when the second turned meanwhile).
	if !regexp.MustCompile(`GET /api/v1/ai/models    fwd=miss; fwd-status=200; stored, then hit; ttl=(86400|86399)\n`).MatchString(out.String()) {
		t.Errorf("demo output lacks the /ai/models line with a TTL of 86400")
	}
	if !strings.Contains(out.String(), " 0 problems\n") {
		t.Errorf("demo audit found problems")
	}
	if !cluster && (!strings.Contains(out.String(), "databases: DB [0 1 2 3 4 5 6 7] (seed 001's allocation)") || !strings.Contains(out.String(), "DB 3: 0 keys")) {
		t.Errorf("demo output lacks seed 001's databases")
	}
	if cluster && !strings.Contains(out.String(), "databases: a cluster: every area in DB 0") {
		t.Errorf("demo output lacks the cluster's one database")
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
	must(c.call(ctx, "GET", "/api/v1/files/list", "", nil, http.StatusUnauthorized, nil))
	must(c.call(ctx, "GET", "/api/v1/files/list", "not.a.jwt", nil, http.StatusUnauthorized, nil))
	must(c.call(ctx, "GET", "/api/v1/files/list", "key:zk_unknown", nil, http.StatusUnauthorized, nil))
	admin, err := c.login(ctx, "admin@zentoria.local")
	if err != nil {
		t.Fatal(err)
	}
	dana, err := c.login(ctx, "dana@zentoria.local")
	if err != nil {
		t.Fatal(err)
	}
	must(c.call(ctx, "GET", "/api/v1/admin/audit", dana.AccessToken, nil, http.StatusForbidden, nil))

	// The per-user file listing is cached, and an upload invalidates it.
	cacheStatus := func(path string) string {
		t.Helper()
		h, err := c.call(ctx, "GET", path, dana.AccessToken, nil, http.StatusOK, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h.Get("Cache-Status")
	}
	cacheStatus("/api/v1/files/list")
	if st := cacheStatus("/api/v1/files/list"); !strings.Contains(st, "hit") {
		t.Fatalf("second listing: Cache-Status %q, want a hit", st)
	}
	must(c.call(ctx, "POST", "/api/v1/files", dana.AccessToken, map[string]string{"name": "notes.txt", "content": "the boiler service is in March"}, http.StatusAccepted, nil))
	if st := cacheStatus("/api/v1/files/list"); !strings.Contains(st, "fwd=miss") {
		t.Fatalf("listing after an upload: Cache-Status %q, want a miss", st)
	}

	// Sessions: the per-user index lists dana's devices; one is revoked.
	var sessions []map[string]any
	must(c.call(ctx, "GET", "/api/v1/auth/sessions", dana.AccessToken, nil, http.StatusOK, &sessions))
	if len(sessions) != 2 { // the demo's laptop and this one
		t.Fatalf("sessions %v", sessions)
	}
	for _, s := range sessions {
		if s["current"] != true {
			must(c.call(ctx, "DELETE", "/api/v1/auth/sessions/"+s["session_id"].(string), dana.AccessToken, nil, http.StatusOK, nil))
		}
	}
	must(c.call(ctx, "GET", "/api/v1/auth/sessions", dana.AccessToken, nil, http.StatusOK, &sessions))
	if len(sessions) != 1 || sessions[0]["current"] != true {
		t.Fatalf("sessions after revoking the other: %v", sessions)
	}

	// AI memory: a conversation keeps the pinned system prompt, the
	// question and the answer.
	must(c.call(ctx, "POST", "/api/v1/ai/chat", dana.AccessToken, map[string]string{"conversation_id": "t1", "message": "When is the boiler service?"}, http.StatusOK, nil))
	var conv struct {
		Messages []map[string]any `json:"messages"`
	}
	must(c.call(ctx, "GET", "/api/v1/ai/conversations/t1", dana.AccessToken, nil, http.StatusOK, &conv))
	if len(conv.Messages) != 3 || conv.Messages[0]["role"] != "system" || conv.Messages[2]["role"] != "assistant" {
		t.Fatalf("conversation %v", conv.Messages)
	}

	// The dead letter is requeued once (then it is live, not dead).
	var dead []map[string]any
	must(c.call(ctx, "GET", "/api/v1/admin/queues/n8n/dead", admin.AccessToken, nil, http.StatusOK, &dead))
	if len(dead) != 1 {
		t.Fatalf("dead letters %v", dead)
	}
	id := dead[0]["id"].(string)
	must(c.call(ctx, "POST", "/api/v1/admin/queues/n8n/dead/"+id+"/requeue", admin.AccessToken, nil, http.StatusOK, nil))
	must(c.call(ctx, "POST", "/api/v1/admin/queues/n8n/dead/"+id+"/requeue", admin.AccessToken, nil, http.StatusNotFound, nil))
	must(c.call(ctx, "GET", "/api/v1/admin/queues/nope", admin.AccessToken, nil, http.StatusNotFound, nil))

	var au auditReport
	must(c.call(ctx, "GET", "/api/v1/admin/audit", admin.AccessToken, nil, http.StatusOK, &au))
	if len(au.Problems) != 0 || len(au.DBs) != dbs || au.DBs[0].Patterns["session:index:{user_id}"] != 2 {
		t.Fatalf("audit %+v", au)
	}

	// Logins are limited per client IP (30 a minute): wrong passwords count.
	refused := false
	for i := 0; i < 30 && !refused; i++ {
		_, err := c.call(ctx, "POST", "/api/v1/auth/login", "", map[string]string{"email": "dana@zentoria.local", "password": "guess"}, http.StatusUnauthorized, nil)
		refused = err != nil && strings.Contains(err.Error(), ": 429 ")
		if err != nil && !refused {
			t.Fatal(err)
		}
	}
	if !refused {
		t.Fatal("35 logins in a minute from one IP were all let through")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stopped()
	final := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "stopped; final audit: ") {
			final = line
		}
	}
	if !strings.HasPrefix(final, fmt.Sprintf("stopped; final audit: %d databases, ", dbs)) || !strings.HasSuffix(final, " 0 problems") {
		t.Fatalf("no clean final audit:\n%s", out.String())
	}
}

// TestAIPlatformTwice runs the program twice, one run after the other,
// under one prefix: the second demo finds the first one's metrics (their
// totals live 5 minutes) and still passes, waiting for its own tokens on
// top of them. Without a server the two runs share a miniredis of the
// test's (the embedded server would go with each run).
func TestAIPlatformTwice(t *testing.T) {
	prefix := connecttest.Use(t, "zentoria", 8)
	if connecttest.URL(0) == "" {
		t.Setenv("REDIS_URL", "redis://"+miniredis.RunT(t).Addr()+"/0")
	}
	var outs [2]connecttest.Buffer
	for i := range outs {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		ready := make(chan string, 1)
		done := make(chan error, 1)
		stopped := connecttest.CheckShutdown(t)
		go func() { done <- run(ctx, "127.0.0.1:0", prefix, &outs[i], ready) }()
		select {
		case <-ready:
		case err := <-done:
			cancel()
			t.Fatalf("run %d: %v\n%s", i+1, err, outs[i].String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d stopping: %v", i+1, err)
		}
		stopped()
	}
	want := "ai_tokens_used 248 prompt + 174 completion"
	if !strings.Contains(outs[1].String(), want) {
		t.Fatalf("second run's output lacks %q:\n%s", want, outs[1].String())
	}
}
