package aimemory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed summary_read.lua
	summaryReadSrc string
	//go:embed summary_store.lua
	summaryStoreSrc string

	summaryReadOp  = pkg.Declare("summarize", summaryReadSrc, []*keys.Template{metaKey, evictedKey}, call.Shared())
	summaryStoreOp = pkg.Declare("summarize", summaryStoreSrc, []*keys.Template{convKey, metaKey, evictedKey},
		call.On(call.Conflict, errSummaryChanged), call.Shared())

	// errSummaryChanged is the store script's conflict: another
	// summarizer stored first. Summarize reads again; callers never see
	// it.
	errSummaryChanged = errors.New("summary changed")
)

// Summarizer folds messages the cap evicted into a conversation's
// summary: it gets the current summary ("" at first) and the evicted
// messages, oldest first (at most summarizeBatch at a time), and returns
// the new summary (non-empty valid UTF-8 of at most WithMaxMessageBytes
// bytes). It is called with the context of the Append or Summarize call,
// and may be called again for the same messages when another process
// stored a summary first; its result is then discarded.
type Summarizer func(ctx context.Context, previous string, evicted []Message) (string, error)

// Summary is the summary of a conversation's evicted messages, kept
// beside the conversation (with its TTL) and returned with its window.
type Summary struct {
	Text string
	// Tokens is what the summary counts (by the Memory's Counter).
	Tokens int
	// Covered is the number of evicted messages folded into it.
	Covered int
	// Lost is the number of evicted messages dropped without being
	// folded in (more than 1000 waited for the summarizer).
	Lost int
	// Pending is the number of evicted messages waiting for the
	// summarizer.
	Pending int
}

// summarizeBatch is the most evicted messages one Summarizer call gets.
const summarizeBatch = 100

// maxSummarizeRounds bounds Summarize's reads: each round folds in a
// batch or finds that another summarizer stored first.
const maxSummarizeRounds = 64

// Summarize folds the evicted messages waiting for the Summarizer into
// the summary of conversation convID, batch by batch, and returns the
// summary. Each batch is one read, one Summarizer call and one store
// that succeeds only if the summary did not change since the read and
// the conversation is the one read, not a new one of the same ID begun
// after a delete (so no evicted message is summarized twice or skipped
// when processes race, and no deleted conversation's summary is stored);
// callers in one process share one run. Append calls it when the cap
// evicted messages; call it yourself to retry after a failed Summarizer.
// Without WithSummarizer it fails with ErrInvalid. A pending message
// this package did not write is an error matching keys.ErrCorrupt that
// names the pending list's key.
func (m *Memory) Summarize(ctx context.Context, userID, convID string) (Summary, error) {
	const op = "summarize"
	if m.opt.summarizer == nil {
		return Summary{}, pkg.Invalidf(op, "no summarizer (WithSummarizer)")
	}
	c, err := m.conv(op, userID, convID)
	if err != nil {
		return Summary{}, err
	}
	v, err, _ := m.summaries.Do(c.keys[0], func() (any, error) { return m.summarize(ctx, op, c) })
	s, _ := v.(Summary)
	return s, err
}

func (m *Memory) summarize(ctx context.Context, op string, c conv) (Summary, error) {
	for round := 0; round < maxSummarizeRounds; round++ {
		rep, err := m.run.Run(ctx, summaryReadOp, []string{c.keys[1], c.keys[3]}, summarizeBatch)
		if err != nil {
			return Summary{}, err
		}
		version := rep.Int(0)
		prev, _ := rep.OptStr(1)
		s := Summary{Text: prev, Tokens: int(rep.Int(2)), Covered: int(rep.Int(3)), Lost: int(rep.Int(4)), Pending: int(rep.Int(5))}
		raw := rep.Strs(6)
		epoch, _ := rep.OptStr(7) // the store refuses another conversation's (deleted, begun again)
		if err := rep.Err(); err != nil {
			return Summary{}, err
		}
		if len(raw) == 0 {
			return s, nil
		}
		evicted := make([]Message, len(raw))
		for i, r := range raw {
			if evicted[i], err = decodeMessage(r); err != nil {
				rep.Corruptf(c.keys[3], "element %d: %v", i, err)
				return s, rep.Err()
			}
		}
		text, err := m.opt.summarizer(ctx, prev, evicted)
		if err != nil {
			return s, pkg.Fail(op, c.keys[1], nil, fmt.Errorf("summarizer: %w", err))
		}
		if text == "" || !utf8.ValidString(text) || len(text) > m.opt.maxBytes {
			return s, pkg.Invalidf(op, "summarizer returned %d bytes: want non-empty valid UTF-8 of at most %d", len(text), m.opt.maxBytes)
		}
		tokens, err := m.count(op, text)
		if err != nil {
			return s, err
		}
		rep, err = m.run.Run(ctx, summaryStoreOp, []string{c.keys[0], c.keys[1], c.keys[3]},
			version, len(raw), text, tokens, newID(), epoch)
		switch {
		case errors.Is(err, errSummaryChanged):
			continue
		case err != nil:
			return s, err
		case rep.Status == call.None:
			return Summary{}, nil // the conversation is gone
		}
		left := rep.Int(1)
		if err := rep.Err(); err != nil {
			return s, err
		}
		s = Summary{Text: text, Tokens: tokens, Covered: s.Covered + len(raw), Lost: s.Lost, Pending: int(left)}
		if left == 0 {
			return s, nil
		}
	}
	return Summary{}, pkg.Fail(op, c.keys[1], nil, fmt.Errorf("the summary changed %d times while summarizing", maxSummarizeRounds))
}
