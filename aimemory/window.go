package aimemory

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed window.lua
	windowSrc string

	windowOp = pkg.Declare("window", windowSrc, []*keys.Template{convKey, metaKey, evictedKey},
		call.Uses(libSrc), call.On(call.Limit, ErrBudgetTooSmall), call.Shared())
)

// Window is what a prompt can hold of a conversation: the system
// prompt, the summary of evicted messages, and the newest messages.
type Window struct {
	// System is the conversation's pinned system prompt (its first
	// message, when that is a system message), or nil.
	System *Message
	// Summary is the summary of the evicted messages (with
	// WithSummarizer), or nil when there is none or it did not fit the
	// budget.
	Summary *Summary
	// Messages are the newest messages that fit, oldest first, without
	// the system prompt. A message and the tool results that follow it
	// are never split, and tool results whose call is gone are left
	// out.
	Messages []Message
	// Tokens is what the window counts: the system prompt, the summary
	// (when included) and the messages.
	Tokens int
	// Length is the number of messages in the conversation.
	Length int
	// Omitted is the number of messages of the conversation left out of
	// the window.
	Omitted int
	// Lost is the number of evicted messages dropped without a summary
	// (more than 1000 waited for the summarizer).
	Lost int
	// Pending is the number of evicted messages not yet summarized.
	Pending int
}

// All returns the window as one list of messages for a prompt: the
// system prompt, the summary as a system message ("Summary of the earlier
// conversation: ..."), then the messages.
func (w Window) All() []Message {
	out := make([]Message, 0, len(w.Messages)+2)
	if w.System != nil {
		out = append(out, *w.System)
	}
	if w.Summary != nil {
		out = append(out, Message{Role: System, Content: "Summary of the earlier conversation: " + w.Summary.Text, Tokens: w.Summary.Tokens})
	}
	return append(out, w.Messages...)
}

// WindowOption selects what Window returns.
type WindowOption func(*windowConfig)

type windowConfig struct {
	last, budget       int
	lastSet, budgetSet bool
	noSummary          bool
}

// WithLastN keeps at most the n newest messages besides the system prompt;
// fewer when the nth newest is a tool result whose call would be left
// out.
//
// Default: the whole conversation. Range: 1 to 10000.
func WithLastN(n int) WindowOption { return func(c *windowConfig) { c.last, c.lastSet = n, true } }

// WithTokenBudget keeps the newest messages that fit n tokens together with the system prompt and the summary: the
// system prompt first (a budget below it fails with ErrBudgetTooSmall),
// then the summary if it fits, then messages newest first, each with the
// tool results that follow it, until the next would not fit.
//
// Default: no budget. Range: 1 to 16777216 (2^24).
func WithTokenBudget(n int) WindowOption {
	return func(c *windowConfig) { c.budget, c.budgetSet = n, true }
}

// WithoutSummary leaves the summary out of the window.
//
// Default: off (the summary is in).
func WithoutSummary() WindowOption { return func(c *windowConfig) { c.noSummary = true } }

// Window returns the window of conversation convID of userID in one
// round trip, by default the whole conversation; WithLastN and WithTokenBudget
// bound it (both may apply). The round trip is one MULTI/EXEC of plain
// reads (the last n messages, or with a token budget the whole
// conversation, at most the cap), the window picked in Go; with a token
// budget and a cap above 100 it is one read-only script that walks the
// conversation from its end in Redis and returns only what fits. Both
// pick the same window. A conversation that does not exist gives an
// empty window. Reads do not extend the conversation's TTL: only appends
// do, so a conversation in use (each turn appends) lives on while
// readers such as dashboards do not keep an abandoned one alive. A
// stored message this package did not write is an error matching
// keys.ErrCorrupt that names the conversation's key.
func (m *Memory) Window(ctx context.Context, userID, convID string, opts ...WindowOption) (Window, error) {
	const op = "window"
	cfg, err := windowConfigOf(op, opts)
	if err != nil {
		return Window{}, err
	}
	c, err := m.conv(op, userID, convID)
	if err != nil {
		return Window{}, err
	}
	if cfg.budget == 0 || m.opt.maxMessages <= readAllWindow {
		return m.windowTx(ctx, op, c, cfg)
	}
	wc := windowCall(c, cfg)
	rep, err := m.run.Run(ctx, wc.Op, wc.Keys, wc.Args...)
	if err != nil {
		return Window{}, err
	}
	return decodeWindow(&rep, c)
}

// windowConfigOf applies and checks Window's options.
func windowConfigOf(op string, opts []WindowOption) (windowConfig, error) {
	var cfg windowConfig
	for _, f := range opts {
		if f != nil {
			f(&cfg)
		}
	}
	switch {
	case cfg.lastSet && (cfg.last < 1 || cfg.last > maxMessages):
		return cfg, pkg.Invalidf(op, "last %d outside [1, %d]", cfg.last, maxMessages)
	case cfg.budgetSet && (cfg.budget < 1 || cfg.budget > maxTokens):
		return cfg, pkg.Invalidf(op, "token budget %d outside [1, %d]", cfg.budget, maxTokens)
	}
	return cfg, nil
}

// windowCall is the window script's call for conversation c (Window
// with a token budget above a cap of 100, and Inspector.ReadView).
func windowCall(c conv, cfg windowConfig) call.Call {
	sum := "1"
	if cfg.noSummary {
		sum = "0"
	}
	return call.Call{Op: windowOp, Keys: []string{c.keys[0], c.keys[1], c.keys[3]}, Args: []any{cfg.last, cfg.budget, sum}}
}

// decodeWindow decodes the window script's reply for conversation c.
func decodeWindow(rep *call.Reply, c conv) (Window, error) {
	var w Window
	sys, hasSys := rep.OptStr(0)
	text, hasSummary := rep.OptStr(1)
	stok, covered, lost := rep.Int(2), rep.Int(3), rep.Int(4)
	w.Pending, w.Length, w.Tokens = int(rep.Int(5)), int(rep.Int(6)), int(rep.Int(7))
	w.Lost = int(lost)
	raw := rep.Strs(8)
	if err := rep.Err(); err != nil {
		return Window{}, err
	}
	if hasSys {
		msg, err := decodeMessage(sys)
		if err != nil {
			rep.Corruptf(c.keys[0], "element 0: %v", err)
			return Window{}, rep.Err()
		}
		w.System = &msg
	}
	if hasSummary {
		w.Summary = &Summary{Text: text, Tokens: int(stok), Covered: int(covered), Lost: int(lost)}
	}
	w.Messages = make([]Message, len(raw))
	for i, s := range raw {
		msg, err := decodeMessage(s)
		if err != nil {
			rep.Corruptf(c.keys[0], "element %d from the end: %v", i, err)
			return Window{}, rep.Err()
		}
		w.Messages[i] = msg
	}
	slices.Reverse(w.Messages)
	w.Omitted = w.Length - len(w.Messages)
	if w.System != nil {
		w.Omitted--
	}
	return w, nil
}

// readAllWindow is the largest cap at which a token-budget window reads
// the whole conversation (one MULTI/EXEC of plain reads, selected in Go)
// instead of running the window script, which reads only what fits but
// costs Redis more CPU per message it hands through Lua.
const readAllWindow = 100

// windowTx is Window by one MULTI/EXEC of plain reads, all on the
// conversation's slot: its length, its head, its last n messages (all of
// them with a token budget), the summary and the pending count; Go then
// picks the window as the window script does (see fit).
func (m *Memory) windowTx(ctx context.Context, op string, c conv, cfg windowConfig) (Window, error) {
	start := -int64(cfg.last) // 0 when unset: the whole list
	if cfg.budget > 0 {
		start = 0
	}
	pipe := m.rdb.TxPipeline()
	llen := pipe.LLen(ctx, c.keys[0])
	head := pipe.LIndex(ctx, c.keys[0], 0)
	rng := pipe.LRange(ctx, c.keys[0], start, -1)
	meta := pipe.HMGet(ctx, c.keys[1], "summary", "summary_tokens", "covered", "lost")
	pend := pipe.LLen(ctx, c.keys[3])
	_, _ = pipe.Exec(ctx)
	for _, x := range []struct {
		cmd redis.Cmder
		key string
	}{{llen, c.keys[0]}, {head, c.keys[0]}, {rng, c.keys[0]}, {meta, c.keys[1]}, {pend, c.keys[3]}} {
		if err := x.cmd.Err(); err != nil && err != redis.Nil {
			return Window{}, pkg.Wrap(ctx, op, x.key, err)
		}
	}
	w := Window{Length: int(llen.Val()), Pending: int(pend.Val())}
	corrupt := func(key, format string, args ...any) error {
		return pkg.Fail(op, key, nil, keys.Corrupt(key, fmt.Errorf(format, args...)))
	}
	// The head is decoded here when it may be the system prompt (a first
	// message of another role is read with the range, if it is in it).
	if h, err := head.Result(); err == nil && (strings.HasPrefix(h, `{"role":"system"`) || !strings.HasPrefix(h, `{"role":`)) {
		msg, err := decodeMessage(h)
		if err != nil {
			return Window{}, corrupt(c.keys[0], "element 0: %v", err)
		}
		if msg.Role == System {
			if cfg.budget > 0 && msg.Tokens > cfg.budget {
				return Window{}, pkg.Fail(op, c.keys[0], ErrBudgetTooSmall, nil)
			}
			w.System = &msg
			w.Tokens = msg.Tokens
		}
	}
	raw := rng.Val()
	first := w.Length - len(raw)
	body := make([]Message, 0, len(raw))
	for i, s := range raw {
		if first+i == 0 && w.System != nil {
			continue
		}
		msg, err := decodeMessage(s)
		if err != nil {
			return Window{}, corrupt(c.keys[0], "element %d: %v", first+i, err)
		}
		body = append(body, msg)
	}
	f := meta.Val()
	count := func(i int) (int, bool) {
		s, ok := f[i].(string)
		if !ok {
			return 0, f[i] == nil
		}
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0 && n <= math.MaxInt32
	}
	stok, ok1 := count(1)
	covered, ok2 := count(2)
	lost, ok3 := count(3)
	if !ok1 || !ok2 || !ok3 {
		return Window{}, corrupt(c.keys[1], "summary_tokens, covered or lost is not a count")
	}
	w.Lost = lost
	if text, ok := f[0].(string); ok && !cfg.noSummary && (cfg.budget == 0 || w.Tokens+stok <= cfg.budget) {
		w.Summary = &Summary{Text: text, Tokens: stok, Covered: covered, Lost: lost}
		w.Tokens += stok
	}
	from, tokens := fit(body, cfg.last, cfg.budget, w.Tokens)
	w.Messages, w.Tokens = body[from:], tokens
	w.Omitted = w.Length - len(w.Messages)
	if w.System != nil {
		w.Omitted--
	}
	return w, nil
}

// fit returns where the window starts in body (the messages after the
// system prompt, oldest first) and the window's tokens, given used tokens
// already taken: the newest messages that fit last (a count, 0 for no
// limit) and budget (tokens, 0 for none), in groups (a message and the
// tool results that follow it), stopping at the first group that does
// not fit; tool results at the start, whose call is not in body, are
// left out. window.lua does the same in Redis.
func fit(body []Message, last, budget, used int) (int, int) {
	start, count, gtok, gend := len(body), 0, 0, len(body)
	for i := len(body) - 1; i >= 0; i-- {
		gtok += body[i].Tokens
		if body[i].Role == Tool {
			continue
		}
		gn := gend - i
		if (last > 0 && count+gn > last) || (budget > 0 && used+gtok > budget) {
			break
		}
		count, used, start, gend, gtok = count+gn, used+gtok, i, i, 0
	}
	return start, used
}
