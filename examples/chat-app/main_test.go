package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redschema/redschema/connect/connecttest"
	"github.com/redschema/redschema/keys"
)

// TestChatApp runs the program on the suite's backend and a free port:
// its demo must pass (it checks every status it gets) and end with a
// clean audit; then the test drives the API itself (the guard under many
// concurrent tries, the throttle, pushes only to offline members) and
// stops the server.
func TestChatApp(t *testing.T) {
	prefix := connecttest.Use(t, "chat", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out connecttest.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx) // SIGINT
	defer stop()
	stopped := connecttest.CheckShutdown(t)
	go func() { done <- run(runCtx, "127.0.0.1:0", prefix, &out, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"presence of ann: online",
		"typing:start #1 written=true",
		"typing:start #2 written=false",
		"typing in the conversation: [Ann]",
		"delivered live to [ben], pushed to []; typing now []",
		"ben: offline; ann: online",
		"refused (410)",
		"delivered live to [], pushed to [ben]",
		"the fcm worker sent 2 pushes",
		": ran: 1 users with unread messages, 1 offline reminded",
		": not due (next run in 2h0m0s)",
		"app-2: ran: 1 unregistered tokens deleted",
		"app-1: not due (next run in 24h0m0s)",
		"pushes sent to ben: message ben -> fcm-ben-phone; message ben -> fcm-ben-phone; reminder ben -> fcm-ben-phone",
		"ben's unread messages: 3",
		"9. audit of \"" + prefix + "\": ",
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
	// Both jobs already ran in this namespace: 20 concurrent tries from
	// both instances run nothing.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r jobReport
			job := []string{unreadReminder, cleanupTokens}[i%2]
			inst := []string{"app-1", "app-2"}[i/2%2]
			if err := c.call(ctx, "POST", "/api/admin/jobs/"+job+"?instance="+inst, nil, &r, http.StatusOK); err != nil {
				t.Error(err)
				return
			}
			if r.Ran || r.Previous == nil || r.Next == nil {
				mu.Lock()
				ran++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ran != 0 {
		t.Fatalf("%d tries ran a job (or lacked its times) within its interval", ran)
	}
	if err := c.call(ctx, "POST", "/api/admin/jobs/backup", nil, nil, http.StatusNotFound); err != nil {
		t.Fatal(err)
	}

	// Three members: one online on two devices, one offline.
	run := randomHex(2)
	x, y, z, conv := "x-"+run, "y-"+run, "z-"+run, "c-"+run
	if err := c.call(ctx, "PUT", "/api/conversations/"+conv, map[string][]string{"members": {x, y, z}}, nil, http.StatusNoContent); err != nil {
		t.Fatal(err)
	}
	if err := c.call(ctx, "POST", "/api/users/"+z+"/tokens", map[string]string{"token": "fcm-" + z}, nil, http.StatusNoContent); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"web", "mobile"} {
		if _, err := c.connect(ctx, y, d); err != nil {
			t.Fatal(err)
		}
	}
	var m messageReply
	if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/messages", map[string]string{"from": x, "text": "hi"}, &m, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Live, ",") != y || strings.Join(m.Pushed, ",") != z {
		t.Fatalf("message %+v: want live to %s, pushed to %s", m, y, z)
	}
	if sent, err := c.waitPushes(ctx, z, 1); err != nil || sent[0] != "message "+z+" -> fcm-"+z {
		t.Fatalf("pushes %v, %v", sent, err)
	}
	if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/messages", map[string]string{"from": "stranger", "text": "hi"}, nil, http.StatusNotFound); err != nil {
		t.Fatal(err)
	}
	// Typing: two users in one conversation, each throttled on their own.
	var ty struct {
		Written bool `json:"written"`
	}
	for i, u := range []string{x, y, x} {
		if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/typing/"+u, map[string]string{"username": strings.ToUpper(u[:1])}, &ty, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if want := i < 2; ty.Written != want { // x's second start is throttled
			t.Fatalf("typing start %d of %s: written=%v, want %v", i+1, u, ty.Written, want)
		}
	}
	var typers struct {
		Typing []string `json:"typing"`
	}
	if err := c.call(ctx, "GET", "/api/conversations/"+conv+"/typing", nil, &typers, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if strings.Join(typers.Typing, ",") != "X,Y" {
		t.Fatalf("typing %v", typers.Typing)
	}
	if err := c.call(ctx, "DELETE", "/api/conversations/"+conv+"/typing/"+y, nil, nil, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if err := c.call(ctx, "GET", "/api/conversations/"+conv+"/typing", nil, &typers, http.StatusOK); err != nil || strings.Join(typers.Typing, ",") != "X" {
		t.Fatalf("typing %v, %v", typers.Typing, err)
	}
	// Bad input.
	for _, x := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"POST", "/api/users/" + y + "/connections/nope/heartbeat", nil, http.StatusGone},
		{"PUT", "/api/conversations/" + conv, map[string][]string{"members": {x}}, http.StatusBadRequest},
		{"POST", "/api/conversations/" + conv + "/typing/" + y, map[string]string{"username": strings.Repeat("u", 300)}, http.StatusBadRequest},
		{"POST", "/api/users/" + y + "/tokens", map[string]string{}, http.StatusBadRequest},
	} {
		if err := c.call(ctx, x.method, x.path, x.body, nil, x.want); err != nil {
			t.Error(err)
		}
	}
	var au keys.AuditSummary
	if err := c.call(ctx, "GET", "/api/admin/audit", nil, &au, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if len(au.Problems) != 0 || au.Patterns["cron:last-run:{job_name}"] != 2 {
		t.Fatalf("audit %+v", au)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stopped()
	if !strings.Contains(out.String(), "stopped; final audit of \""+prefix+"\": ") || !strings.Contains(out.String(), "keys, 0 problems") {
		t.Fatalf("no clean final audit:\n%s", out.String())
	}
}
