package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// client calls the API as an app would.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string) *client {
	return &client{base: base, hc: &http.Client{Timeout: 10 * time.Second}}
}

// call sends body as JSON, checks the status and decodes the reply into
// out (if not nil).
func (c *client) call(ctx context.Context, method, path string, body, out any, want int) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s, want %d", method, path, res.StatusCode, strings.TrimSpace(string(b)), want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Name string
	Data []byte
}

// device is an open stream: a device of user, online while it is open.
type device struct {
	user   string
	events chan sseEvent
	cancel context.CancelFunc
	done   chan struct{}
	conn   string // the connection ID from the "hello" event
}

// open opens a stream for user's device, watching watch, and waits for
// its "hello".
func (c *client) open(ctx context.Context, user, dev string, watch ...string) (*device, error) {
	q := url.Values{"user": {user}, "device": {dev}}
	if len(watch) > 0 {
		q.Set("watch", strings.Join(watch, ","))
	}
	sctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(sctx, "GET", c.base+"/api/stream?"+q.Encode(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("User-Agent", "presence-demo/1.0 ("+dev+")")
	res, err := (&http.Client{}).Do(req) // no timeout: a stream lasts
	if err != nil {
		cancel()
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		return nil, fmt.Errorf("stream %s/%s: %d %s", user, dev, res.StatusCode, strings.TrimSpace(string(b)))
	}
	d := &device{user: user, events: make(chan sseEvent, 64), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		defer close(d.events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Name != "" {
					d.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.Name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.Data = []byte(line[len("data: "):])
			}
		}
	}()
	var hello struct {
		Connection string `json:"connection"`
	}
	if err := d.next(ctx, "hello", &hello); err != nil {
		d.close()
		return nil, err
	}
	d.conn = hello.Connection
	return d, nil
}

// next waits up to 10 s for the next event, which must be called name,
// and decodes its data into v.
func (d *device) next(ctx context.Context, name string, v any) error {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case ev, ok := <-d.events:
		if !ok {
			return fmt.Errorf("%s's stream ended, waiting for %q", d.user, name)
		}
		if ev.Name != name {
			return fmt.Errorf("%s's stream: got %q (%s), want %q", d.user, ev.Name, ev.Data, name)
		}
		return json.Unmarshal(ev.Data, v)
	case <-t.C:
		return fmt.Errorf("%s's stream: no %q within 10 s", d.user, name)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// change waits for the next change event.
func (d *device) change(ctx context.Context) (changeView, error) {
	var c changeView
	err := d.next(ctx, "change", &c)
	return c, err
}

// close closes the stream, as a closed tab or a lost network does.
func (d *device) close() {
	d.cancel()
	<-d.done
}

// waitConnections polls user's presence until they have n connections
// (the server disconnects a device once it notices its stream closed).
func (c *client) waitConnections(ctx context.Context, user string, n int) (userView, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var v userView
		if err := c.call(ctx, "GET", "/api/users/"+user+"/presence", nil, &v, http.StatusOK); err != nil {
			return v, err
		}
		if v.Connections == n {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("%s has %d connections after 10 s, want %d", user, v.Connections, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// demo drives the API through seed 002's flows and prints what happens.
// User IDs carry a random suffix, so that runs against a shared server
// do not meet each other's state.
func demo(ctx context.Context, base string, out io.Writer) error {
	c := newClient(base)
	defer c.hc.CloseIdleConnections() // see metrics-http's load: a spare dialed connection would hold Shutdown 5 s
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	run := randomHex(2)
	alice, bob, carol, dave := "alice-"+run, "bob-"+run, "carol-"+run, "dave-"+run
	short := func(u string) string { return strings.TrimSuffix(u, "-"+run) }
	showChange := func(d *device) error {
		ch, err := d.change(ctx)
		if err != nil {
			return err
		}
		say("   %s's stream: %s %s -> %s", short(d.user), short(ch.UserID), ch.Previous, ch.Status)
		return nil
	}
	var opened []*device
	defer func() {
		for _, d := range opened {
			d.close()
		}
	}()
	open := func(user, dev string, watch ...string) (*device, error) {
		d, err := c.open(ctx, user, dev, watch...)
		if err == nil {
			opened = append(opened, d)
		}
		return d, err
	}

	say("users this run: %s, %s, %s, %s", alice, bob, carol, dave)
	say("1. bob opens the desktop app, watching alice and carol")
	bobDesk, err := open(bob, "desktop", alice, carol)
	if err != nil {
		return err
	}
	for range 2 {
		var v userView
		if err := bobDesk.next(ctx, "presence", &v); err != nil {
			return err
		}
		say("   snapshot: %s %s", short(v.UserID), v.Status)
	}

	say("2. alice opens the web app, then her phone")
	aliceWeb, err := open(alice, "web")
	if err != nil {
		return err
	}
	if err := showChange(bobDesk); err != nil {
		return err
	}
	alicePhone, err := open(alice, "mobile")
	if err != nil {
		return err
	}
	var av userView
	if err := c.call(ctx, "GET", "/api/users/"+alice+"/presence", nil, &av, http.StatusOK); err != nil {
		return err
	}
	say("   alice: %s, %d connections, devices %v (the second device changed nothing others see: no event)", av.Status, av.Connections, av.Devices)

	say("3. carol connects from her phone and sets herself away; alice is typing")
	if _, err := open(carol, "mobile"); err != nil {
		return err
	}
	if err := showChange(bobDesk); err != nil {
		return err
	}
	if err := c.call(ctx, "PUT", "/api/users/"+carol+"/status", map[string]string{"status": "away"}, nil, http.StatusOK); err != nil {
		return err
	}
	if err := showChange(bobDesk); err != nil {
		return err
	}
	if err := c.call(ctx, "PUT", "/api/users/"+alice+"/activity", map[string]string{"activity": "typing"}, nil, http.StatusOK); err != nil {
		return err
	}
	if err := c.call(ctx, "PUT", "/api/users/"+dave+"/status", map[string]string{"status": "busy"}, nil, http.StatusConflict); err != nil {
		return err
	}
	say("   dave, offline, may not set a status (409)")

	say("4. batch check of alice, bob, carol and dave (one pipeline)")
	var b struct {
		Online   []string   `json:"online"`
		Presence []userView `json:"presence"`
	}
	if err := c.call(ctx, "POST", "/api/presence/batch", map[string][]string{"users": {alice, bob, carol, dave}}, &b, http.StatusOK); err != nil {
		return err
	}
	var online []string
	for _, u := range b.Online {
		online = append(online, short(u))
	}
	say("   online: %v", online)
	for _, p := range b.Presence {
		extra := ""
		if p.Activity != "" {
			extra = ", " + p.Activity
		}
		say("   %-5s %-7s %d connections%s", short(p.UserID), p.Status, p.Connections, extra)
	}

	say("5. alice closes the web tab, then her phone")
	aliceWeb.close()
	if av, err = c.waitConnections(ctx, alice, 1); err != nil {
		return err
	}
	say("   after the tab: alice %s, %d connection (%v)", av.Status, av.Connections, av.Devices)
	alicePhone.close()
	if err := showChange(bobDesk); err != nil {
		return err
	}
	if err := c.call(ctx, "GET", "/api/users/"+alice+"/presence", nil, &av, http.StatusOK); err != nil {
		return err
	}
	seen := "unknown"
	if av.LastSeen != nil {
		seen = "kept for 10 minutes"
	}
	say("   alice: %s, last seen %s", av.Status, seen)

	var on struct {
		Users []string `json:"users"`
	}
	if err := c.call(ctx, "GET", "/api/online", nil, &on, http.StatusOK); err != nil {
		return err
	}
	var ours []string
	for _, u := range on.Users {
		if strings.HasSuffix(u, "-"+run) {
			ours = append(ours, short(u))
		}
	}
	say("6. everyone online, from the online index: %v", ours)

	var au keys.AuditSummary
	if err := c.call(ctx, "GET", "/api/audit", nil, &au, http.StatusOK); err != nil {
		return err
	}
	say("7. audit of %q: %d keys, %d problems", au.Namespace, au.Scanned, len(au.Problems))
	for _, p := range au.Problems {
		say("   problem: %s", p)
	}
	return nil
}
