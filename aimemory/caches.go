package aimemory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
)

// Request is a model request, as the response cache keys it: the model,
// the messages (role, content and tool calls; timestamps and token
// counts are not part of it), the parameters, and the user it is scoped
// to.
type Request struct {
	Model    string
	Messages []Message
	// Params are the request's parameters (temperature, max_tokens, ...):
	// any JSON-encodable values; maps are hashed with sorted keys, so
	// their order does not matter.
	Params map[string]any
	// User scopes the cached response to one user: it is part of the
	// hash, so no other user is served it, and the entry is tagged to
	// the user, so EraseUser deletes it. "" shares the response among
	// all users who send the same request.
	User string
}

// Query is a retrieval query, as the RAG cache keys it.
type Query struct {
	Text string
	// Params are the retrieval's parameters (collection, top_k, filters).
	Params map[string]any
	// User scopes the cached result to one user, as Request.User does.
	User string
}

// canonical is the JSON whose SHA-256 keys a cached entry: the fields in
// a fixed order, maps with sorted keys (encoding/json sorts them), no
// timestamps or token counts.
type canonical struct {
	Kind     string         `json:"kind"`
	Model    string         `json:"model,omitempty"`
	Messages []canonMessage `json:"messages,omitempty"`
	Query    string         `json:"query,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
	User     string         `json:"user,omitempty"`
}

type canonMessage struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

func hashOf(op string, c canonical) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", pkg.Invalid(op, fmt.Errorf("request does not encode: %w", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Hash returns the request's prompt hash: the hex SHA-256 of its
// canonical JSON. Two requests that differ only in message timestamps,
// token counts or the order of map keys have the same hash.
func (r Request) Hash() (string, error) { return r.hash("hash") }

func (r Request) hash(op string) (string, error) {
	if len(r.Messages) > maxMessages {
		return "", pkg.Invalidf(op, "%d messages, at most %d", len(r.Messages), maxMessages)
	}
	c := canonical{Kind: "response", Model: r.Model, Params: r.Params, User: r.User, Messages: make([]canonMessage, len(r.Messages))}
	for i := range r.Messages {
		m := &r.Messages[i]
		if err := m.check(op, i); err != nil {
			return "", err
		}
		c.Messages[i] = canonMessage{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	}
	return hashOf(op, c)
}

// Hash returns the query's hash: the hex SHA-256 of its canonical JSON.
func (q Query) Hash() (string, error) { return q.hash("hash") }

func (q Query) hash(op string) (string, error) {
	if q.Text == "" || !utf8.ValidString(q.Text) {
		return "", pkg.Invalidf(op, "query text: want non-empty valid UTF-8")
	}
	return hashOf(op, canonical{Kind: "rag", Query: q.Text, Params: q.Params, User: q.User})
}

// CacheOption configures one Response or RAG call.
type CacheOption func(*cacheConfig)

type cacheConfig struct {
	bypass, refresh bool
	ttl             time.Duration
}

// WithoutCache skips the cache for this call: the loader runs, and nothing is
// read or stored.
//
// Default: off.
func WithoutCache() CacheOption { return func(c *cacheConfig) { c.bypass = true } }

// WithRefresh skips the stored value and stores a freshly loaded one
// (callers refreshing at once share one load).
//
// Default: off.
func WithRefresh() CacheOption { return func(c *cacheConfig) { c.refresh = true } }

// WithCacheTTL sets the freshness of what this call stores.
//
// Default: WithResponseTTL's or WithRAGTTL's. Range: 1s to 24h.
func WithCacheTTL(d time.Duration) CacheOption { return func(c *cacheConfig) { c.ttl = d } }

// Cached says how a Response or RAG call got its value.
type Cached struct {
	// Status is cache.Hit for a stored value, cache.Loaded when a loader
	// ran (Collapsed: another caller's, in this process or another),
	// cache.Stale for a value past its freshness served within a grace
	// (cache.WithGrace through WithCacheOptions).
	Status    cache.Status
	Collapsed bool
	// Key is the entry's key ("" with WithoutCache).
	Key string
}

// ResponseResult is what Response returns.
type ResponseResult struct {
	Text string
	Cached
}

// RAGResult is what RAG returns.
type RAGResult struct {
	// Chunks are the relevant chunks, each a JSON value, as the loader
	// returned them.
	Chunks []json.RawMessage
	Cached
}

// Response returns the cached response to req at
// ai:response:{model}:{prompt_hash} (prompt_hash: Request.Hash), or
// calls generate on a miss and caches its text for WithResponseTTL
// (WithCacheTTL per call). It is package cache's read-through Fetch: one
// round trip on a hit, and one generate across every process on a miss
// (the others wait for its value). A response scoped to req.User is
// tagged to the user; EraseUser deletes it. generate's errors are
// returned and never cached. Bad input (an empty model, an invalid
// message, parameters that do not encode) is ErrInvalid, and so is a
// text from generate that is not valid UTF-8 (never cached); a cached
// value that is not valid UTF-8 is an error matching keys.ErrCorrupt
// naming the key, and the entry is deleted so that the next call
// reloads it.
func (m *Memory) Response(ctx context.Context, req Request, generate func(ctx context.Context) (string, error), opts ...CacheOption) (ResponseResult, error) {
	const op = "response"
	if generate == nil {
		return ResponseResult{}, pkg.Invalidf(op, "nil generate")
	}
	h, err := req.hash(op)
	if err != nil {
		return ResponseResult{}, err
	}
	v, c, err := m.fetch(ctx, op, m.responses, m.opt.respTTL, responseTag, req.User, []string{req.Model, h}, func(ctx context.Context) ([]byte, error) {
		s, err := generate(ctx)
		return []byte(s), err
	}, func(v []byte) error {
		if !utf8.Valid(v) {
			return fmt.Errorf("response is not valid UTF-8")
		}
		return nil
	}, opts)
	if err != nil {
		return ResponseResult{}, err
	}
	return ResponseResult{Text: string(v), Cached: c}, nil
}

// RAG returns the cached chunks for q at ai:rag:query:{query_hash}
// (query_hash: Query.Hash), or calls retrieve on a miss and caches its
// chunks as a JSON array for WithRAGTTL (WithCacheTTL per call), with single
// loading across processes as Response has. A result scoped to q.User is
// tagged to the user; EraseUser deletes it. A chunk that is not valid
// JSON is ErrInvalid; a cached value that is not a JSON array is an
// error matching keys.ErrCorrupt naming the key, and the entry is
// deleted.
func (m *Memory) RAG(ctx context.Context, q Query, retrieve func(ctx context.Context) ([]json.RawMessage, error), opts ...CacheOption) (RAGResult, error) {
	const op = "rag"
	if retrieve == nil {
		return RAGResult{}, pkg.Invalidf(op, "nil retrieve")
	}
	h, err := q.hash(op)
	if err != nil {
		return RAGResult{}, err
	}
	var chunks []json.RawMessage
	_, c, err := m.fetch(ctx, op, m.rag, m.opt.ragTTL, ragTag, q.User, []string{h}, func(ctx context.Context) ([]byte, error) {
		cs, err := retrieve(ctx)
		if err != nil {
			return nil, err
		}
		if cs == nil {
			cs = []json.RawMessage{}
		}
		b, err := json.Marshal(cs)
		if err != nil {
			return nil, pkg.Invalid(op, fmt.Errorf("chunks do not encode: %w", err))
		}
		return b, nil
	}, func(v []byte) error {
		chunks = nil
		return json.Unmarshal(v, &chunks)
	}, opts)
	if err != nil {
		return RAGResult{}, err
	}
	if chunks == nil {
		chunks = []json.RawMessage{}
	}
	return RAGResult{Chunks: chunks, Cached: c}, nil
}

// The tags of user-scoped entries: one per cache, so that each Store's
// InvalidateTag only meets keys of its own layout.
const (
	responseTag = "ai-response:"
	ragTag      = "ai-rag:"
)

// scopable reports whether a cache tag of user's entries, tag followed
// by the ID, is a valid key segment (the tag names cache's tag keys).
func scopable(tag, user string) bool {
	_, err := userKey.Key(keys.Namespace{}, tag+user)
	return err == nil
}

// checked returns load refusing, with ErrInvalid, a value that check
// refuses: the caller's own value is never stored, nor reported as data
// in Redis.
func checked(op string, load cache.Loader, check func([]byte) error) cache.Loader {
	return func(ctx context.Context) ([]byte, error) {
		v, err := load(ctx)
		if err == nil {
			if cerr := check(v); cerr != nil {
				return nil, pkg.Invalid(op, cerr)
			}
		}
		return v, err
	}
}

// fetch is Response's and RAG's flow over store s: args are the entry's
// key arguments, load produces the value, check validates a value read
// or loaded.
func (m *Memory) fetch(ctx context.Context, op string, s *cache.Store, ttl time.Duration, tag, user string, args []string,
	load cache.Loader, check func([]byte) error, opts []CacheOption) ([]byte, Cached, error) {
	cfg := cacheConfig{ttl: ttl}
	for _, f := range opts {
		if f != nil {
			f(&cfg)
		}
	}
	if cfg.ttl < time.Second || cfg.ttl > maxCacheTTL {
		return nil, Cached{}, pkg.Invalidf(op, "TTL %v outside [1s, %v]", cfg.ttl, maxCacheTTL)
	}
	if user != "" {
		if _, err := pkg.Key(op, userKey, m.opt.ns, user); err != nil {
			return nil, Cached{}, err
		}
		if !scopable(tag, user) {
			return nil, Cached{}, pkg.Invalidf(op, "user ID of %d bytes: too long for a cache scope (%q and the ID make one key segment)", len(user), tag)
		}
	}
	ref, err := s.Ref(args...)
	if err != nil {
		return nil, Cached{}, pkg.Invalid(op, err)
	}
	load = checked(op, load, check)
	if cfg.bypass {
		v, err := load(ctx)
		if err != nil {
			return nil, Cached{}, err
		}
		return v, Cached{Status: cache.Loaded}, nil
	}
	fo := []cache.FetchOption{cache.WithTTL(cfg.ttl)}
	if user != "" {
		fo = append(fo, cache.WithTags(tag+user))
	}
	if cfg.refresh {
		fo = append(fo, cache.WithRevalidate())
	}
	res, err := s.Fetch(ctx, ref, load, fo...)
	if err != nil {
		return nil, Cached{}, pkg.Fail(op, ref.Key(), nil, err)
	}
	if err := check(res.Value); err != nil {
		_ = s.Delete(ctx, ref)
		return nil, Cached{}, pkg.Fail(op, ref.Key(), nil, keys.Corrupt(ref.Key(), err))
	}
	return res.Value, Cached{Status: res.Status, Collapsed: res.Collapsed, Key: ref.Key()}, nil
}
