package aimemory

import (
	"time"

	"github.com/redschema/redschema/cache"
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
}

func defaults() options {
	return options{
		maxMessages: DefaultMaxMessages, convTTL: DefaultConversationTTL, userTTL: DefaultUserTTL,
		maxBytes: DefaultMaxMessageBytes, counter: ApproxCounter(), zone: time.UTC,
		maxTopics: DefaultMaxTopics, ragTTL: DefaultRAGTTL, respTTL: DefaultResponseTTL, source: "aimemory",
	}
}

// WithNamespace puts every key (and the streaming channel) under ns.
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithMaxMessages sets a conversation's cap (default DefaultMaxMessages,
// within [2, MaxMaxMessages]); the append that goes past it evicts the
// oldest messages (never a pinned system prompt) in the same script.
func WithMaxMessages(n int) Option { return func(o *options) { o.maxMessages = n } }

// WithConversationTTL sets how long a conversation lives after its last
// append (default DefaultConversationTTL, within [1s,
// MaxConversationTTL]). Reads do not extend it.
func WithConversationTTL(d time.Duration) Option { return func(o *options) { o.convTTL = d } }

// WithUserTTL sets how long a user's context lives after its last write
// (default DefaultUserTTL, within [1m, MaxUserTTL]); the key lives at least
// until the end of the day it accounts, so a daily budget is never reset
// by an expiry.
func WithUserTTL(d time.Duration) Option { return func(o *options) { o.userTTL = d } }

// WithMaxMessageBytes sets the largest encoded message Append takes
// (default DefaultMaxMessageBytes, within [256, MaxMessageBytes]).
func WithMaxMessageBytes(n int) Option { return func(o *options) { o.maxBytes = n } }

// WithCounter sets how messages whose Tokens is zero, summaries and
// streamed messages are counted (default ApproxCounter). The sub-module
// github.com/redschema/redschema/aimemory/tiktoken has exact counters.
func WithCounter(c Counter) Option { return func(o *options) { o.counter = c } }

// WithTimeZone sets the zone whose midnight starts a new day of token
// accounting (default UTC). Days are decided by the Redis server's clock.
func WithTimeZone(loc *time.Location) Option { return func(o *options) { o.zone = loc } }

// WithDailyBudget refuses, atomically, an Append that would take a user's
// tokens of the day past n (ErrBudgetExceeded); 0, the default, means no
// budget. Within [0, MaxDailyBudget]. Append's Budget option overrides it
// per call.
func WithDailyBudget(n int64) Option { return func(o *options) { o.budget = n } }

// WithMaxTopics sets how many recent topics a user's context keeps
// (default DefaultMaxTopics, within [1, MaxTopics]).
func WithMaxTopics(n int) Option { return func(o *options) { o.maxTopics = n } }

// WithSummarizer keeps the messages the cap evicts (at most MaxPending)
// and has s fold them into the conversation's summary, which Window
// returns; Append calls it when it evicted messages (see Summarizer).
func WithSummarizer(s Summarizer) Option { return func(o *options) { o.summarizer = s } }

// WithRAGTTL sets the default freshness of cached RAG results (default
// DefaultRAGTTL, within [1s, MaxCacheTTL]).
func WithRAGTTL(d time.Duration) Option { return func(o *options) { o.ragTTL = d } }

// WithResponseTTL sets the default freshness of cached model responses
// (default DefaultResponseTTL, within [1s, MaxCacheTTL]).
func WithResponseTTL(d time.Duration) Option { return func(o *options) { o.respTTL = d } }

// WithCacheOptions passes options to the two cache.Stores behind the RAG
// and response caches (a lease, a local tier, an error hook, ...); the
// Memory's namespace always applies.
func WithCacheOptions(opts ...cache.Option) Option {
	return func(o *options) { o.cacheOpts = append(o.cacheOpts, opts...) }
}

// WithBus publishes streamed chunks through b (default: a Bus of the
// Memory's own, in its namespace, with source WithSource).
func WithBus(b *pubsub.Bus) Option { return func(o *options) { o.bus = b } }

// WithSource sets the envelope's "source" of the chunks a Memory's own Bus
// publishes (default "aimemory").
func WithSource(name string) Option { return func(o *options) { o.source = name } }

// check validates the options for op.
func (o *options) check(op string) error {
	switch {
	case o.maxMessages < 2 || o.maxMessages > MaxMaxMessages:
		return pkg.Invalidf(op, "max messages %d outside [2, %d]", o.maxMessages, MaxMaxMessages)
	case o.convTTL < time.Second || o.convTTL > MaxConversationTTL:
		return pkg.Invalidf(op, "conversation TTL %v outside [1s, %v]", o.convTTL, MaxConversationTTL)
	case o.userTTL < time.Minute || o.userTTL > MaxUserTTL:
		return pkg.Invalidf(op, "user TTL %v outside [1m, %v]", o.userTTL, MaxUserTTL)
	case o.maxBytes < 256 || o.maxBytes > MaxMessageBytes:
		return pkg.Invalidf(op, "max message bytes %d outside [256, %d]", o.maxBytes, MaxMessageBytes)
	case o.counter == nil:
		return pkg.Invalidf(op, "nil counter")
	case o.zone == nil:
		return pkg.Invalidf(op, "nil time zone")
	case o.budget < 0 || o.budget > MaxDailyBudget:
		return pkg.Invalidf(op, "daily budget %d outside [0, %d]", o.budget, MaxDailyBudget)
	case o.maxTopics < 1 || o.maxTopics > MaxTopics:
		return pkg.Invalidf(op, "max topics %d outside [1, %d]", o.maxTopics, MaxTopics)
	case o.ragTTL < time.Second || o.ragTTL > MaxCacheTTL:
		return pkg.Invalidf(op, "RAG TTL %v outside [1s, %v]", o.ragTTL, MaxCacheTTL)
	case o.respTTL < time.Second || o.respTTL > MaxCacheTTL:
		return pkg.Invalidf(op, "response TTL %v outside [1s, %v]", o.respTTL, MaxCacheTTL)
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
