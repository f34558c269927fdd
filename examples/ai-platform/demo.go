package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// client calls the API as an app would.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string) *client {
	return &client{base: base, hc: &http.Client{Timeout: 10 * time.Second}}
}

// call sends body as JSON with the credential (a JWT, or "key:<API key>"),
// checks the status and decodes the reply into out (if not nil).
func (c *client) call(ctx context.Context, method, path, cred string, body any, want int, out any) (http.Header, error) {
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
	if key, ok := strings.CutPrefix(cred, "key:"); ok {
		req.Header.Set("X-API-Key", key)
	} else if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	req.Header.Set("User-Agent", "zentoria-demo/1.0")
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

func (c *client) login(ctx context.Context, email string) (tokens, error) {
	var t tokens
	_, err := c.call(ctx, "POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": adminPassword}, http.StatusOK, &t)
	return t, err
}

// eventLog follows GET /api/v1/events and counts what arrives per channel.
type eventLog struct {
	mu     sync.Mutex
	counts map[string]int
	done   chan struct{}
}

func (c *client) follow(ctx context.Context, jwt string) (*eventLog, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	res, err := (&http.Client{}).Do(req) // no timeout: a stream
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() || sc.Text() != ": subscribed" {
		res.Body.Close()
		return nil, fmt.Errorf("events: %s", res.Status)
	}
	l := &eventLog{counts: map[string]int{}, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer res.Body.Close()
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				l.mu.Lock()
				l.counts[name]++
				l.mu.Unlock()
			}
		}
	}()
	return l, nil
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for k, n := range l.counts {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// poll calls GET path until done says so, for at most 10 s.
func poll[T any](ctx context.Context, c *client, path, cred string, done func(T) bool) (T, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var v T
		if _, err := c.call(ctx, "GET", path, cred, nil, http.StatusOK, &v); err != nil {
			return v, err
		}
		if done(v) {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("GET %s: still %+v after 10s", path, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// demo drives the API through seed 001's flows and prints what happens.
// IDs (conversations, files, executions, API keys) are new per run, so
// that runs against a shared server do not meet each other's state.
func demo(ctx context.Context, base string, out io.Writer) error {
	c := newClient(base)
	defer c.hc.CloseIdleConnections() // see metrics-http's load: a spare dialed connection would hold Shutdown 5 s
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	run := randomHex(2)

	// 0. The admin follows the event channels.
	admin, err := c.login(ctx, "admin@zentoria.local")
	if err != nil {
		return err
	}
	sctx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	events, err := c.follow(sctx, admin.AccessToken)
	if err != nil {
		return err
	}

	// 1. Sessions (DB 0): two devices, a stolen refresh token, a revoked JWT.
	laptop, err := c.login(ctx, "dana@zentoria.local")
	if err != nil {
		return err
	}
	phone, err := c.login(ctx, "dana@zentoria.local")
	if err != nil {
		return err
	}
	var sessions []map[string]any
	if _, err := c.call(ctx, "GET", "/api/v1/auth/sessions", laptop.AccessToken, nil, http.StatusOK, &sessions); err != nil {
		return err
	}
	var rotated tokens
	if _, err := c.call(ctx, "POST", "/api/v1/auth/refresh", "", map[string]string{"session": phone.Session, "refresh_token": phone.RefreshToken}, http.StatusOK, &rotated); err != nil {
		return err
	}
	// A phone that lost the reply retries with its old token, within the
	// rotation grace: it gets the same new token, and nothing rotates.
	var retried tokens
	if _, err := c.call(ctx, "POST", "/api/v1/auth/refresh", "", map[string]string{"session": phone.Session, "refresh_token": phone.RefreshToken}, http.StatusOK, &retried); err != nil {
		return err
	}
	if retried.RefreshToken != rotated.RefreshToken {
		return fmt.Errorf("a retried rotation gave a second refresh token")
	}
	var again tokens
	if _, err := c.call(ctx, "POST", "/api/v1/auth/refresh", "", map[string]string{"session": phone.Session, "refresh_token": rotated.RefreshToken}, http.StatusOK, &again); err != nil {
		return err
	}
	if _, err := c.call(ctx, "POST", "/api/v1/auth/refresh", "", map[string]string{"session": phone.Session, "refresh_token": phone.RefreshToken}, http.StatusUnauthorized, nil); err != nil {
		return err
	}
	if _, err := c.call(ctx, "POST", "/api/v1/auth/refresh", "", map[string]string{"session": phone.Session, "refresh_token": again.RefreshToken}, http.StatusUnauthorized, nil); err != nil {
		return err
	}
	say("1. sessions: dana logs in on two devices (%d live sessions in her index); the phone's refresh token rotates", len(sessions))
	say("   (a retry with the old token gets the same new one), rotates again, and then a replay of the first token")
	say("   is taken for theft and ends the phone's session (even the newest token is refused)")
	var lo map[string]any
	if _, err := c.call(ctx, "POST", "/api/v1/auth/logout", rotated.AccessToken, nil, http.StatusOK, &lo); err != nil {
		return err
	}
	if _, err := c.call(ctx, "GET", "/api/v1/files/list", rotated.AccessToken, nil, http.StatusUnauthorized, nil); err != nil {
		return err
	}
	say("   logout blacklists the phone's JWT (jti %v) until it expires: the next call with it is refused (401)", lo["token_revoked"])
	dana := laptop.AccessToken

	// 2. The API cache (DB 1): the seed's TTLs, per user, tag "files".
	status := func(path, cred string) (string, error) {
		h, err := c.call(ctx, "GET", path, cred, nil, http.StatusOK, nil)
		return strings.TrimPrefix(h.Get("Cache-Status"), "redschema; "), err
	}
	say("2. cache (Cache-Status):")
	for _, path := range []string{"/api/v1/files/list", "/api/v1/ai/models"} {
		first, err := status(path, dana)
		if err != nil {
			return err
		}
		second, err := status(path, dana)
		if err != nil {
			return err
		}
		say("   GET %-20s %s, then %s", path, first, second)
	}

	// 3. An upload: pubsub, a queued job, a file lock, invalidations.
	var up struct {
		FileID string `json:"file_id"`
		JobID  string `json:"job_id"`
	}
	if _, err := c.call(ctx, "POST", "/api/v1/files", dana, map[string]string{"name": "invoice-2026-01.txt",
		"content": "Invoice 2026-01 for Dana: the total due is 1,250 EUR by February 15."}, http.StatusAccepted, &up); err != nil {
		return err
	}
	listed, err := status("/api/v1/files/list", dana)
	if err != nil {
		return err
	}
	f, err := poll(ctx, c, "/api/v1/files/"+up.FileID, dana, func(f file) bool { return f.Status == "processed" })
	if err != nil {
		return err
	}
	say("3. files: dana uploads %s (%s, job %s); the listing was invalidated (%s);", f.Name, up.FileID, up.JobID, listed)
	say("   a worker processed it under lock:file:{%s} (fencing token %d, %d words) and invalidated the cached metadata", f.ID, f.Fence, f.Words)

	// 4. Workflows: two runs of one workflow (its lock serialises them), one that dead-letters.
	ids := map[string]string{}
	for i, wf := range []string{"nightly-report", "nightly-report", "sync-crm"} {
		var e map[string]string
		if _, err := c.call(ctx, "POST", "/api/v1/workflows/"+wf+"/execute?priority=high", dana, map[string]any{"run": run, "n": i}, http.StatusAccepted, &e); err != nil {
			return err
		}
		ids[fmt.Sprint(i)] = e["execution_id"]
	}
	var recs []executionRecord
	for i := range 3 {
		r, err := poll(ctx, c, "/api/v1/executions/"+ids[fmt.Sprint(i)], dana, func(r executionRecord) bool { return r.Status == "success" || r.Status == "failed" })
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	a, b := recs[0], recs[1]
	if b.Started.Before(a.Started) {
		a, b = b, a
	}
	if b.Started.Before(a.Finished) || b.Fence <= a.Fence {
		return fmt.Errorf("executions of nightly-report overlapped: %+v %+v", a, b)
	}
	say("4. workflows: two runs of nightly-report, one after the other under lock:workflow:{nightly-report} (fences %d < %d): %s, %s",
		a.Fence, b.Fence, a.Status, b.Status)
	var dead []map[string]any
	if _, err := poll(ctx, c, "/api/v1/admin/queues/n8n/dead", admin.AccessToken, func(d []map[string]any) bool {
		dead = d
		for _, x := range d {
			if x["id"] == recs[2].ID {
				return true
			}
		}
		return false
	}); err != nil {
		return err
	}
	var qs map[string]any
	if _, err := c.call(ctx, "GET", "/api/v1/admin/queues/n8n", admin.AccessToken, nil, http.StatusOK, &qs); err != nil {
		return err
	}
	say("   sync-crm %s after %d attempts: in the dead-letter list (%s), announced on pubsub:system:notification",
		recs[2].Status, recs[2].Attempts, recs[2].Error)
	say("   n8n queue stats: processed %v, failed attempts %v, dead %v, avg %v ms (dead letters listed: %d)",
		qs["total_processed"], qs["total_failed"], qs["dead"], qs["avg_process_time_ms"], len(dead))

	// 5. AI memory (DB 4): RAG, the response cache, streaming, the token budget.
	type chat struct {
		Answer        string `json:"answer"`
		ResponseCache string `json:"response_cache"`
		Streamed      bool   `json:"streamed"`
		RAGCache      string `json:"rag_cache"`
		Sources       int    `json:"sources"`
		WindowTokens  int    `json:"window_tokens"`
		Completion    int    `json:"completion_tokens"`
		TokensToday   int64  `json:"tokens_today"`
	}
	ask := func(conv, q, topic string) (chat, error) {
		var r chat
		_, err := c.call(ctx, "POST", "/api/v1/ai/chat", dana, map[string]string{"conversation_id": conv, "message": q, "topic": topic}, http.StatusOK, &r)
		return r, err
	}
	convA, convB := "conv-"+run+"-a", "conv-"+run+"-b"
	// The token totals before this run's turns: another run on the same
	// server (its totals live 5 minutes) has counted its own already.
	type metricSeries = []series
	var m0 map[string]metricSeries
	if _, err := c.call(ctx, "GET", "/api/v1/admin/metrics", admin.AccessToken, nil, http.StatusOK, &m0); err != nil {
		return err
	}
	calls := modelCalls.Load()
	r1, err := ask(convA, "What is the total due on my invoice?", "invoices")
	if err != nil {
		return err
	}
	r2, err := ask(convA, "And when is it due?", "invoices")
	if err != nil {
		return err
	}
	r3, err := ask(convB, "What is the total due on my invoice?", "billing")
	if err != nil {
		return err
	}
	say("5. AI: %q", r1.Answer)
	say("   turn 1: RAG %s (%d source), response %s (streamed on pubsub:ai:response: %v); turn 2: window %d tokens, response %s",
		r1.RAGCache, r1.Sources, r1.ResponseCache, r1.Streamed, r2.WindowTokens, r2.ResponseCache)
	say("   the same question in a new conversation: RAG %s, response %s (the model ran %d times for 3 turns)",
		r3.RAGCache, r3.ResponseCache, modelCalls.Load()-calls)
	var me map[string]any
	if _, err := c.call(ctx, "GET", "/api/v1/ai/me", dana, nil, http.StatusOK, &me); err != nil {
		return err
	}
	say("   dana's context: topics %v, last conversation %v, %v of %v tokens today", me["recent_topics"], me["last_conversation_id"], me["total_tokens_today"], me["daily_budget"])

	// 6. API keys (DB 5): limits changed at run time.
	var key map[string]string
	if _, err := c.call(ctx, "POST", "/api/v1/auth/api-keys", dana, nil, http.StatusCreated, &key); err != nil {
		return err
	}
	if _, err := c.call(ctx, "PUT", "/api/v1/admin/ratelimits/"+key["id"], admin.AccessToken, map[string]int{"per_minute": 60, "burst": 3}, http.StatusOK, nil); err != nil {
		return err
	}
	cred := "key:" + key["key"]
	for range 3 {
		if _, err := c.call(ctx, "GET", "/api/v1/workflows/list", cred, nil, http.StatusOK, nil); err != nil {
			return err
		}
	}
	h, err := c.call(ctx, "GET", "/api/v1/workflows/list", cred, nil, http.StatusTooManyRequests, nil)
	if err != nil {
		return err
	}
	say("6. API key %s: burst set to 3 at run time; the 4th call at once gets 429 (Retry-After %ss, RateLimit-Policy %s)",
		key["id"], h.Get("Retry-After"), h.Get("RateLimit-Policy"))
	if _, err := c.call(ctx, "PUT", "/api/v1/admin/ratelimits/"+key["id"], admin.AccessToken, map[string]int{"burst": 20}, http.StatusOK, nil); err != nil {
		return err
	}
	h, err = c.call(ctx, "GET", "/api/v1/workflows/list", cred, nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	say("   burst raised to 20: admitted again at once (X-RateLimit-Limit %s, remaining %s)", h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"))

	// 7. Metrics (DB 7), once the flusher (every second) has sent the
	// tokens of every turn (each turn's are counted as it answers, and a
	// flush between two turns sends the first ones alone).
	var m map[string]metricSeries
	sumOf := func(m map[string]metricSeries, name string, match func(map[string]string) bool) (n int64) {
		for _, s := range m[name] {
			if match == nil || match(s.Labels) {
				n += s.Value
			}
		}
		return n
	}
	sum := func(name string, match func(map[string]string) bool) int64 { return sumOf(m, name, match) }
	isPrompt := func(l map[string]string) bool { return l["type"] == "prompt" }
	isCompletion := func(l map[string]string) bool { return l["type"] == "completion" }
	// This run's tokens are in once the total holds them on top of the
	// one before, or alone when that one expired meanwhile.
	counted := func(match func(map[string]string) bool, own int64) bool {
		before, now := sumOf(m0, "ai_tokens_used", match), sum("ai_tokens_used", match)
		return now >= before+own || now < before && now >= own
	}
	prompt, completion := int64(r1.WindowTokens+r2.WindowTokens+r3.WindowTokens), int64(r1.Completion+r2.Completion+r3.Completion)
	m, err = poll(ctx, c, "/api/v1/admin/metrics", admin.AccessToken, func(v map[string]metricSeries) bool {
		m = v
		return counted(isPrompt, prompt) && counted(isCompletion, completion) &&
			len(m["file_uploads_bytes"]) == 1 && len(m["api_latency_ms"]) > 0
	})
	if err != nil {
		return err
	}
	say("7. metrics: api_requests_total %d (429s %d), api_latency_ms %d observations, ai_tokens_used %d prompt + %d completion, file_uploads_bytes %d",
		sum("api_requests_total", nil), sum("api_requests_total", func(l map[string]string) bool { return l["status"] == "429" }),
		sum("api_latency_ms", nil), sum("ai_tokens_used", isPrompt), sum("ai_tokens_used", isCompletion), sum("file_uploads_bytes", nil))

	// 8. The event stream, then the keyspace against the registry.
	time.Sleep(100 * time.Millisecond) // the last events in flight
	stopEvents()
	<-events.done
	say("8. events seen on the stream: %s", events)
	var au auditReport
	if _, err := c.call(ctx, "GET", "/api/v1/admin/audit", admin.AccessToken, nil, http.StatusOK, &au); err != nil {
		return err
	}
	say("9. audit: %s", au.summary())
	for _, d := range au.DBs {
		var pats []string
		for p, n := range d.Patterns {
			pats = append(pats, fmt.Sprintf("%s %d", p, n))
		}
		sort.Strings(pats)
		if len(pats) == 0 {
			pats = []string{"none (channels hold nothing)"}
		}
		say("   DB %d: %d keys: %s", d.DB, d.Scanned, strings.Join(pats, ", "))
	}
	for _, p := range au.Problems {
		say("   problem: %s", p)
	}
	return nil
}
