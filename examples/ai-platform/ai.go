package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
)

const (
	model            = "zentoria-small"
	contextWindow    = 1500    // the model's prompt budget, in tokens
	dailyTokenBudget = 200_000 // per user and day
)

var systemPrompt = aimemory.Message{Role: aimemory.System, Content: "You are Zentoria's assistant. Answer from the user's files when they are relevant."}

// modelCalls counts the fake model's calls, to show the response cache.
var modelCalls atomic.Int64

// fakeModel stands in for an LLM: a deterministic answer naming the
// sources it was given.
func fakeModel(prompt []aimemory.Message, sources []json.RawMessage) string {
	modelCalls.Add(1)
	q := prompt[len(prompt)-1].Content
	if len(sources) == 0 {
		return fmt.Sprintf("I found nothing in your files about %q; %d messages of context were considered.", q, len(prompt))
	}
	var s struct {
		Name, Snippet string
	}
	_ = json.Unmarshal(sources[0], &s)
	return fmt.Sprintf("According to %s (%d source(s)): %s", s.Name, len(sources), s.Snippet)
}

func (p *platform) listModels(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, map[string]any{"models": []map[string]any{{"id": model, "context_window": contextWindow}}}, nil)
}

// aiChat answers {"conversation_id","message","topic"}: the question
// joins the conversation (AI memory, the user's daily token budget),
// relevant file chunks come from the RAG cache (30 min per query), the
// model sees the window that fits its budget, its answer comes from the
// response cache (5 min per identical prompt) or is streamed on
// pubsub:ai:response and appended. Limited per user by a sliding window.
func (p *platform) aiChat(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ConversationID string `json:"conversation_id"`
		Message        string `json:"message"`
		Topic          string `json:"topic"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	ctx, user, conv := r.Context(), principalUser(r), in.ConversationID
	if lim, err := p.perUser.Allow(ctx, user); err != nil || !lim.Allowed {
		if err == nil {
			err = errStatus(http.StatusTooManyRequests, "slow down: retry in %s", lim.RetryAfter.Round(time.Second))
		}
		reply(w, 0, nil, err)
		return
	}

	head, err := p.mem.Window(ctx, user, conv, aimemory.WithLastN(1))
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	turn := []aimemory.Message{{Role: aimemory.User, Content: in.Message}}
	if head.Length == 0 { // a new conversation starts with the (pinned) system prompt
		turn = append([]aimemory.Message{systemPrompt}, turn...)
	}
	if _, err := p.mem.Append(ctx, user, conv, turn); err != nil {
		reply(w, 0, nil, err) // ErrBudgetExceeded: 429
		return
	}
	if in.Topic != "" {
		if _, err := p.mem.AddTopics(ctx, user, in.Topic); err != nil {
			reply(w, 0, nil, err)
			return
		}
	}

	// The chunks come from the user's own files, so the entry must be the
	// user's: the user goes into the query's parameters (its hash), not
	// into Query.User, whose cache tag (cache:tag:{ai-rag:<user>}) aimemory
	// writes on its own client, DB 4, while seed 001's layout puts cache
	// tags in DB 1 (the audit's "outside DB 1"). The cost: EraseUser does
	// not reach these entries; they expire after 30 minutes. The corpus
	// version in the parameters keeps a cached retrieval from outliving
	// the files it searched.
	rag, err := p.mem.RAG(ctx, aimemory.Query{Text: in.Message, Params: map[string]any{
		"collection": "files", "top_k": 3, "owner": user, "corpus": p.files.version(user)}},
		func(context.Context) ([]json.RawMessage, error) {
			var chunks []json.RawMessage
			for _, c := range p.files.search(user, in.Message) {
				b, _ := json.Marshal(c)
				chunks = append(chunks, b)
			}
			return chunks, nil
		})
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	win, err := p.mem.Window(ctx, user, conv, aimemory.WithTokenBudget(contextWindow))
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	prompt := win.All()
	if len(rag.Chunks) > 0 {
		b, _ := json.Marshal(rag.Chunks)
		prompt = append(prompt[:len(prompt)-1], aimemory.Message{Role: aimemory.System, Content: "Relevant files: " + string(b)}, prompt[len(prompt)-1])
	}
	resp, err := p.mem.Response(ctx, aimemory.Request{Model: model, Messages: prompt, Params: map[string]any{"temperature": 0}},
		func(context.Context) (string, error) { return fakeModel(prompt, rag.Chunks), nil })
	if err != nil {
		reply(w, 0, nil, err)
		return
	}

	var res aimemory.Appended
	streamed := resp.Status != cache.Hit
	if !streamed { // a cached answer goes straight into the conversation
		res, err = p.mem.Append(ctx, user, conv, []aimemory.Message{{Role: aimemory.Assistant, Content: resp.Text}})
	} else { // a fresh one is streamed word by word, then appended
		res, err = p.stream(ctx, user, conv, resp.Text)
	}
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	p.tokens.Add(int64(win.Tokens), model, "prompt")
	p.tokens.Add(int64(res.Tokens), model, "completion")
	reply(w, http.StatusOK, map[string]any{
		"answer": resp.Text, "response_cache": resp.Status.String(), "streamed": streamed, "rag_cache": rag.Status.String(), "sources": len(rag.Chunks),
		"window_tokens": win.Tokens, "completion_tokens": res.Tokens, "conversation_length": res.Length, "tokens_today": res.TokensToday,
	}, nil)
}

// stream publishes the answer on pubsub:ai:response, chunk by chunk, and
// appends it to the conversation when it ends.
func (p *platform) stream(ctx context.Context, user, conv, answer string) (aimemory.Appended, error) {
	s, err := p.mem.Stream(user, conv)
	if err != nil {
		return aimemory.Appended{}, err
	}
	for _, word := range strings.SplitAfter(answer, " ") {
		if err := s.Send(ctx, word); err != nil && !errors.Is(err, aimemory.ErrInvalid) {
			p.log.Printf("stream: %v", err) // at most once: the answer is appended all the same
		}
	}
	return s.End(ctx, 0)
}

// aiConversation returns the conversation's window (system prompt pinned).
func (p *platform) aiConversation(w http.ResponseWriter, r *http.Request) {
	win, err := p.mem.Window(r.Context(), principalUser(r), r.PathValue("id"))
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	msgs := []map[string]any{}
	for _, m := range win.All() {
		msgs = append(msgs, map[string]any{"role": m.Role, "content": m.Content, "tokens": m.Tokens, "timestamp": m.Timestamp})
	}
	reply(w, http.StatusOK, map[string]any{"messages": msgs, "tokens": win.Tokens, "length": win.Length}, nil)
}

// aiMe is the user's context across conversations.
func (p *platform) aiMe(w http.ResponseWriter, r *http.Request) {
	u, err := p.mem.User(r.Context(), principalUser(r))
	reply(w, http.StatusOK, map[string]any{
		"recent_topics": u.RecentTopics, "last_conversation_id": u.LastConversationID,
		"total_tokens_today": u.TokensToday, "day": u.Day, "daily_budget": dailyTokenBudget,
	}, err)
}
