package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redschema/redschema/connect/connecttest"
	"github.com/redschema/redschema/keys"
)

// TestPresenceService runs the program on the suite's backend and a free
// port: its demo must pass (it checks every status and event it gets)
// and end with a clean audit; then the test drives the API itself
// (devices, the batch check, errors) and stops the server with a stream
// still open, which must be disconnected.
func TestPresenceService(t *testing.T) {
	prefix := connecttest.Use(t, "ps", 1)
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
		"snapshot: alice offline",
		"snapshot: carol offline",
		"bob's stream: alice offline -> online",
		"alice: online, 2 connections, devices [mobile web]",
		"bob's stream: carol offline -> online",
		"bob's stream: carol online -> away",
		"may not set a status (409)",
		"online: [alice bob carol]",
		"alice online  2 connections, typing",
		"carol away    1 connections",
		"dave  offline 0 connections",
		"after the tab: alice online, 1 connection ([mobile])",
		"bob's stream: alice online -> offline",
		"alice: offline, last seen kept for 10 minutes",
		"everyone online, from the online index: [bob carol]",
		"7. audit of \"" + prefix + "\": ",
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
	erin, frank := "erin-"+randomHex(2), "frank-"+randomHex(2)
	watcher, err := c.open(ctx, frank, "web", erin)
	if err != nil {
		t.Fatal(err)
	}
	var snap userView
	if err := watcher.next(ctx, "presence", &snap); err != nil || snap.Status != "offline" {
		t.Fatalf("snapshot %+v, %v", snap, err)
	}
	// Three devices of erin: one event, three connections, three devices.
	var devs []*device
	for _, d := range []string{"web", "mobile", "desktop"} {
		dev, err := c.open(ctx, erin, d)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, dev)
	}
	if ch, err := watcher.change(ctx); err != nil || ch.UserID != erin || ch.Status != "online" || ch.Previous != "offline" {
		t.Fatalf("change %+v, %v", ch, err)
	}
	var v userView
	if err := c.call(ctx, "GET", "/api/users/"+erin+"/presence", nil, &v, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if v.Connections != 3 || strings.Join(v.Devices, ",") != "desktop,mobile,web" {
		t.Fatalf("erin %+v", v)
	}
	// Invisible: online for the system, offline for others (and the
	// change says so), in the batch check too.
	if err := c.call(ctx, "PUT", "/api/users/"+erin+"/status", map[string]string{"status": "invisible"}, nil, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if ch, err := watcher.change(ctx); err != nil || ch.Status != "offline" {
		t.Fatalf("change %+v, %v", ch, err)
	}
	var b struct {
		Online   []string   `json:"online"`
		Presence []userView `json:"presence"`
	}
	if err := c.call(ctx, "POST", "/api/presence/batch", map[string][]string{"users": {erin, frank, "nobody"}}, &b, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if strings.Join(b.Online, ",") != frank || len(b.Presence) != 3 || b.Presence[0].Status != "offline" || b.Presence[0].Connections != 0 {
		t.Fatalf("batch %+v", b)
	}
	if err := c.call(ctx, "PUT", "/api/users/"+erin+"/status", map[string]string{"status": "online"}, nil, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if ch, err := watcher.change(ctx); err != nil || ch.Status != "online" {
		t.Fatalf("change %+v, %v", ch, err)
	}
	// Bad input.
	for _, x := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"PUT", "/api/users/" + erin + "/status", map[string]string{"status": "asleep"}, http.StatusBadRequest},
		{"PUT", "/api/users/" + erin + "/status", map[string]string{"status": "offline"}, http.StatusBadRequest},
		{"PUT", "/api/users/nobody/activity", map[string]string{"activity": "idle"}, http.StatusConflict},
		{"POST", "/api/presence/batch", map[string][]string{"users": {""}}, http.StatusBadRequest},
		{"GET", "/api/stream?device=web", nil, http.StatusBadRequest},
	} {
		if err := c.call(ctx, x.method, x.path, x.body, nil, x.want); err != nil {
			t.Error(err)
		}
	}
	// Devices leave one by one: one offline event, after the last.
	for _, d := range devs {
		d.close()
	}
	if ch, err := watcher.change(ctx); err != nil || ch.UserID != erin || ch.Status != "offline" {
		t.Fatalf("change %+v, %v", ch, err)
	}
	var au keys.AuditSummary
	if err := c.call(ctx, "GET", "/api/audit", nil, &au, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if len(au.Problems) != 0 || au.Patterns["presence:{user_id}"] < 2 {
		t.Fatalf("audit %+v", au)
	}

	// Stop with frank's stream open: the service disconnects it.
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	watcher.close()
	stopped()
	// Frank's stream at least: erin's closed devices may still be
	// finishing on the server side.
	final := regexp.MustCompile(`stopped \(([0-9]+) open streams disconnected\); final audit of "` + regexp.QuoteMeta(prefix) + `": [0-9]+ keys, 0 problems`)
	if m := final.FindStringSubmatch(out.String()); m == nil || m[1] == "0" {
		t.Fatalf("no clean final audit with frank's stream disconnected:\n%s", out.String())
	}
}
