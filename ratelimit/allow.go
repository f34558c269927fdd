package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/reply"
)

// costOne is the argument list of a unit-cost call to a single-rule script
// without a nonce. It is shared read-only: go-redis copies arguments into
// each command.
var costOne = []any{1}

// Allow is AllowN with cost 1.
func (l *Limiter) Allow(ctx context.Context, id string) (Result, error) {
	res, _, err := l.decide(ctx, id, 1)
	return res, err
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
// One round trip (one script, server time). A call that go-redis resends
// after losing its reply is reported as first decided when the policy has
// a Sliding rule, and otherwise may count twice (never admitting more; see
// "Retries" in docs/ratelimit.md).
//
// Errors: ErrInvalid for a cost below 1 or above what a rule can ever
// admit, or an unusable id (also keys.ErrInvalidKey), before anything is
// sent; ErrInvalid too for a cost above the capacity the stored runtime
// config gives a rule (nothing written); keys.ErrCorrupt naming the key
// when a key holds what this package does not write (another type, a
// number outside the exact format or range written, a config field above
// what New allows); Redis and context errors as they are. Every error
// names the operation and the key. A block key without a TTL counts as a
// block of MaxBlock.
func (l *Limiter) AllowN(ctx context.Context, id string, cost int) (Result, error) {
	res, _, err := l.decide(ctx, id, cost)
	return res, err
}

// decide is a consuming check with the limiter's options applied: shadow
// mode and the decision hook. It returns the nonce that names the
// request's sliding-log members ("" without a Sliding rule).
func (l *Limiter) decide(ctx context.Context, id string, cost int) (Result, string, error) {
	var (
		res   Result
		nonce string
		err   error
		local bool
	)
	if l.deny != nil {
		res, local = l.deny.lookup(id, cost)
	}
	if !local && l.degr != nil && l.degr.on.Load() {
		if err = l.checkCost("allow", cost); err == nil {
			_, err = l.keys("allow", id)
		}
		if err == nil {
			res = l.degr.allow(id, cost)
		}
		local = true
	}
	if !local {
		var sent time.Time
		var epoch uint64
		if l.deny != nil {
			sent, epoch = l.deny.begin()
		}
		res, nonce, err = l.check(ctx, l.allowOp, id, cost)
		if l.degr != nil && outage(ctx, err) {
			l.degr.set(true)
			res, nonce, err = l.degr.allow(id, cost), "", nil
		}
		if l.deny != nil && err == nil && !res.Allowed {
			l.deny.store(id, cost, sent, epoch, res)
		}
	}
	if err == nil && !res.Allowed && l.opt.shadow {
		res.Allowed, res.Shadowed = true, true
	}
	if l.opt.hook != nil {
		l.opt.hook(ctx, id, cost, res, err)
	}
	return res, nonce, err
}

// Peek reports what Allow would decide for id now, without consuming or
// writing anything: Remaining is what is left, RetryAfter the wait for a
// unit-cost request. One round trip; errors as AllowN's.
func (l *Limiter) Peek(ctx context.Context, id string) (Result, error) {
	res, _, err := l.check(ctx, l.peekOp, id, 1)
	return res, err
}

// check runs one check script; it returns the request's nonce (see
// decide).
func (l *Limiter) check(ctx context.Context, op *call.Op, id string, cost int) (Result, string, error) {
	if err := l.checkCost(op.Name(), cost); err != nil {
		return Result{}, "", err
	}
	ks, err := l.keys(op.Name(), id)
	if err != nil {
		return Result{}, "", err
	}
	peek := op == l.peekOp
	mode, nonce := "0", ""
	if peek {
		mode = "1"
	} else if l.hasLog {
		nonce = l.nonce()
	}
	if l.singleOp != nil && !peek {
		res, err := l.checkSingle(ctx, ks, cost, nonce)
		return res, nonce, err
	}
	rep, err := l.run.Run(ctx, op, ks, cost, mode, nonce)
	if err != nil {
		return Result{}, "", err
	}
	res, err := l.result(op, ks, &rep, false)
	return res, nonce, err
}

// checkCost reports a cost outside 1..maxCost as ErrInvalid.
func (l *Limiter) checkCost(op string, cost int) error {
	if cost < 1 || cost > l.maxCost {
		return pkg.Invalidf(op, "cost %d outside 1..%d", cost, l.maxCost)
	}
	return nil
}

// checkSingle runs the lean script of a one-rule limiter (see single.lua).
func (l *Limiter) checkSingle(ctx context.Context, ks []string, cost int, nonce string) (Result, error) {
	var args []any
	switch {
	case l.hasLog:
		args = []any{cost, nonce}
	case cost == 1:
		args = costOne
	default:
		args = []any{cost}
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
