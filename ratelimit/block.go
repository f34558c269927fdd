package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"
)

// maxBlock is the longest Block: one year (366 days), like the longest
// Period.
const maxBlock = 366 * 24 * time.Hour

// Block refuses every request for id for d (rounded up to whole
// milliseconds, at most 366 days), whatever the counters say, in every
// limiter of the same namespace (except those created WithoutBlocks): the
// block is one key per identifier, ratelimit:block:{id}, with TTL d.
// Blocks only lengthen: if id is already blocked for longer than d, the
// longer block stays (a short automatic block never cuts an operator's ban
// short); Unblock lifts any block and keeps the counters, Reset lifts it
// and clears them. A block key without a TTL (not written by
// this package) counts as blocked for 366 days. Counters are untouched, and
// a blocked request consumes nothing. Results during the block have Allowed
// false and RetryAfter = ResetAfter = the block's remaining time.
//
// A block that is set is announced on the events channel, as Reset is.
// One round trip (a script). The key holds the call's request ID, so a
// call that go-redis resends after losing its reply changes nothing more:
// the block still ends d after the first send reached the server. Errors:
// ErrInvalid for d outside 1ms..366 days or an unusable id (nothing
// written); keys.ErrCorrupt naming the key when it holds what Block does
// not write; Redis and context errors as they are.
func (l *Limiter) Block(ctx context.Context, id string, d time.Duration) error {
	const op = "block"
	if d < time.Millisecond || d > maxBlock {
		return pkg.Invalidf(op, "duration %v outside 1ms..%v", d, maxBlock)
	}
	k, err := pkg.Key(op, blockKey, l.opt.ns, id)
	if err != nil {
		return err
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	_, err = l.run.Run(ctx, blockOp, []string{k}, ms, requestID(), l.channel, id)
	if err == nil {
		l.forget(id)
	}
	return err
}

// Unblock lifts any block on id (set by Block or WithAutoBlock) in every
// limiter of the namespace and keeps everything else: the rules' counters
// (an identifier that used up its quota stays refused until the quota
// allows it again), the runtime config. It reports whether a block was
// lifted. One round trip (a script that deletes ratelimit:block:{id} and
// announces id on the events channel, so that every instance's deny cache
// drops its refusals, as Reset does). A resend after a lost reply deletes
// again: the same state (it may then report false). Errors: ErrInvalid
// for an unusable id (nothing deleted); Redis and context errors as they
// are.
func (l *Limiter) Unblock(ctx context.Context, id string) (bool, error) {
	const op = "unblock"
	k, err := pkg.Key(op, blockKey, l.opt.ns, id)
	if err != nil {
		return false, err
	}
	rep, err := l.run.Run(ctx, unblockOp, []string{k}, l.channel, id)
	if err != nil {
		return false, err
	}
	l.forget(id)
	n := rep.Int(0)
	return n > 0, rep.Err()
}

// requestID returns a fresh random ID for a write that must recognise its
// own resend: 128 bits, base64url (22 characters).
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Reset deletes everything the limiter stores for id: the state of every
// rule and any Block on id (which every limiter of the namespace shares).
// The runtime config is kept (see DeleteConfig). One round trip (a script
// that deletes the keys, which share a slot, and announces id on the
// events channel, so that every instance's deny cache drops it: see
// WithDenyCache). A resend after a lost reply deletes again: the
// same outcome, and the same state as a Reset a moment later (what a check
// wrote in between is gone too). Errors: ErrInvalid for an unusable id
// (nothing deleted); Redis and context errors as they are.
func (l *Limiter) Reset(ctx context.Context, id string) error {
	const op = "reset"
	ks, err := l.keys(op, id)
	if err != nil {
		return err
	}
	if l.cfgIdx > 0 {
		ks = append(ks[:1], ks[2:]...)
	}
	_, err = l.run.Run(ctx, resetOp, ks, l.channel, id)
	if err == nil {
		l.forget(id)
	}
	return err
}
