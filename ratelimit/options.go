package ratelimit

import (
	"context"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Option configures a Limiter. Options only record; New checks them.
type Option func(*options)

type options struct {
	ns         keys.Namespace
	endpoint   string
	hasEnd     bool
	rateLimit  bool // sliding log at rate_limit:{id}
	noWindow   bool // sliding log without a window segment
	runtimeCfg bool
	noBlocks   bool
	pipelines  int
	shadow     bool
	hook       func(ctx context.Context, id string, cost int, res Result, err error)
	auto       autoBlock
	hasAuto    bool
	denyHold   time.Duration
	denySet    bool
	degraded   bool
	onDegraded func(degraded bool)
}

// autoBlock is WithAutoBlock's numbers.
type autoBlock struct {
	refusals      int
	within, block time.Duration
}

// WithNamespace puts every key under ns (prefix, hash-tag mode).
//
// Default: the zero Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithEndpoint scopes the limiter's state to an endpoint:
// ratelimit:ip:{ip}:{endpoint}:{window} for FixedWindow,
// ratelimit:sliding:{id}:{endpoint}:{window} for Sliding, and the endpoint
// variants of the SlidingCounter and GCRA keys. The endpoint must be a
// usable key segment ("POST /login" is fine), else New fails with
// ErrInvalid.
//
// Default: none (one state per identifier).
func WithEndpoint(endpoint string) Option {
	return func(o *options) { o.endpoint, o.hasEnd = endpoint, true }
}

// WithRateLimitKey stores the log of Sliding rules at the key
// rate_limit:{id} instead of sliding_limit:{id}:{window}: an exact sliding
// log like the other, at a key without a window segment, so that only one
// limiter per identifier may use Sliding rules on it (see
// WithWindowlessLogKey). Not combinable with WithEndpoint or
// WithWindowlessLogKey.
//
// Default: off.
func WithRateLimitKey() Option { return func(o *options) { o.rateLimit = true } }

// WithWindowlessLogKey stores the log of Sliding rules at a key without a
// window segment: sliding_limit:{id}, or WithEndpoint
// ratelimit:sliding:{id}:{endpoint}. By default the key ends with the
// window (the policy's longest Sliding period), so that limiters with
// different windows keep separate logs. With this option only ONE limiter
// (one longest Sliding period) may use Sliding rules per identifier (and
// endpoint) in the namespace: a limiter with a shorter window would trim
// the other's log. It never shortens the log's TTL.
//
// Default: off (the key ends with the window).
func WithWindowlessLogKey() Option { return func(o *options) { o.noWindow = true } }

// WithRuntimeConfig makes every check read the identifier's config hash
// ratelimit:config:{id} (see SetConfig) in the same script: per_minute,
// per_hour and per_day replace the Rate of rules whose Period is one
// minute, hour or day; burst replaces the Burst of GCRA rules. Absent
// fields keep the policy's values. Identifiers are then API key IDs. The
// script holds config values to the limits New enforces (see SetConfig).
//
// Default: off.
func WithRuntimeConfig() Option { return func(o *options) { o.runtimeCfg = true } }

// WithoutBlocks makes the limiter ignore blocks: its checks do not read
// ratelimit:block:{id}, which saves one Redis command per check. Block on
// this limiter still writes the shared block key, which refuses the
// identifier in every other limiter of the namespace, but not in this one;
// Reset still lifts it. Use it for limiters that never need to honour a
// Block.
//
// Default: off (checks honour blocks).
func WithoutBlocks() Option { return func(o *options) { o.noBlocks = true } }

// WithPipelining sets how many round trips one Limiter keeps in flight at
// once for Allow, AllowN and Peek (auto-pipelining). A check made while
// none is in flight is sent at once, on its own. Checks made while some
// are in flight wait; they go out together, as one pipeline, when a round
// trip comes back, or at once in a new round trip (up to n) when as many
// wait as are in flight. Every check is still one atomic script with its
// own reply; many goroutines checking at once share the network reads and
// writes, which under load cost the client and Redis more than the scripts
// do (see bench/RESULTS.md). n = 0 turns auto-pipelining off (every
// check is its own round trip, sent at once); n outside the range fails
// New with ErrInvalid.
//
// On a Redis Cluster the n round trips are shared by the masters, each of
// which may always have one in flight, so a slow master holds up only the
// checks of identifiers it owns. When a connection breaks
// mid-pipeline, go-redis resends the whole pipeline; what a resent check
// does is in docs/ratelimit.md ("Retries").
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.pipelines = n } }

// WithShadow puts the limiter in shadow mode: every check runs as usual
// (a refused request consumes nothing, an admitted one is counted), but a
// request the policy or a block refuses is admitted all the same, with
// Result.Shadowed set to say it would have been refused. Use it to try a
// policy on live traffic (with WithDecisionHook to count what it would
// refuse) before enforcing it. Not combinable with WithAutoBlock, whose
// blocks would refuse the identifier in the other limiters of the
// namespace.
//
// Default: off.
func WithShadow() Option { return func(o *options) { o.shadow = true } }

// WithDecisionHook calls f after every decision of Allow, AllowN, Reserve
// and each attempt of Wait (not Peek): with the identifier, the cost, the
// Result (Local set when it was decided in-process, Shadowed in shadow
// mode) and the error, if any (then the Result is zero). f runs on the
// caller's goroutine, so it must be fast (count, don't log synchronously);
// it must not call the Limiter's checks.
//
// Default: none.
func WithDecisionHook(f func(ctx context.Context, id string, cost int, res Result, err error)) Option {
	return func(o *options) { o.hook = f }
}

// WithAutoBlock blocks an identifier for block (as Block does: in every
// limiter of the namespace that honours blocks) once it has been refused
// refusals times within a window of length within: the script that refuses
// a request counts the refusal in the key ratelimit:refusals:{id} (TTL
// within, from the first refusal of the window) and, at the refusals-th,
// sets the block and deletes the count, all in the same round trip; that
// request's Result reports the block. A block already longer stays. Reset
// clears the count. A resent refused check counts twice (see "Retries" in
// docs/ratelimit.md): stricter, never looser.
//
// refusals must be in 1..1000000, within in 1ms..366 days and block in
// 1ms..366 days, in whole milliseconds; not combinable with WithoutBlocks
// or WithShadow. New fails with ErrInvalid otherwise. With this option
// every check runs the general script (the lean one-rule scripts do not
// count refusals).
//
// Default: off.
func WithAutoBlock(refusals int, within, block time.Duration) Option {
	return func(o *options) { o.auto, o.hasAuto = autoBlock{refusals, within, block}, true }
}

// defaults are the options of a Limiter or Inspector given none.
func defaults() options { return options{pipelines: call.DefaultLanes} }

// check refuses options New cannot work with (call.Configure runs it
// after the client check), in this order: the namespace, the key-layout
// options that exclude each other, then each option's range.
func (o *options) check(op string) error {
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	switch {
	case o.hasEnd && o.rateLimit:
		return pkg.Invalidf(op, "WithRateLimitKey and WithEndpoint exclude each other")
	case o.rateLimit && o.noWindow:
		return pkg.Invalidf(op, "WithRateLimitKey and WithWindowlessLogKey exclude each other")
	}
	if err := pkg.CheckLanes(op, o.pipelines); err != nil {
		return err
	}
	return o.checkRanges(op)
}

// checkRanges refuses an option outside its range.
func (o *options) checkRanges(op string) error {
	if o.denySet && (o.denyHold < time.Millisecond || o.denyHold > maxBlock) {
		return pkg.Invalidf(op, "WithDenyCache(%v): want 1ms..%v", o.denyHold, maxBlock)
	}
	if !o.hasAuto {
		return nil
	}
	a := o.auto
	ms := func(d time.Duration) bool { return d >= time.Millisecond && d <= maxBlock && d%time.Millisecond == 0 }
	switch {
	case a.refusals < 1 || a.refusals > 1_000_000:
		return pkg.Invalidf(op, "WithAutoBlock refusals %d outside 1..1000000", a.refusals)
	case !ms(a.within) || !ms(a.block):
		return pkg.Invalidf(op, "WithAutoBlock window %v and block %v: want whole milliseconds in 1ms..%v", a.within, a.block, maxBlock)
	case o.noBlocks:
		return pkg.Invalidf(op, "WithAutoBlock and WithoutBlocks exclude each other")
	case o.shadow:
		return pkg.Invalidf(op, "WithAutoBlock and WithShadow exclude each other")
	}
	return nil
}

// WithDenyCache keeps refusals in process: once Redis refuses id a request
// of some cost, with a RetryAfter, the limiter refuses requests of id of at
// least that cost without a Redis call until RetryAfter has passed (but
// for at most maxHold), with Result.Local set. Under a flood from one
// identifier Redis then sees about one check per RetryAfter (per
// instance) instead of every request.
//
// The cache only refuses, and only what Redis refused: it never admits.
// It never refuses past the time Redis would admit: the wait is counted
// from when the refused check was sent, and a Reset, Block or Refund from
// any instance of the namespace announces the identifier on the channel
// ratelimit:events, which every limiter WithDenyCache subscribes to (from
// its first refusal; nothing is cached until the subscription is
// confirmed) and on which it drops the identifier at once. The window is
// pub/sub delivery: from the moment the Reset's script runs until the
// message reaches this process (well under a millisecond on one host),
// this instance may still refuse. Redis pub/sub is at most once: a message
// lost while the subscription's connection is re-established leaves the
// entry until its RetryAfter or maxHold, whichever is first, which is what
// maxHold bounds. Unblock, SetConfig and DeleteConfig announce the same
// way; capacity raised by other means (a DEL by hand) is seen when the
// entry ends. Smaller requests than the refused one
// still go to Redis. At most 65 536 identifiers are cached; Close ends the
// subscription. maxHold must be in 1ms..366 days, else New fails with
// ErrInvalid.
//
// Default: off. Range: 1ms to 366 days.
func WithDenyCache(maxHold time.Duration) Option {
	return func(o *options) { o.denyHold, o.denySet = maxHold, true }
}

// WithDegradedMode keeps the limiter deciding when Redis cannot answer,
// instead of returning errors: a check that fails with a network error, a
// timeout or a cluster error (while its context is live) switches the
// limiter to degraded mode, and it then decides in process, with
// Result.Local set, until Redis answers again. The local limit of each
// rule is its Rate divided by the number of live instances (a token bucket
// of Rate/n per Period with a burst of capacity/n, at least 1), so that
// the instances together admit about what the policy allows; they divide
// it evenly, whatever their share of the traffic. Local limits start full
// and are not shared, so an outage can admit up to one local burst per
// instance more than Redis would have; they are kept across switches
// (refilling at the local rate), so an outage that flaps does not grant a
// fresh burst at each switch.
//
// Instances announce themselves: each Limiter with this option runs a
// heartbeat, one script a second, that adds its random ID to the sorted
// set ratelimit:instances scored by server time, drops instances unseen
// for 3 s and counts the rest; the count is kept in process, so checks
// never read it. While degraded, the heartbeat probes Redis every 200 ms;
// its first success switches back. onChange (may be nil) is called with
// true on each switch to degraded mode and false on each return, in order,
// from the goroutine that saw the change; it must not block. Close stops
// the heartbeat and removes the instance. Refund, Penalize, Block, Reset,
// Peek and the config calls still need Redis and return its errors.
//
// Default: off.
func WithDegradedMode(onChange func(degraded bool)) Option {
	return func(o *options) { o.degraded, o.onDegraded = true, onChange }
}
