package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/reply"
)

// Allow is AllowN with cost 1.
func (l *Limiter) Allow(ctx context.Context, id string) (Result, error) {
	res, _, _, err := l.decide(ctx, id, 1, false)
	return res, err
}

// AllowN admits a request of the given cost for id if every rule of the
// policy has cost units available, and then consumes cost from every rule;
// otherwise it consumes nothing. A refusal is a Result with Allowed false
// and a nil error. A cost above what a rule can ever admit (its Rate, or
// Burst for GCRA, after any runtime config override) is a refusal too,
// with RetryAfter = Never: no wait admits it.
//
// While id is blocked (see Block) every request is refused with
// RetryAfter = ResetAfter = the block's remaining time, Limit the first
// rule's capacity, and nothing consumed.
//
// One round trip (one script, server time). A call that go-redis resends
// after losing its reply is reported as first decided when the policy has
// a Sliding rule, and otherwise may count twice (never admitting more; see
// "Retries" in docs/ratelimit.md).
//
// Errors: ErrInvalid for a cost below 1 or an unusable id (also
// keys.ErrInvalid), before anything is sent; keys.ErrCorrupt naming
// the key when a key holds what this package does not write (another
// type, a number outside the exact format or range written, a config
// field above what New allows); Redis and context errors as they are.
// Every error names the operation and the key. A block key without a TTL
// counts as a block of 366 days.
func (l *Limiter) AllowN(ctx context.Context, id string, cost int) (Result, error) {
	res, _, _, err := l.decide(ctx, id, cost, false)
	return res, err
}

// AllowAtMost admits as many units as every rule of the policy has left
// for id, at most n, and consumes them: it returns how many it admitted
// (1..n, and Allowed true), or 0 with a refusal when no rule can spare a
// unit (RetryAfter is then the wait for one unit). Use it for work that
// can be done in part (a batch of messages, a bulk import): take what the
// limit allows now and queue the rest. n may be above every capacity; the
// grant never is. Remaining is what is left after the grant.
//
// Everything else is as AllowN: blocks refuse, the check is one round
// trip of the general script (never the lean one-rule scripts), a resend
// after a lost reply reports the first grant when the policy has a
// Sliding rule and may count twice otherwise, the deny cache and degraded
// mode decide for one unit, and the decision hook sees the units granted
// (n when it refused). In shadow mode (WithShadow) a call the policy
// grants fewer than n reports all n granted, Allowed and Shadowed; only
// what the policy granted is consumed. Errors: ErrInvalid for n below 1
// or an unusable id (nothing sent); the others as AllowN's.
func (l *Limiter) AllowAtMost(ctx context.Context, id string, n int) (int, Result, error) {
	res, granted, _, err := l.decide(ctx, id, n, true)
	return granted, res, err
}

// decide is a consuming check with the limiter's options applied: shadow
// mode and the decision hook; atMost makes it AllowAtMost's (cost is then
// the most to take). It returns the units granted and the nonce that names
// the request's sliding-log members ("" without a Sliding rule).
func (l *Limiter) decide(ctx context.Context, id string, cost int, atMost bool) (Result, int, string, error) {
	var (
		res     Result
		granted int
		nonce   string
		err     error
		local   bool
	)
	// the cost a refusal is cached (and degraded mode decides) for: what
	// AllowAtMost asks of each rule is one unit
	unit := cost
	if atMost {
		unit = 1
	}
	if l.deny != nil {
		res, local = l.deny.lookup(id, unit)
	}
	if !local && l.degr != nil && l.degr.on.Load() {
		if err = positive("allow", cost); err == nil {
			_, err = l.keys("allow", id)
		}
		if err == nil {
			res, granted = l.degr.allow(id, cost, atMost)
		}
		local = true
	}
	if !local {
		var sent time.Time
		var epoch uint64
		if l.deny != nil {
			sent, epoch = l.deny.begin()
		}
		op := l.allowOp
		if atMost {
			op = l.atMostOp
		}
		res, granted, nonce, err = l.check(ctx, op, id, cost)
		if l.degr != nil && outage(ctx, err) {
			l.degr.set(true)
			res, granted = l.degr.allow(id, cost, atMost)
			nonce, err = "", nil
		}
		if l.deny != nil && err == nil && !res.Allowed {
			l.deny.store(id, unit, sent, epoch, res)
		}
	}
	if err == nil && l.opt.shadow && granted < cost {
		res.Allowed, res.Shadowed = true, true
		if atMost {
			granted = cost
		}
	}
	if l.opt.hook != nil {
		hc := cost
		if atMost && granted > 0 {
			hc = granted
		}
		l.opt.hook(ctx, id, hc, res, err)
	}
	return res, granted, nonce, err
}

// Peek reports what Allow would decide for id now, without consuming or
// writing anything: Remaining is what is left, RetryAfter the wait for a
// unit-cost request. One round trip; errors as AllowN's.
func (l *Limiter) Peek(ctx context.Context, id string) (Result, error) {
	res, _, _, err := l.check(ctx, l.peekOp, id, 1)
	return res, err
}

// check runs one check script; it returns the units granted and the
// request's nonce (see decide).
func (l *Limiter) check(ctx context.Context, op *call.Op, id string, cost int) (Result, int, string, error) {
	if err := positive(op.Name(), cost); err != nil {
		return Result{}, 0, "", err
	}
	ks, err := l.keys(op.Name(), id)
	if err != nil {
		return Result{}, 0, "", err
	}
	peek := op == l.peekOp
	mode, nonce := "0", ""
	switch {
	case peek:
		mode = "1"
	case op == l.atMostOp:
		mode = "2"
	}
	if l.hasLog && !peek {
		nonce = l.nonce()
	}
	// Above every capacity, cost is refused whatever it is: one more than
	// the largest keeps the script's numbers exact.
	cost = min(cost, maxRate+1)
	if l.singleOp != nil && op == l.allowOp && cost <= l.maxCost {
		res, err := l.checkSingle(ctx, ks, cost, nonce)
		if err != nil || !res.Allowed {
			return res, 0, nonce, err
		}
		return res, cost, nonce, nil
	}
	rep, err := l.run.Run(ctx, op, ks, cost, mode, nonce, l.policyQ)
	if err != nil {
		return Result{}, 0, "", err
	}
	res, err := l.result(op, ks, &rep, false)
	if err != nil || !res.Allowed {
		return res, 0, nonce, err
	}
	granted := int(rep.Int(5))
	if err := rep.Err(); err != nil {
		return Result{}, 0, "", err
	}
	if granted < 1 || granted > cost {
		return Result{}, 0, "", pkg.Fail(op.Name(), ks[0], nil, fmt.Errorf("%w: reply grants %d of %d", reply.ErrUnexpected, granted, cost))
	}
	return res, granted, nonce, nil
}

// positive reports a cost below 1 as ErrInvalid.
func positive(op string, cost int) error {
	if cost < 1 {
		return pkg.Invalidf(op, "cost %d below 1", cost)
	}
	return nil
}

// checkCost reports a cost outside 1..maxCost as ErrInvalid: what Refund
// and Penalize accept.
func (l *Limiter) checkCost(op string, cost int) error {
	if cost < 1 || cost > l.maxCost {
		return pkg.Invalidf(op, "cost %d outside 1..%d", cost, l.maxCost)
	}
	return nil
}

// checkSingle runs the lean script of a one-rule limiter (see fixed.lua).
func (l *Limiter) checkSingle(ctx context.Context, ks []string, cost int, nonce string) (Result, error) {
	// singleOne is shared read-only: go-redis copies arguments into each
	// command
	args := l.singleOne
	switch {
	case l.hasLog:
		args = append([]any{cost, nonce}, l.singleArgs...)
	case cost != 1:
		args = append([]any{cost}, l.singleArgs...)
	}
	if l.opt.noBlocks {
		ks = ks[1:] // one key fewer to send and to bind: measurably cheaper
	}
	rep, err := l.run.Run(ctx, l.singleOp, ks, args...)
	if err != nil {
		return Result{}, err
	}
	return l.result(l.singleOp, ks, &rep, true)
}

// result decodes a check's reply: ok or limit with (limit, remaining,
// retry_us, reset_us, rule) from allow.lua, or (remaining, retry_us,
// reset_us) from a lean script, whose rule is the policy's one; conflict
// with the block's remaining time.
func (l *Limiter) result(op *call.Op, ks []string, rep *call.Reply, lean bool) (Result, error) {
	switch rep.Status {
	case call.Conflict:
		return l.blocked(rep)
	case call.OK, call.Limit:
	default:
		return Result{}, unexpected(op, ks, rep)
	}
	res := Result{Allowed: rep.Status == call.OK, Limit: l.policy[0].capacity()}
	i := 0
	if !lean {
		res.Limit, res.Rule, i = int(rep.Int(0)), int(rep.Int(4))-1, 1
	}
	res.Remaining, res.RetryAfter, res.ResetAfter = int(rep.Int(i)), us(rep.Int(i+1)), us(rep.Int(i+2))
	if res.RetryAfter < 0 {
		res.RetryAfter = Never // the script's -1: the cost is above a capacity
	}
	if err := rep.Err(); err != nil {
		return Result{}, err
	}
	if res.Rule < 0 || res.Rule >= len(l.policy) {
		return Result{}, pkg.Fail(op.Name(), ks[0], nil, fmt.Errorf("%w: reply names rule %d", reply.ErrUnexpected, res.Rule))
	}
	return res, nil
}

// blocked is the Result of a check refused by a Block.
func (l *Limiter) blocked(rep *call.Reply) (Result, error) {
	d := us(rep.Int(0))
	if err := rep.Err(); err != nil {
		return Result{}, err
	}
	return Result{Limit: l.policy[0].capacity(), RetryAfter: d, ResetAfter: d}, nil
}

// unexpected is the error of a reply status a check script never returns.
func unexpected(op *call.Op, ks []string, rep *call.Reply) error {
	return pkg.Fail(op.Name(), ks[0], nil, fmt.Errorf("%w: status %v", reply.ErrUnexpected, rep.Status))
}
