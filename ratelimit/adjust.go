package ratelimit

import (
	"context"
)

// Refund gives cost units back to id in every rule of the policy, for a
// request that was admitted but should not count (it failed, it was
// cancelled): a FixedWindow or SlidingCounter count goes down by cost (not
// below zero, and only in the current window), a GCRA bucket gets cost
// tokens back (never more than full), and a sliding log loses its newest
// cost entries (Reservation.Cancel removes exactly its own). State of an
// earlier window is left alone. The refund is announced on the events
// channel, so deny caches (WithDenyCache) drop id at once.
//
// One round trip (a script, server time). The call's request ID is kept
// for 3 minutes under ratelimit:adjust:{id}:{request}, so a call that
// go-redis resends after losing its reply refunds nothing more. Errors:
// ErrInvalid for a cost below 1 or above the most a rule could ever
// admit, or an unusable id
// (nothing written); keys.ErrCorrupt naming the key when a state key holds
// what the limiter does not write; Redis and context errors as they are.
func (l *Limiter) Refund(ctx context.Context, id string, cost int) error {
	return l.adjust(ctx, "refund", id, cost, "")
}

// Penalize takes cost more units from id in every rule of the policy,
// whatever is left, as if a request of that cost had been admitted: for a
// response that shows abuse (a failed login, say), which then weighs more
// than a request. Counters may go above their limit; the identifier is then
// refused until enough time has passed. A sliding log gets cost entries.
//
// One round trip (a script, server time), idempotent under resends as
// Refund is. Errors as Refund's.
func (l *Limiter) Penalize(ctx context.Context, id string, cost int) error {
	return l.adjust(ctx, "penalize", id, cost, l.nonce())
}

// adjust runs adjust.lua: a refund when op is "refund" (nonce: the
// sliding-log members to remove, "" for the newest), else a penalty (nonce:
// the members to add).
func (l *Limiter) adjust(ctx context.Context, op, id string, cost int, nonce string) error {
	if err := l.checkCost(op, cost); err != nil {
		return err
	}
	ks, err := l.keys(op, id)
	if err != nil {
		return err
	}
	mk, err := pkg.Key(op, adjustKey, l.opt.ns, id, requestID())
	if err != nil {
		return err
	}
	ks = append(ks, mk)
	refund := "0"
	if op == "refund" {
		refund = "1"
	}
	if _, err := l.run.Run(ctx, l.adjustOp, ks, cost, refund, nonce, l.channel, id, l.policyQ); err != nil {
		return err
	}
	if refund == "1" {
		l.forget(id)
	}
	return nil
}

// Reservation is an admission that can be taken back: see Reserve.
type Reservation struct {
	// Result is the check's outcome, as AllowN reports it.
	Result
	l     *Limiter
	id    string
	cost  int
	nonce string
}

// Reserve is AllowN that returns a Reservation: when the request is
// admitted (and its units counted), Cancel gives exactly its units back,
// for a request that turns out not to count (it failed, the client went
// away). Options apply as for AllowN (shadow mode, the decision hook).
// One round trip; errors as AllowN's.
func (l *Limiter) Reserve(ctx context.Context, id string, cost int) (*Reservation, error) {
	res, _, nonce, err := l.decide(ctx, id, cost, false)
	if err != nil {
		return nil, err
	}
	return &Reservation{Result: res, l: l, id: id, cost: cost, nonce: nonce}, nil
}

// Cancel gives the reservation's units back (see Refund): in a sliding log
// it removes exactly the reservation's entries, if still there. A
// reservation that was refused (or admitted only by shadow mode) holds no
// units: Cancel does nothing. Call it at most once: each call refunds
// again (a go-redis resend of one call does not). One round trip.
func (r *Reservation) Cancel(ctx context.Context) error {
	if !r.Allowed || r.Shadowed || r.Local {
		return nil
	}
	return r.l.adjust(ctx, "refund", r.id, r.cost, r.nonce)
}
