package aimemory

import (
	"time"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/pubsub"
)

// Option configures a Memory. Options only record; New checks them.
type Option func(*options)

type options struct {
	ns          keys.Namespace
	maxMessages int
	convTTL     time.Duration
	userTTL     time.Duration
	maxBytes    int
	counter     Counter
	zone        *time.Location
	budget      int64
	maxTopics   int
	summarizer  Summarizer
	ragTTL      time.Duration
	respTTL     time.Duration
	cacheOpts   []cache.Option
	bus         *pubsub.Bus
	source      string
	lanes       int
}

func defaults() options {
	return options{
		maxMessages: defaultMessages, convTTL: defaultConversationTTL, userTTL: defaultUserTTL,
		maxBytes: defaultMessageBytes, counter: ApproxCounter(), zone: time.UTC,
		maxTopics: defaultTopics, ragTTL: defaultRAGTTL, respTTL: defaultResponseTTL, source: "aimemory",
		lanes: call.DefaultLanes,
	}
}

// WithNamespace puts every key (and the streaming channel) under ns.
//
// Default: the zero keys.Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithMaxMessages sets a conversation's cap; the append that goes past
// it evicts the oldest messages (never a pinned system prompt) in the
// same script.
//
// Default: 50. Range: 2 to 10000.
func WithMaxMessages(n int) Option { return func(o *options) { o.maxMessages = n } }

// WithConversationTTL sets how long a conversation lives after its last
// append. Reads do not extend it.
//
// Default: 1h. Range: 1s to 168h (7 days).
func WithConversationTTL(d time.Duration) Option { return func(o *options) { o.convTTL = d } }

// WithUserTTL sets how long a user's context lives after its last
// write; the key lives at least until the end of the day it accounts, so
// a daily budget is never reset by an expiry.
//
// Default: 24h. Range: 1m to 720h (30 days).
func WithUserTTL(d time.Duration) Option { return func(o *options) { o.userTTL = d } }

// WithMaxMessageBytes sets the largest encoded message Append takes, in
// bytes.
//
// Default: 65536 (64 KiB). Range: 256 to 4194304 (4 MiB).
func WithMaxMessageBytes(n int) Option { return func(o *options) { o.maxBytes = n } }

// WithCounter sets how messages whose Tokens is zero, summaries and
// streamed messages are counted (default ApproxCounter). The sub-module
// github.com/redschema/redschema/aimemory/tiktoken has exact counters.
//
// Default: ApproxCounter().
func WithCounter(c Counter) Option { return func(o *options) { o.counter = c } }

// WithTimeZone sets the zone whose midnight starts a new day of token
// accounting. Days are decided by the Redis server's clock.
//
// Default: time.UTC.
func WithTimeZone(loc *time.Location) Option { return func(o *options) { o.zone = loc } }

// WithDailyBudget refuses, atomically, an Append that would take a user's
// tokens of the day past n (ErrBudgetExceeded); 0 means no budget.
// Append's Budget option overrides it per call.
//
// Default: 0 (no budget). Range: 0 to 1099511627776 (2^40).
func WithDailyBudget(n int64) Option { return func(o *options) { o.budget = n } }

// WithMaxTopics sets how many recent topics a user's context keeps.
//
// Default: 10. Range: 1 to 100.
func WithMaxTopics(n int) Option { return func(o *options) { o.maxTopics = n } }

// WithSummarizer keeps the messages the cap evicts (at most 1000; beyond,
// the oldest are dropped and counted in Window.Lost) and has s fold them
// into the conversation's summary, which Window returns; Append calls it
// when it evicted messages (see Summarizer).
//
// Default: none (evicted messages are dropped).
func WithSummarizer(s Summarizer) Option { return func(o *options) { o.summarizer = s } }

// WithRAGTTL sets the default freshness of cached RAG results.
//
// Default: 30m. Range: 1s to 24h.
func WithRAGTTL(d time.Duration) Option { return func(o *options) { o.ragTTL = d } }

// WithResponseTTL sets the default freshness of cached model responses.
//
// Default: 5m. Range: 1s to 24h.
func WithResponseTTL(d time.Duration) Option { return func(o *options) { o.respTTL = d } }

// WithCacheOptions passes options to the two cache.Stores behind the RAG
// and response caches (a lease, a local tier, an error hook, ...); the
// Memory's namespace always applies.
//
// Default: none.
func WithCacheOptions(opts ...cache.Option) Option {
	return func(o *options) { o.cacheOpts = append(o.cacheOpts, opts...) }
}

// WithBus publishes streamed chunks through b.
//
// Default: a Bus of the Memory's own, in its namespace, with source
// WithSource.
func WithBus(b *pubsub.Bus) Option { return func(o *options) { o.bus = b } }

// WithSource sets the envelope's "source" of the chunks a Memory's own Bus
// publishes.
//
// Default: "aimemory".
func WithSource(name string) Option { return func(o *options) { o.source = name } }

// WithPipelining sets how many round trips one Memory keeps in flight at
// once (auto-pipelining). A call made while none is in flight is sent at
// once, on its own; calls made while some are in flight wait and go out
// together, as one pipeline, when a round trip comes back. Every call is
// still one atomic script with its own reply. n = 0 turns
// auto-pipelining off (every call its own round trip). When a connection
// breaks mid-pipeline, go-redis resends the whole pipeline: an Append
// then reports its first outcome (see "Idempotent under retry" in
// docs/aimemory.md).
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// check validates the options for op.
func (o *options) check(op string) error {
	switch {
	case o.maxMessages < 2 || o.maxMessages > maxMessages:
		return pkg.Invalidf(op, "max messages %d outside [2, %d]", o.maxMessages, maxMessages)
	case o.convTTL < time.Second || o.convTTL > maxConversationTTL:
		return pkg.Invalidf(op, "conversation TTL %v outside [1s, %v]", o.convTTL, maxConversationTTL)
	case o.userTTL < time.Minute || o.userTTL > maxUserTTL:
		return pkg.Invalidf(op, "user TTL %v outside [1m, %v]", o.userTTL, maxUserTTL)
	case o.maxBytes < 256 || o.maxBytes > maxMessageBytes:
		return pkg.Invalidf(op, "max message bytes %d outside [256, %d]", o.maxBytes, maxMessageBytes)
	case o.counter == nil:
		return pkg.Invalidf(op, "nil counter")
	case o.zone == nil:
		return pkg.Invalidf(op, "nil time zone")
	case o.budget < 0 || o.budget > maxDailyBudget:
		return pkg.Invalidf(op, "daily budget %d outside [0, %d]", o.budget, maxDailyBudget)
	case o.maxTopics < 1 || o.maxTopics > maxTopics:
		return pkg.Invalidf(op, "max topics %d outside [1, %d]", o.maxTopics, maxTopics)
	case o.ragTTL < time.Second || o.ragTTL > maxCacheTTL:
		return pkg.Invalidf(op, "RAG TTL %v outside [1s, %v]", o.ragTTL, maxCacheTTL)
	case o.respTTL < time.Second || o.respTTL > maxCacheTTL:
		return pkg.Invalidf(op, "response TTL %v outside [1s, %v]", o.respTTL, maxCacheTTL)
	}
	if err := pkg.CheckLanes(op, o.lanes); err != nil {
		return err
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
