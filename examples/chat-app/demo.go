package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/keys"
)

// client calls the API as the chat's web and mobile apps would.
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

// connect opens a device of user and returns its connection ID.
func (c *client) connect(ctx context.Context, user, device string) (string, error) {
	var r struct {
		Connection string `json:"connection"`
	}
	err := c.call(ctx, "POST", "/api/users/"+user+"/connections", map[string]string{"device": device}, &r, http.StatusCreated)
	return r.Connection, err
}

func (c *client) presence(ctx context.Context, user string) (presenceView, error) {
	var p presenceView
	err := c.call(ctx, "GET", "/api/users/"+user+"/presence", nil, &p, http.StatusOK)
	return p, err
}

// messageReply is what POST .../messages answers.
type messageReply struct {
	Live   []string `json:"delivered_live"`
	Pushed []string `json:"pushed"`
}

// pushesReply is what GET /api/admin/pushes answers.
type pushesReply struct {
	Sent      []string `json:"sent"`
	Processed int64    `json:"processed"`
	Failed    int64    `json:"failed"`
	Dead      int64    `json:"dead"`
}

// waitPushes polls the pushes sent until n of them mention suffix.
func (c *client) waitPushes(ctx context.Context, suffix string, n int) ([]string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var p pushesReply
		if err := c.call(ctx, "GET", "/api/admin/pushes", nil, &p, http.StatusOK); err != nil {
			return nil, err
		}
		var ours []string
		for _, s := range p.Sent {
			if strings.Contains(s, suffix) {
				ours = append(ours, s)
			}
		}
		if len(ours) >= n {
			return ours, nil
		}
		if time.Now().After(deadline) {
			return ours, fmt.Errorf("%d pushes sent after 10 s, want %d", len(ours), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe says what a job try did.
func describe(r jobReport) string {
	if r.Ran {
		return "ran: " + r.Result
	}
	next := "?"
	if r.Next != nil {
		next = time.Until(*r.Next).Round(time.Minute).String()
	}
	return "not due (next run in " + next + ")"
}

// demo drives the API through seed 004's flows and prints what happens.
// User and conversation IDs carry a random suffix, so that runs against a
// shared server do not meet each other's state.
func demo(ctx context.Context, base string, out io.Writer) error {
	c := newClient(base)
	defer c.hc.CloseIdleConnections() // see metrics-http's load: a spare dialed connection would hold Shutdown 5 s
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	run := randomHex(2)
	ann, ben, conv := "ann-"+run, "ben-"+run, "conv-"+run
	short := func(s string) string { return strings.ReplaceAll(s, "-"+run, "") }

	say("users this run: %s and %s, in conversation %s", ann, ben, conv)
	if err := c.call(ctx, "PUT", "/api/conversations/"+conv, map[string][]string{"members": {ann, ben}}, nil, http.StatusNoContent); err != nil {
		return err
	}
	for _, tok := range []string{"fcm-" + ben + "-phone", "stale-" + ben + "-tablet"} {
		if err := c.call(ctx, "POST", "/api/users/"+ben+"/tokens", map[string]string{"token": tok}, nil, http.StatusNoContent); err != nil {
			return err
		}
	}

	say("1. ann opens the web app and her phone, ben his phone")
	annWeb, err := c.connect(ctx, ann, "web")
	if err != nil {
		return err
	}
	if _, err := c.connect(ctx, ann, "mobile"); err != nil {
		return err
	}
	benPhone, err := c.connect(ctx, ben, "mobile")
	if err != nil {
		return err
	}
	if err := c.call(ctx, "POST", "/api/users/"+ann+"/connections/"+annWeb+"/heartbeat", nil, nil, http.StatusOK); err != nil {
		return err
	}
	p, err := c.presence(ctx, ann)
	if err != nil {
		return err
	}
	say("   presence of ann: %s (the key expires 5 minutes after the last heartbeat)", p.Status)

	say("2. ann types")
	var ty struct {
		Written bool `json:"written"`
	}
	for i := range 2 {
		if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/typing/"+ann, map[string]string{"username": "Ann"}, &ty, http.StatusOK); err != nil {
			return err
		}
		say("   typing:start #%d written=%v", i+1, ty.Written)
	}
	var typers struct {
		Typing []string `json:"typing"`
	}
	if err := c.call(ctx, "GET", "/api/conversations/"+conv+"/typing", nil, &typers, http.StatusOK); err != nil {
		return err
	}
	say("   typing in the conversation: %v (the second start came within 2 s: throttled in Redis, for every app instance)", typers.Typing)

	say("3. ann sends a message")
	var m messageReply
	if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/messages", map[string]string{"from": ann, "text": "lunch?"}, &m, http.StatusCreated); err != nil {
		return err
	}
	if err := c.call(ctx, "GET", "/api/conversations/"+conv+"/typing", nil, &typers, http.StatusOK); err != nil {
		return err
	}
	say("   delivered live to %v, pushed to %v; typing now %v", short(fmt.Sprint(m.Live)), short(fmt.Sprint(m.Pushed)), typers.Typing)

	say("4. ben closes his app; ann closes her web tab")
	if err := c.call(ctx, "DELETE", "/api/users/"+ben+"/connections/"+benPhone, nil, nil, http.StatusOK); err != nil {
		return err
	}
	if err := c.call(ctx, "DELETE", "/api/users/"+ann+"/connections/"+annWeb, nil, nil, http.StatusOK); err != nil {
		return err
	}
	pb, err := c.presence(ctx, ben)
	if err != nil {
		return err
	}
	if p, err = c.presence(ctx, ann); err != nil {
		return err
	}
	say("   ben: %s; ann: %s (her phone is still connected)", pb.Status, p.Status)
	if err := c.call(ctx, "POST", "/api/users/"+ann+"/connections/"+annWeb+"/heartbeat", nil, nil, http.StatusGone); err != nil {
		return err
	}
	say("   a late heartbeat of the closed tab is refused (410): it must connect again")

	say("5. ann sends two more messages")
	for _, text := range []string{"12:30?", "at the usual place"} {
		if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/messages", map[string]string{"from": ann, "text": text}, &m, http.StatusCreated); err != nil {
			return err
		}
		say("   delivered live to %v, pushed to %v", short(fmt.Sprint(m.Live)), short(fmt.Sprint(m.Pushed)))
	}
	sent, err := c.waitPushes(ctx, ben, 2)
	if err != nil {
		return err
	}
	say("   the fcm worker sent %d pushes to ben's phone; FCM called the tablet's token unregistered", len(sent))

	say("6. the unread-reminder job: app-1 and app-2 try it at the same moment")
	reps := make([]jobReport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, inst := range []string{"app-1", "app-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.call(ctx, "POST", "/api/admin/jobs/"+unreadReminder+"?instance="+inst, nil, &reps[i], http.StatusOK)
		}()
	}
	wg.Wait()
	ran := 0
	for i, r := range reps {
		if errs[i] != nil {
			return errs[i]
		}
		say("   %s: %s", r.Instance, describe(r))
		if r.Ran {
			ran++
		}
	}
	if ran > 1 {
		return fmt.Errorf("unread-reminder ran %d times in one interval", ran)
	}
	if ran == 0 {
		say("   (it ran within the last 2 hours: cron:last-run has no TTL, as in the seed)")
	}

	say("7. the cleanup-tokens job, on app-2, then on app-1")
	for _, inst := range []string{"app-2", "app-1"} {
		var r jobReport
		if err := c.call(ctx, "POST", "/api/admin/jobs/"+cleanupTokens+"?instance="+inst, nil, &r, http.StatusOK); err != nil {
			return err
		}
		say("   %s: %s", inst, describe(r))
	}

	if sent, err = c.waitPushes(ctx, ben, 2+ran); err != nil {
		return err
	}
	say("8. pushes sent to ben: %s", short(strings.Join(sent, "; ")))
	var unread map[string]int
	if err := c.call(ctx, "GET", "/api/users/"+ben+"/unread", nil, &unread, http.StatusOK); err != nil {
		return err
	}
	say("   ben's unread messages: %d; he reads them", unread[conv])
	if err := c.call(ctx, "POST", "/api/conversations/"+conv+"/read/"+ben, nil, nil, http.StatusNoContent); err != nil {
		return err
	}

	var au keys.AuditSummary
	if err := c.call(ctx, "GET", "/api/admin/audit", nil, &au, http.StatusOK); err != nil {
		return err
	}
	say("9. audit of %q: %d keys, %d problems", au.Namespace, au.Scanned, len(au.Problems))
	for _, p := range au.Problems {
		say("   problem: %s", p)
	}
	return nil
}
