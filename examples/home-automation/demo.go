package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// client calls the API as a browser or an app would.
type client struct {
	base string
	hc   *http.Client
	sent int64 // requests sent
}

func newClient(base string) *client {
	return &client{base: base, hc: &http.Client{Timeout: 10 * time.Second}}
}

// call sends body as JSON with the bearer token (if any), checks the
// status and decodes the reply into out (if not nil).
func (c *client) call(ctx context.Context, method, path, token string, body any, want int, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("User-Agent", "home-automation-demo/1.0")
	c.sent++
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return res.Header, fmt.Errorf("%s %s: %d %s, want %d", method, path, res.StatusCode, strings.TrimSpace(string(b)), want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return res.Header, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return res.Header, nil
}

// loginReply is what POST /api/auth/login answers.
type loginReply struct {
	UserID    string    `json:"user_id"`
	Status    string    `json:"status"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// metricsReply is what GET /api/admin/metrics answers.
type metricsReply struct {
	Total     int64               `json:"requests_total"`
	Accepted  int64               `json:"requests_accepted"`
	Errors    int64               `json:"errors_total"`
	MaxConns  int64               `json:"connections_max_since_startup"`
	MaxSpeed  int64               `json:"max_speed_per_second"`
	Endpoints map[string][2]int64 `json:"endpoints"`
}

func (c *client) login(ctx context.Context, user, password, device string) (loginReply, error) {
	var l loginReply
	_, err := c.call(ctx, "POST", "/api/auth/login", "", map[string]any{"user_id": user, "password": password, "device_id": device}, http.StatusOK, &l)
	return l, err
}

// demo drives the API through seed 000's flows and prints what happens.
// User IDs carry a random suffix, so that runs against a shared server
// do not meet each other's state.
func demo(ctx context.Context, base string, out io.Writer) error {
	c := newClient(base)
	defer c.hc.CloseIdleConnections() // see metrics-http's load: a spare dialed connection would hold Shutdown 5 s
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	run := randomHex(2)
	alice, carol := "alice-"+run, "carol-"+run

	// 0. The support team logs in; metrics as they stand.
	ann, err := c.login(ctx, "ann", adminPassword, "ann-laptop")
	if err != nil {
		return err
	}
	var before metricsReply
	if _, err := c.call(ctx, "GET", "/api/admin/metrics", ann.Token, nil, http.StatusOK, &before); err != nil {
		return err
	}

	// 1. Accounts, sessions and statuses (§4).
	for _, u := range []string{alice, carol} {
		if _, err := c.call(ctx, "POST", "/api/auth/register", "", map[string]string{"user_id": u, "password": "correct horse " + u}, http.StatusCreated, nil); err != nil {
			return err
		}
	}
	al, err := c.login(ctx, alice, "correct horse "+alice, "iPhone_12_ABC123")
	if err != nil {
		return err
	}
	var guest loginReply
	if _, err := c.call(ctx, "POST", "/api/auth/login", "", map[string]any{"device_id": "kiosk-1", "anonymous": true}, http.StatusOK, &guest); err != nil {
		return err
	}
	say("1. users: %s logged in on iPhone_12_ABC123 (status %s, session until %s); %s came in anonymously (status %s)",
		alice, al.Status, al.ExpiresAt.Local().Format("15:04"), guest.UserID, guest.Status)

	// 2. Devices: everyone may look, only status "login" may act.
	var devs []device
	hdr, err := c.call(ctx, "GET", "/api/devices", guest.Token, nil, http.StatusOK, &devs)
	if err != nil {
		return err
	}
	if _, err := c.call(ctx, "PUT", "/api/devices/living-room-light", guest.Token, map[string]string{"state": "on"}, http.StatusForbidden, nil); err != nil {
		return err
	}
	var d device
	if _, err := c.call(ctx, "PUT", "/api/devices/living-room-light", al.Token, map[string]string{"state": "on"}, http.StatusOK, &d); err != nil {
		return err
	}
	say("2. devices: the guest sees %d devices but may not switch the light (403); %s turns it %s", len(devs), alice, d.State)
	say("   fixed window per IP on every /api/ route: RateLimit-Policy %s, RateLimit %s", hdr.Get("RateLimit-Policy"), hdr.Get("RateLimit"))

	// 3. A password guesser on carol's account meets the sliding window.
	refusedAt := 0
	for i := 1; i <= loginLimit.Rate+1; i++ {
		_, err := c.call(ctx, "POST", "/api/auth/login", "", map[string]any{"user_id": carol, "password": fmt.Sprintf("guess-%d", i), "device_id": "bot"}, http.StatusUnauthorized, nil)
		if err != nil && strings.Contains(err.Error(), ": 429 ") {
			refusedAt = i
			break
		}
		if err != nil {
			return err
		}
	}
	if refusedAt != loginLimit.Rate+1 {
		return fmt.Errorf("login attempt %d of %s was refused, want %d", refusedAt, carol, loginLimit.Rate+1)
	}
	if _, err := c.login(ctx, carol, "correct horse "+carol, "laptop"); err == nil || !strings.Contains(err.Error(), ": 429 ") {
		return fmt.Errorf("carol's login during the lock-out: %v, want 429", err)
	}
	say("3. rate limit: %d wrong passwords for %s in a row, then 429 (sliding window %s per account), even with the right one",
		loginLimit.Rate, carol, loginLimit)

	// 4. Support chat (§5).
	var pres map[string]any
	if _, err := c.call(ctx, "PUT", "/api/admin/presence", ann.Token, map[string]string{"status": "online"}, http.StatusOK, &pres); err != nil {
		return err
	}
	if _, err := c.call(ctx, "POST", "/api/support/conversation?priority=high", guest.Token, nil, http.StatusForbidden, nil); err != nil {
		return err
	}
	var opened struct {
		Admin string `json:"admin"`
	}
	if _, err := c.call(ctx, "POST", "/api/support/conversation?priority=high", al.Token, nil, http.StatusOK, &opened); err != nil {
		return err
	}
	if _, err := c.call(ctx, "POST", "/api/support/messages", al.Token, map[string]string{"content": "The hallway thermostat reads 20.5 but the room is cold"}, http.StatusCreated, nil); err != nil {
		return err
	}
	say("4. support: ann is online, bob is not; %s opens a high-priority conversation and it goes to %q; the guest may not chat (403)", alice, opened.Admin)
	var q struct {
		Unread []struct {
			Conversation string `json:"conversation"`
			Priority     string `json:"priority"`
		} `json:"unread"`
		Mine []string `json:"assigned_to_me"`
	}
	if _, err := c.call(ctx, "GET", "/api/admin/queue", ann.Token, nil, http.StatusOK, &q); err != nil {
		return err
	}
	var dash map[string]any
	if _, err := c.call(ctx, "GET", "/api/admin/dashboard", ann.Token, nil, http.StatusOK, &dash); err != nil {
		return err
	}
	unread := []string{}
	for _, u := range q.Unread {
		unread = append(unread, u.Conversation+" ("+u.Priority+")")
	}
	say("   ann's queue: unread %v, assigned to her %v; dashboard assigned_to_me=%v unread_count=%v",
		unread, q.Mine, dash["assigned_to_me"], dash["unread_count"])
	if _, err := c.call(ctx, "POST", "/api/admin/conversations/"+alice+"/messages", ann.Token, map[string]string{"content": "Let me check the thermostat's schedule."}, http.StatusCreated, nil); err != nil {
		return err
	}
	var msgs []struct {
		ID         int64  `json:"id"`
		Content    string `json:"content"`
		SenderRole string `json:"sender_role"`
	}
	if _, err := c.call(ctx, "GET", "/api/support/messages", al.Token, nil, http.StatusOK, &msgs); err != nil {
		return err
	}
	if _, err := c.call(ctx, "GET", "/api/admin/dashboard", ann.Token, nil, http.StatusOK, &dash); err != nil {
		return err
	}
	say("   ann replies; %s's cached messages, newest first: %d", alice, len(msgs))
	for _, m := range msgs {
		say("     #%d %-5s %s", m.ID, m.SenderRole, m.Content)
	}
	say("   ann's dashboard now: unread_count=%v avg_response_time=%.1f min", dash["unread_count"], dash["avg_response_time"])

	// 5. Instant user control: a block refuses a valid session at once.
	if _, err := c.call(ctx, "POST", "/api/admin/users/"+alice+"/block", ann.Token, nil, http.StatusOK, nil); err != nil {
		return err
	}
	if _, err := c.call(ctx, "GET", "/api/me", al.Token, nil, http.StatusUnauthorized, nil); err != nil {
		return err
	}
	if _, err := c.call(ctx, "DELETE", "/api/admin/users/"+alice+"/block", ann.Token, nil, http.StatusOK, nil); err != nil {
		return err
	}
	var me map[string]any
	if _, err := c.call(ctx, "GET", "/api/me", al.Token, nil, http.StatusOK, &me); err != nil {
		return err
	}
	say("5. block: ann blocks %s, whose session is refused at once (401); unblocked, status %v again", alice, me["status"])

	// 6. The conversation ends; ann leaves; alice logs out.
	var res map[string]string
	if _, err := c.call(ctx, "POST", "/api/admin/conversations/"+alice+"/resolve", ann.Token, nil, http.StatusOK, &res); err != nil {
		return err
	}
	if _, err := c.call(ctx, "PUT", "/api/admin/presence", ann.Token, map[string]string{"status": "offline"}, http.StatusOK, nil); err != nil {
		return err
	}
	if _, err := c.call(ctx, "POST", "/api/auth/logout", al.Token, nil, http.StatusOK, nil); err != nil {
		return err
	}
	if _, err := c.call(ctx, "GET", "/api/me", al.Token, nil, http.StatusUnauthorized, nil); err != nil {
		return err
	}
	say("6. resolved by %s; ann goes offline; %s logs out and the handle stops working (401)", res["resolved_by"], alice)

	// 7. Metrics (§1-2), once the flusher (every second) has sent them.
	var m metricsReply
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := c.call(ctx, "GET", "/api/admin/metrics", ann.Token, nil, http.StatusOK, &m); err != nil {
			return err
		}
		// Every request but this one is in, and a complete second has been
		// counted for the speed.
		if m.Total >= before.Total+c.sent-1 && m.MaxSpeed > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	say("7. metrics (all instances): requests:total %d (+%d), accepted %d (+%d), errors %d (+%d), peak connections %d, peak speed %d/s",
		m.Total, m.Total-before.Total, m.Accepted, m.Accepted-before.Accepted, m.Errors, m.Errors-before.Errors, m.MaxConns, m.MaxSpeed)
	for _, ep := range []string{"POST /api/auth/login", "PUT /api/devices/{id}", "GET /api/me", "POST /api/admin/conversations/{id}/messages"} {
		say("   %-45s %4d requests %4d errors", ep, m.Endpoints[ep][0], m.Endpoints[ep][1])
	}

	// 8. The keyspace against the registry.
	var au keys.AuditSummary
	if _, err := c.call(ctx, "GET", "/api/admin/audit", ann.Token, nil, http.StatusOK, &au); err != nil {
		return err
	}
	say("8. audit of %q: %d keys in %d patterns, %d problems", au.Namespace, au.Scanned, len(au.Patterns), len(au.Problems))
	for _, p := range au.Problems {
		say("   problem: %s", p)
	}
	return nil
}
