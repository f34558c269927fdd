package ratelimit

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/autopipe"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidLimit reports a policy, limit, option or config value that
	// cannot work: a zero or negative rate or period, a burst on an
	// algorithm without one, two rules sharing a key, an empty endpoint.
	ErrInvalidLimit = errors.New("ratelimit: invalid limit")
	// ErrInvalidCost reports a cost below 1 or above the capacity of a rule
	// (Rate, or Burst for GCRA; with runtime config, above the largest
	// capacity a config could give it), which no wait could ever admit.
	// Nothing is written.
	ErrInvalidCost = errors.New("ratelimit: invalid cost")
	// ErrInvalidDuration reports a Block duration below one millisecond or
	// above MaxBlock.
	ErrInvalidDuration = errors.New("ratelimit: invalid duration")
	// ErrNoRuntimeConfig reports SetConfig or Config on a Limiter built
	// without WithRuntimeConfig, whose checks would never read the config.
	ErrNoRuntimeConfig = errors.New("ratelimit: limiter has no runtime config")
)

// MaxBlock is the longest Block: one year (366 days), like the longest
// Period.
const MaxBlock = 366 * 24 * time.Hour

//go:embed block.lua
var blockSrc string

var blockScript = script.New(blockSrc)

// maxSlidingRate bounds the log of a Sliding rule: one sorted-set member per
// admitted request is kept for a whole period.
const maxSlidingRate = 100_000

//go:embed allow.lua
var allowSrc string

// The single-rule scripts: single.lua is the shared prelude (block check,
// contract), the others one algorithm each.
var (
	//go:embed single.lua
	singleSrc string
	//go:embed fixed.lua
	fixedSrc string
	//go:embed sliding.lua
	slidingSrc string
	//go:embed swc.lua
	swcSrc string
	//go:embed gcra.lua
	gcraSrc string
)

// limitMarker is where a single-rule limiter's numbers are compiled into
// single.lua.
const limitMarker = "--[[limit]]"

// singleScript returns the lean script of a one-rule policy. A sliding log
// at a seed key (no window segment) may be shared with limiters of other
// windows, so its TTL is only ever lengthened (PTTL first); a log whose key
// names its window always gets the window as its TTL.
func singleScript(r Rule, o options) *script.Script {
	body := map[Algorithm]string{FixedWindow: fixedSrc, Sliding: slidingSrc, SlidingCounter: swcSrc, GCRA: gcraSrc}[r.Algorithm]
	nums := strconv.Itoa(r.Limit.Rate) + ", " + strconv.FormatInt(int64(r.Limit.Period/time.Millisecond), 10) + ", " + strconv.Itoa(r.capacity())
	return script.New(blockFlag(o.noBlocks), sharedFlag(o), strings.Replace(singleSrc, limitMarker, nums, 1), body)
}

// sharedFlag is the second line of every script: whether the sliding log's
// key is a seed key without a window segment.
func sharedFlag(o options) string {
	return "local SHARED_KEY = " + strconv.FormatBool(o.seedLog || o.rateLimit)
}

// blockFlag is the first line of every script: whether it checks the
// block key KEYS[1] (allow.lua is always passed it; the single-rule
// scripts are not, when false).
func blockFlag(noBlocks bool) string {
	if noBlocks {
		return "local CHECK_BLOCK = false"
	}
	return "local CHECK_BLOCK = true"
}

// costOne is the argument list of a unit-cost call to a single-rule script
// without a nonce. It is shared read-only: go-redis copies arguments into
// each command.
var costOne = []any{1}

// rulesMarker is where a limiter's policy is compiled into allow.lua.
const rulesMarker = "--[[rules]]"

// Result is the outcome of Allow, AllowN or Peek.
//
// When a Policy has several rules, Limit, Remaining and ResetAfter describe
// the binding rule (the one with the fewest requests remaining; Rule is its
// index), and RetryAfter is the longest wait among the rules that refused.
type Result struct {
	// Allowed reports whether the request was admitted (and counted).
	Allowed bool
	// Limit is the binding rule's capacity: its Rate, or Burst for GCRA,
	// after any runtime config override.
	Limit int
	// Remaining is how many more unit-cost requests the binding rule would
	// admit right now.
	Remaining int
	// RetryAfter is zero when allowed; otherwise the time until the same
	// request would be admitted if nothing else happens meanwhile.
	RetryAfter time.Duration
	// ResetAfter is the time until the binding rule is back to its full
	// capacity if nothing else happens meanwhile (zero if it already is).
	ResetAfter time.Duration
	// Rule is the index in the Policy of the binding rule.
	Rule int
}

// Option configures a Limiter.
type Option func(*options)

type options struct {
	ns         keys.Namespace
	endpoint   string
	hasEnd     bool
	rateLimit  bool
	seedLog    bool
	runtimeCfg bool
	noBlocks   bool
	pipelines  int
	pipeSet    bool
}

// WithNamespace puts every key under ns (prefix, hash-tag mode).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithEndpoint scopes the limiter's counters to an endpoint, giving seed
// 001's per-endpoint keys: ratelimit:ip:{ip}:{endpoint}:{window} for
// FixedWindow, ratelimit:sliding:{id}:{endpoint} for Sliding, and the
// endpoint variants of the SlidingCounter and GCRA keys. The endpoint
// must be a non-empty key segment ("POST /login" is fine).
func WithEndpoint(endpoint string) Option {
	return func(o *options) { o.endpoint, o.hasEnd = endpoint, true }
}

// WithRateLimitKey stores the log of Sliding rules at seed 000's exact key
// rate_limit:{id} instead of sliding_limit:{id}:{window}. Seed 000 calls
// that key a fixed window, but it holds a log of timestamps; here it is an
// exact sliding log like the other. The key has no window: as with
// WithSeedSlidingKey, only one limiter per identifier may use it. Not
// combinable with WithEndpoint.
func WithRateLimitKey() Option { return func(o *options) { o.rateLimit = true } }

// WithSeedSlidingKey stores the log of Sliding rules at the seeds' exact
// keys, which have no window segment: sliding_limit:{id} (seed 000) or,
// WithEndpoint, ratelimit:sliding:{id}:{endpoint} (seed 001). By default
// the key ends with the window (the policy's longest Sliding period), so
// that limiters with different windows keep separate logs. With this
// option only ONE limiter (one longest Sliding period) may use Sliding
// rules per identifier (and endpoint) in the namespace: a limiter with a
// shorter window would trim the other's log. Never shortens a TTL.
func WithSeedSlidingKey() Option { return func(o *options) { o.seedLog = true } }

// WithRuntimeConfig makes every check read the identifier's config hash
// ratelimit:config:{id} (see SetConfig) in the same script: per_minute,
// per_hour and per_day replace the Rate of rules whose Period is one
// minute, hour or day; burst replaces the Burst of GCRA rules. Absent
// fields keep the policy's values. Identifiers are then API key IDs. The
// script holds config values to the limits New enforces (see SetConfig).
func WithRuntimeConfig() Option { return func(o *options) { o.runtimeCfg = true } }

// WithoutBlocks makes the limiter ignore blocks: its checks do not read
// ratelimit:block:{id}, which saves one Redis command per check (about a
// fifth of a FixedWindow check's server time; see bench/results). Block on
// this limiter still writes the shared block key, which refuses the
// identifier in every other limiter of the namespace, but not in this one;
// Reset still lifts it. Use it for limiters that never need to honour a
// Block.
func WithoutBlocks() Option { return func(o *options) { o.noBlocks = true } }

// DefaultPipelines is the number of round trips a Limiter keeps in flight
// before further checks wait and share a pipeline (see WithPipelining).
const DefaultPipelines = 4

// WithPipelining sets how many round trips one Limiter keeps in flight at
// once for Allow, AllowN and Peek (auto-pipelining). A check made while
// none is in flight is sent at once, on its own. Checks made while some
// are in flight wait; they go out together, as one pipeline, when a round
// trip comes back, or at once in a new round trip (up to n) when as many
// wait as are in flight. Every check is still one atomic script with its
// own reply; many goroutines checking at once share the network reads and
// writes, which under load cost the client and Redis more than the scripts
// do (see bench/RESULTS.md). The default is DefaultPipelines; n = 0 turns
// auto-pipelining off: every check is its own round trip, sent at once
// (go-redis hooks then see one EVALSHA per check instead of pipelines). A
// negative n is ErrInvalidLimit.
//
// On a Redis Cluster the n round trips are per master, so a slow master
// holds up only the checks of identifiers it owns. When a connection breaks
// mid-pipeline, go-redis resends the whole pipeline (up to the client's
// MaxRetries), so checks that had already run are counted again: a fault
// can make the limiter stricter, never admit more. A client with
// MaxRetries: -1 rules that out.
func WithPipelining(n int) Option { return func(o *options) { o.pipelines, o.pipeSet = n, true } }

// keySpec is one state key of a limiter, built per identifier.
type keySpec struct {
	tmpl   *keys.Template
	window string // "" for sliding logs
}

// Limiter enforces a Policy per identifier. It is safe for concurrent use.
//
// Every check is one round trip: one Lua script that reads the block key,
// the optional config hash, every rule's state and (unless every rule is a
// FixedWindow, whose clock is its counter's TTL) the server's TIME, and
// consumes only if every rule admits the request. With one rule and no
// runtime config, Allow and AllowN run a lean script for the algorithm
// (same results, fewer Redis commands; see single.lua). All keys of one identifier
// share its hash tag, so this is atomic on a Redis Cluster too. Every key
// written carries a TTL (see the package key table).
type Limiter struct {
	client  redis.UniversalClient
	ns      keys.Namespace
	policy  Policy
	opt     options
	specs   []keySpec
	cfgIdx  int            // KEYS index of the config hash, 0 if none
	script  *script.Script // allow.lua with this policy compiled in
	single  *script.Script // lean script for Allow of a one-rule policy without config, else nil
	minCap  int            // smallest static capacity, for cost checks without config
	maxCost int            // largest cost any config could admit
	logWin  time.Duration  // longest Sliding period: the log's window
	hasLog  bool
	noncePx string
	ctr     atomic.Uint64
	pipe    *autopipe.Group // nil without auto-pipelining
}

// New returns a Limiter enforcing policy. It validates the policy and the
// options and writes nothing.
func New(client redis.UniversalClient, policy Policy, opts ...Option) (*Limiter, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidLimit)
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	if err := o.ns.Validate(); err != nil {
		return nil, fmt.Errorf("ratelimit: %w", err)
	}
	if err := policy.validate(); err != nil {
		return nil, err
	}
	if o.hasEnd && o.rateLimit {
		return nil, fmt.Errorf("%w: WithRateLimitKey and WithEndpoint exclude each other", ErrInvalidLimit)
	}
	if o.rateLimit && o.seedLog {
		return nil, fmt.Errorf("%w: WithRateLimitKey and WithSeedSlidingKey exclude each other", ErrInvalidLimit)
	}
	if !o.pipeSet {
		o.pipelines = DefaultPipelines
	}
	if o.pipelines < 0 {
		return nil, fmt.Errorf("%w: WithPipelining(%d): want 0 or more", ErrInvalidLimit, o.pipelines)
	}
	l := &Limiter{client: client, ns: o.ns, policy: append(Policy(nil), policy...), opt: o, minCap: maxRate, maxCost: maxRate}
	for _, r := range policy {
		if r.Algorithm == Sliding {
			l.logWin = max(l.logWin, r.Limit.Period)
		}
	}
	// 72 random bits per Limiter, then a counter: sliding-log members are
	// unique across processes without carrying the timestamp (the score
	// has it), which keeps each log entry short.
	var rnd [9]byte
	_, _ = rand.Read(rnd[:])
	l.noncePx = base64.RawURLEncoding.EncodeToString(rnd[:])

	next := 2 // KEYS[1] is the block key
	if o.runtimeCfg {
		l.cfgIdx = next
		next++
	}
	logIdx := 0
	rules := []string{strconv.Itoa(l.cfgIdx), strconv.Itoa(len(policy))}
	for _, r := range policy {
		if r.Algorithm == Sliding && r.Limit.Rate > maxSlidingRate {
			return nil, fmt.Errorf("%w: a Sliding rule keeps one entry per request; rate %d is above %d, use SlidingCounter", ErrInvalidLimit, r.Limit.Rate, maxSlidingRate)
		}
		idx := 0
		if r.Algorithm == Sliding && logIdx > 0 {
			idx = logIdx
		} else {
			idx = next
			next++
			l.specs = append(l.specs, l.spec(r))
			if r.Algorithm == Sliding {
				logIdx, l.hasLog = idx, true
			}
		}
		l.minCap = min(l.minCap, r.capacity())
		field := 0
		switch r.Limit.Period {
		case time.Minute:
			field = 1
		case time.Hour:
			field = 2
		case 24 * time.Hour:
			field = 3
		}
		// The largest capacity a runtime config could give this rule
		// bounds the cost sent to the script.
		switch {
		case !o.runtimeCfg:
			l.maxCost = min(l.maxCost, r.capacity())
		case r.Algorithm == Sliding && field > 0:
			l.maxCost = min(l.maxCost, maxSlidingRate)
		case r.Algorithm != GCRA && field == 0:
			l.maxCost = min(l.maxCost, r.capacity())
		}
		rules = append(rules,
			strconv.Itoa(int(r.Algorithm)), strconv.Itoa(idx), strconv.Itoa(r.Limit.Rate),
			strconv.FormatInt(int64(r.Limit.Period/time.Millisecond), 10), strconv.Itoa(r.Limit.Burst),
			strconv.Itoa(field))
	}
	l.script = script.New(blockFlag(o.noBlocks), sharedFlag(o), strings.Replace(allowSrc, rulesMarker, strings.Join(rules, ", "), 1))
	if len(policy) == 1 && !o.runtimeCfg {
		l.single = singleScript(policy[0], o)
	}
	// Build the keys once with a sample identifier: an unusable endpoint
	// fails here rather than on the first request.
	if _, err := l.keys("x"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidLimit, err)
	}
	if o.pipelines > 0 {
		l.pipe = autopipe.New(client, o.pipelines)
	}
	return l, nil
}

// eval runs one check's script: through the auto-pipelining group, or on
// its own.
func (l *Limiter) eval(ctx context.Context, s *script.Script, ks []string, args ...any) (any, error) {
	if l.pipe != nil {
		return l.pipe.Run(ctx, s, ks, args...)
	}
	return s.Run(ctx, l.client, ks, args...).Result()
}

func (l *Limiter) spec(r Rule) keySpec {
	end := l.opt.hasEnd
	w := windowName(r.Limit.Period)
	switch r.Algorithm {
	case FixedWindow:
		if end {
			return keySpec{ipKey, w}
		}
		return keySpec{apiKey, w}
	case Sliding:
		lw := windowName(l.logWin)
		switch {
		case l.opt.rateLimit:
			return keySpec{rateLimitKey, ""}
		case end && l.opt.seedLog:
			return keySpec{slidingEndpointKey, ""}
		case end:
			return keySpec{slidingEndpointWindowKey, lw}
		case l.opt.seedLog:
			return keySpec{slidingLimitKey, ""}
		}
		return keySpec{slidingWindowKey, lw}
	case SlidingCounter:
		if end {
			return keySpec{swcEndpointKey, w}
		}
		return keySpec{swcKey, w}
	}
	if end {
		return keySpec{gcraEndpointKey, w}
	}
	return keySpec{gcraKey, w}
}

// Policy returns a copy of the limiter's policy.
func (l *Limiter) Policy() Policy { return append(Policy(nil), l.policy...) }

// keys builds KEYS for id: block key, config key (optional), state keys.
func (l *Limiter) keys(id string) ([]string, error) {
	ks := make([]string, 0, 2+len(l.specs))
	k, err := blockKey.Key(l.ns, id)
	if err != nil {
		return nil, err
	}
	ks = append(ks, k)
	if l.cfgIdx > 0 {
		if k, err = configKey.Key(l.ns, id); err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	var args [3]string
	for _, s := range l.specs {
		a := append(args[:0], id)
		if l.opt.hasEnd {
			a = append(a, l.opt.endpoint)
		}
		if s.window != "" {
			a = append(a, s.window)
		}
		if k, err = s.tmpl.Key(l.ns, a...); err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// Allow is AllowN with cost 1.
func (l *Limiter) Allow(ctx context.Context, id string) (Result, error) {
	return l.run(ctx, "allow", id, 1, "0")
}

// AllowN admits a request of the given cost for id if every rule of the
// policy has cost units available, and then consumes cost from every rule;
// otherwise it consumes nothing. A refusal is a Result with Allowed false
// and a nil error.
//
// While id is blocked (see Block) every request is refused with
// RetryAfter = ResetAfter = the block's remaining time, Limit the first
// rule's capacity, and nothing consumed.
//
// One round trip (one script, server time). Errors: ErrInvalidCost for a
// cost below 1 or above a rule's capacity (checked before anything is sent,
// or in the script against the runtime config, still writing nothing),
// keys.ErrInvalidKey for an unusable id (before anything is sent),
// ErrInvalidLimit when the stored runtime config sets a rate New would
// refuse for a rule (the error names the config key and field; nothing is
// written), keys.ErrCorrupt when a key holds a value this package does not
// write, in a format other than exactly the one it writes (the error names
// the key), and Redis or context errors, wrapped with %w. A block key
// without a TTL counts as a block of MaxBlock.
func (l *Limiter) AllowN(ctx context.Context, id string, cost int) (Result, error) {
	return l.run(ctx, "allow", id, cost, "0")
}

// Peek reports what Allow would decide for id now, without consuming or
// writing anything: Remaining is what is left, RetryAfter the wait for a
// unit-cost request. One round trip.
func (l *Limiter) Peek(ctx context.Context, id string) (Result, error) {
	return l.run(ctx, "peek", id, 1, "1")
}

func (l *Limiter) run(ctx context.Context, op, id string, cost int, mode string) (Result, error) {
	if cost < 1 || cost > l.maxCost {
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w: cost %d (capacity %d)", op, id, ErrInvalidCost, cost, l.maxCost)
	}
	ks, err := l.keys(id)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s: %w", op, err)
	}
	if l.single != nil && mode == "0" {
		return l.runSingle(ctx, op, id, ks, cost)
	}
	nonce := ""
	if l.hasLog && mode == "0" {
		nonce = l.nonce()
	}
	v, err := l.eval(ctx, l.script, ks, cost, mode, nonce)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id, err)
	}
	return l.result(op, id, ks, v)
}

// runSingle runs the lean script of a one-rule limiter (see single.lua).
func (l *Limiter) runSingle(ctx context.Context, op, id string, ks []string, cost int) (Result, error) {
	var args []any
	switch {
	case l.hasLog:
		args = []any{cost, l.nonce()}
	case cost == 1:
		args = costOne
	default:
		args = []any{cost}
	}
	if l.opt.noBlocks {
		ks = ks[1:] // one key fewer to send and to bind: measurably cheaper
	}
	v, err := l.eval(ctx, l.single, ks, args...)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id, err)
	}
	a, err := reply.Slice(v, 4)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id, err)
	}
	var n [4]int64
	for i, e := range a {
		if n[i], err = reply.Int64(e); err != nil {
			return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id, err)
		}
	}
	limit := l.policy[0].capacity()
	switch n[0] {
	case 0, 1:
		return Result{
			Allowed:    n[0] == 1,
			Limit:      limit,
			Remaining:  int(n[1]),
			RetryAfter: time.Duration(n[2]) * time.Microsecond,
			ResetAfter: time.Duration(n[3]) * time.Microsecond,
		}, nil
	case 3:
		d := time.Duration(n[2]) * time.Microsecond
		return Result{Limit: limit, RetryAfter: d, ResetAfter: d}, nil
	case -1:
		if n[1] < 1 || n[1] > int64(len(ks)) {
			return Result{}, fmt.Errorf("ratelimit: %s %q: %w: key %d", op, id, reply.ErrUnexpected, n[1])
		}
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id,
			keys.Corrupt(ks[n[1]-1], errors.New("not a value this package writes (wrong type, format or missing TTL)")))
	}
	return Result{}, fmt.Errorf("ratelimit: %s %q: %w: code %d", op, id, reply.ErrUnexpected, n[0])
}

func (l *Limiter) nonce() string {
	var b [32]byte
	n := copy(b[:], l.noncePx)
	return string(strconv.AppendUint(b[:n], l.ctr.Add(1), 36))
}

func (l *Limiter) result(op, id string, ks []string, v any) (Result, error) {
	a, err := reply.Slice(v, 7)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id, err)
	}
	var n [7]int64
	for i, e := range a {
		if n[i], err = reply.Int64(e); err != nil {
			return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id, err)
		}
	}
	status, idx := n[0], int(n[6])
	switch status {
	case 0:
		if idx < 1 || idx > len(l.policy) {
			return Result{}, fmt.Errorf("ratelimit: %s %q: %w: rule %d", op, id, reply.ErrUnexpected, idx)
		}
		return Result{
			Allowed:    n[1] == 1,
			Limit:      int(n[2]),
			Remaining:  int(n[3]),
			RetryAfter: time.Duration(n[4]) * time.Microsecond,
			ResetAfter: time.Duration(n[5]) * time.Microsecond,
			Rule:       idx - 1,
		}, nil
	case 1:
		if idx < 1 || idx > len(ks) {
			return Result{}, fmt.Errorf("ratelimit: %s %q: %w: key %d", op, id, reply.ErrUnexpected, idx)
		}
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w", op, id,
			keys.Corrupt(ks[idx-1], errors.New("not a value this package writes (wrong type, format or missing TTL)")))
	case 2:
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w: cost above the configured capacity %d of rule %d", op, id, ErrInvalidCost, n[2], idx-1)
	case 3:
		d := time.Duration(n[4]) * time.Microsecond
		return Result{Limit: l.policy[0].capacity(), RetryAfter: d, ResetAfter: d}, nil
	case 4:
		f := int(n[2])
		if idx < 1 || idx > len(ks) || f < 1 || f > len(configFields) {
			return Result{}, fmt.Errorf("ratelimit: %s %q: %w: config field %d", op, id, reply.ErrUnexpected, f)
		}
		return Result{}, fmt.Errorf("ratelimit: %s %q: %w: config %s field %s = %d is above what rule %d allows (see Limit and New)",
			op, id, ErrInvalidLimit, ks[idx-1], configFields[f-1], n[3], n[5]-1)
	}
	return Result{}, fmt.Errorf("ratelimit: %s %q: %w: status %d", op, id, reply.ErrUnexpected, status)
}

// Reset deletes everything the limiter stores for id: the state of every
// rule and any Block on id (which every limiter of the namespace shares).
// The runtime config is kept (see DeleteConfig). One round trip (one DEL;
// the keys share a slot).
func (l *Limiter) Reset(ctx context.Context, id string) error {
	ks, err := l.keys(id)
	if err != nil {
		return fmt.Errorf("ratelimit: reset: %w", err)
	}
	if l.cfgIdx > 0 {
		ks = append(ks[:1], ks[2:]...)
	}
	if err := l.client.Del(ctx, ks...).Err(); err != nil {
		return fmt.Errorf("ratelimit: reset %q: %w", id, err)
	}
	return nil
}

// Block refuses every request for id for d (rounded up to whole
// milliseconds, at most MaxBlock), whatever the counters say, in every
// limiter of the same namespace (except those created WithoutBlocks): the
// block is one key per identifier, ratelimit:block:{id}, with TTL d.
// Blocks only lengthen: if id is already blocked for longer than d, the
// longer block stays (a short automatic block never cuts an operator's ban
// short); Reset lifts any block. A block key without a TTL (not written by
// this package) counts as blocked for MaxBlock. Counters are untouched, and
// a blocked request consumes nothing. Results during the block have Allowed
// false and RetryAfter = ResetAfter = the block's remaining time.
//
// One round trip (a script: PTTL, then SET PX when the new block ends
// later). Errors: ErrInvalidDuration for d below 1ms or above MaxBlock and
// keys.ErrInvalidKey for an unusable id (nothing written); Redis and
// context errors wrapped with %w.
func (l *Limiter) Block(ctx context.Context, id string, d time.Duration) error {
	if d < time.Millisecond || d > MaxBlock {
		return fmt.Errorf("ratelimit: block %q: %w: %v is not between 1ms and %v", id, ErrInvalidDuration, d, MaxBlock)
	}
	k, err := blockKey.Key(l.ns, id)
	if err != nil {
		return fmt.Errorf("ratelimit: block: %w", err)
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if err := blockScript.Run(ctx, l.client, []string{k}, ms).Err(); err != nil {
		return fmt.Errorf("ratelimit: block %q: %w", id, err)
	}
	return nil
}
