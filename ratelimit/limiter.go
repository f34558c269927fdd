package ratelimit

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Limiter enforces a Policy per identifier. It is safe for concurrent use.
//
// Every check is one round trip: one Lua script that reads the block key,
// the optional config hash, every rule's state and (unless every rule is a
// FixedWindow, whose clock is its counter's TTL) the server's TIME, and
// consumes only if every rule admits the request. With one rule and no
// runtime config, Allow and AllowN run a lean script for the algorithm
// (same results, fewer Redis commands). All keys of one identifier share
// its hash tag, so this is atomic on a Redis Cluster too. Every key
// written carries a TTL (see the package key table).
type Limiter struct {
	run        *call.Runner
	policy     Policy
	opt        options
	specs      []keySpec
	cfgIdx     int        // KEYS index of the config hash, 0 if none
	policyQ    string     // the policy as allow.lua and adjust.lua read it (see policyJSON)
	allowOp    *call.Op   // allow.lua
	peekOp     *call.Op   // the same script, as "peek"
	atMostOp   *call.Op   // the same script, as "allow at most"
	adjustOp   *call.Op   // adjust.lua (Refund, Penalize, Reservation.Cancel)
	channel    string     // the events channel in the namespace
	deny       *denyCache // WithDenyCache, else nil
	degr       *degraded  // WithDegradedMode, else nil
	singleOp   *call.Op   // lean script for Allow of a one-rule policy without config, else nil
	singleArgs []any      // the lean script's ARGV after the cost and nonce (see singleArgs)
	singleOne  []any      // its whole ARGV for a unit cost without a nonce
	maxCost    int        // largest cost any config could admit: above it, a refusal
	logWin     time.Duration
	hasLog     bool
	noncePx    string
	ctr        atomic.Uint64
}

// keySpec is one state key of a limiter, built per identifier.
type keySpec struct {
	tmpl   *keys.Template
	window string // "" for sliding logs without a window segment
}

// maxSlidingRate bounds the log of a Sliding rule: one sorted-set member per
// admitted request is kept for a whole period.
const maxSlidingRate = 100_000

// New returns a Limiter enforcing policy. It validates the client, the
// policy and the options, declares the policy's scripts, and writes
// nothing. It fails with ErrInvalid on a nil client or a go-redis client
// without ContextTimeoutEnabled (which would ignore every call's
// deadline), a policy that cannot work (see Limit and Policy), an unusable
// endpoint or namespace, WithRateLimitKey combined with WithEndpoint or
// WithWindowlessLogKey, or WithPipelining outside 0..1024.
func New(client redis.UniversalClient, policy Policy, opts ...Option) (*Limiter, error) {
	const op = "new"
	o, err := call.Configure(pkg, op, client, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if err := policy.validate(op); err != nil {
		return nil, err
	}
	ch, err := eventsChannel.Key(o.ns)
	if err != nil {
		return nil, pkg.Invalid(op, err)
	}
	l := &Limiter{policy: append(Policy(nil), policy...), opt: o, maxCost: maxRate, channel: ch}
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

	if o.runtimeCfg {
		l.cfgIdx = 2 // KEYS[1] is the block key
	}
	// The state keys follow in the rules' order, every Sliding rule
	// sharing the first one's log (allow.lua's header).
	for _, r := range policy {
		if r.Algorithm != Sliding || !l.hasLog {
			l.specs = append(l.specs, l.spec(r))
			l.hasLog = l.hasLog || r.Algorithm == Sliding
		}
		field := configField(r.Limit.Period) + 1
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
	}
	l.policyQ = policyJSON(o, policy)
	// Build the keys once with a sample identifier: an unusable endpoint
	// fails here rather than on the first request.
	if _, err := l.keys(op, "x"); err != nil {
		return nil, err
	}
	l.checkOps()
	l.run = call.NewRunner(client, o.pipelines)
	if o.denyHold > 0 {
		l.deny = &denyCache{l: l, m: map[string]denial{}}
	}
	if o.degraded {
		if l.degr, err = newDegraded(l, o.onDegraded); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// configField is the index in configFields of the field that overrides
// the Rate of a rule with period p, or -1.
func configField(p time.Duration) int {
	switch p {
	case time.Minute:
		return 0
	case time.Hour:
		return 1
	case 24 * time.Hour:
		return 2
	}
	return -1
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
		case end && l.opt.noWindow:
			return keySpec{slidingEndpointKey, ""}
		case end:
			return keySpec{slidingEndpointWindowKey, lw}
		case l.opt.noWindow:
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
// An unusable id is ErrInvalid (and keys.ErrInvalid) for op.
func (l *Limiter) keys(op, id string) ([]string, error) {
	ks := make([]string, 0, 2+len(l.specs))
	k, err := pkg.Key(op, blockKey, l.opt.ns, id)
	if err != nil {
		return nil, err
	}
	ks = append(ks, k)
	if l.cfgIdx > 0 {
		if k, err = pkg.Key(op, configKey, l.opt.ns, id); err != nil {
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
		if k, err = pkg.Key(op, s.tmpl, l.opt.ns, a...); err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	if l.opt.hasAuto {
		if k, err = pkg.Key(op, refusalsKey, l.opt.ns, id); err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// nonce returns a fresh request nonce: the limiter's random prefix and a
// counter. It names the request's sliding-log members, so a resend of the
// same call is recognised.
func (l *Limiter) nonce() string {
	var b [32]byte
	n := copy(b[:], l.noncePx)
	return string(strconv.AppendUint(b[:n], l.ctr.Add(1), 36))
}
