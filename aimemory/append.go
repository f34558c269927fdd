package aimemory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

var (
	//go:embed lib.lua
	libSrc string
	//go:embed append.lua
	appendSrc string

	appendOp = pkg.Declare("append", appendSrc, append(convKeys[:4:4], userKey, indexKey),
		call.Uses(libSrc), call.Needs(call.Batched), call.On(call.Limit, ErrBudgetExceeded), call.Shared())
)

// Appended is the outcome of an Append.
type Appended struct {
	// Length is the number of messages in the conversation after the
	// append (the system prompt included).
	Length int
	// Evicted is the number of messages the cap evicted.
	Evicted int
	// TokensToday is the user's tokens of the day after the append (or,
	// with ErrBudgetExceeded, before the refused append).
	TokensToday int64
	// Tokens is what the appended messages count, as stored.
	Tokens int
	// Pending is the number of evicted messages waiting for the
	// summarizer after the append (and its summarizer call).
	Pending int
	// SummaryErr is the summarizer's error when Append called it and it
	// failed: the messages were appended all the same, and the evicted
	// ones wait for the next Summarize.
	SummaryErr error
}

// Append adds msgs (1 to 100, and at most the cap) to the end of
// conversation convID of userID, in one round trip: one script pushes
// them, evicts the oldest messages past the cap (WithMaxMessages; a first
// system message is pinned and never evicted, and the tool results that
// follow an evicted call go with it), refreshes the conversation's TTL
// and its companions', records convID as the user's last conversation,
// and adds the messages' tokens to the user's tokens of the day (reset at
// the day's start in the configured zone, by the server's clock). With a
// daily budget (WithDailyBudget, AppendWithBudget), an append that would go past it
// is refused with ErrBudgetExceeded and nothing is written.
//
// Messages are checked before any I/O (ErrInvalid): a known role,
// non-empty content (an assistant message may instead have tool calls),
// a tool message's ToolCallID, tokens in [0, 2^24], valid UTF-8, an
// encoded size within WithMaxMessageBytes. A message whose Tokens is zero
// is counted with the Counter; a zero Timestamp becomes the local clock's
// time. Concurrent appends to one conversation are serialised by Redis:
// each call's messages stay together and in order.
//
// Idempotent under retry: the call's request ID is recorded with its
// outcome for 3 minutes, and go-redis's resend of the script after a
// lost reply reports that outcome (the same Length, Evicted, TokensToday
// and Pending) without appending or counting again, however many other
// appends ran meanwhile. With a Summarizer, an append that evicted
// messages then calls Summarize (see Appended.SummaryErr).
func (m *Memory) Append(ctx context.Context, userID, convID string, msgs []Message) (Appended, error) {
	return m.append(ctx, "append", userID, convID, msgs, newID(), m.opt.budget)
}

// AppendWithBudget is Append with this call's daily token budget (a
// user's plan) in place of WithDailyBudget's; 0 means none.
//
// Range: budget 0 to 1099511627776 (2^40), else ErrInvalid.
func (m *Memory) AppendWithBudget(ctx context.Context, userID, convID string, msgs []Message, budget int64) (Appended, error) {
	return m.append(ctx, "append", userID, convID, msgs, newID(), budget)
}

// append is Append with the request ID id and the daily budget.
func (m *Memory) append(ctx context.Context, op, userID, convID string, msgs []Message, id string, budget int64) (Appended, error) {
	if budget < 0 || budget > maxDailyBudget {
		return Appended{}, pkg.Invalidf(op, "daily budget %d outside [0, %d]", budget, maxDailyBudget)
	}
	c, err := m.conv(op, userID, convID)
	if err != nil {
		return Appended{}, err
	}
	args, tokens, err := m.encode(op, msgs)
	if err != nil {
		return Appended{}, err
	}
	keep := 0
	if m.opt.summarizer != nil {
		keep = maxPending
	}
	rep, err := m.runDay(ctx, appendOp, c.allForUser,
		append([]any{id, m.opt.maxMessages, unit.MsCeil(m.opt.convTTL), unit.MsCeil(m.opt.userTTL), budget, keep, convID, tokens, unit.MsCeil(replayWindow)}, args...)...)
	if errors.Is(err, ErrBudgetExceeded) {
		today := rep.Int(0)
		if rerr := rep.Err(); rerr != nil {
			return Appended{}, rerr
		}
		return Appended{TokensToday: today}, err
	}
	if err != nil {
		return Appended{}, err
	}
	out := Appended{Length: int(rep.Int(0)), Evicted: int(rep.Int(1)), TokensToday: rep.Int(2), Tokens: tokens, Pending: int(rep.Int(4))}
	if err := rep.Err(); err != nil {
		return Appended{}, err
	}
	if out.Evicted > 0 && m.opt.summarizer != nil {
		s, err := m.Summarize(ctx, userID, convID)
		if out.SummaryErr = err; err == nil {
			out.Pending = s.Pending // else the append's count stands: they still wait
		}
	}
	return out, nil
}

// encode checks msgs, fills in their tokens and timestamps, and returns
// their JSON as script arguments with their total tokens.
func (m *Memory) encode(op string, msgs []Message) ([]any, int, error) {
	if len(msgs) == 0 || len(msgs) > maxAppend || len(msgs) > m.opt.maxMessages {
		return nil, 0, pkg.Invalidf(op, "%d messages, want 1 to %d", len(msgs), min(maxAppend, m.opt.maxMessages))
	}
	args := make([]any, len(msgs))
	total := 0
	now := m.now()
	for i := range msgs {
		msg := msgs[i] // a copy: the caller's slice is not modified
		if err := msg.check(op, i); err != nil {
			return nil, 0, err
		}
		if msg.Tokens == 0 {
			n, err := m.count(op, msg.countText())
			if err != nil {
				return nil, 0, err
			}
			msg.Tokens = n
		}
		if msg.Timestamp.IsZero() {
			msg.Timestamp = now
		}
		b, err := msg.encode()
		if err != nil {
			return nil, 0, pkg.Invalid(op, fmt.Errorf("message %d: %w", i, err))
		}
		if len(b) > m.opt.maxBytes {
			return nil, 0, pkg.Invalidf(op, "message %d: %d bytes encoded, at most %d", i, len(b), m.opt.maxBytes)
		}
		args[i] = b
		total += msg.Tokens
	}
	return args, total, nil
}

// count counts text with the Counter; a count outside [0, maxTokens] or
// a counter's error is the caller's input error.
func (m *Memory) count(op, text string) (int, error) {
	n, err := m.opt.counter.Count(text)
	if err != nil {
		return 0, pkg.Invalid(op, fmt.Errorf("token counter: %w", err))
	}
	if n < 0 || n > maxTokens {
		return 0, pkg.Invalidf(op, "token counter said %d, outside [0, %d]", n, maxTokens)
	}
	return n, nil
}
