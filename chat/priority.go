package chat

import (
	"math"
	"time"
)

// Priority is a conversation's urgency (the unread queue weights of the
// home-automation backend, docs/home-automation.md: urgent 1000, high 100,
// normal 10, low 1). The zero value means Normal.
type Priority string

// The priorities, most urgent first.
const (
	Urgent Priority = "urgent"
	High   Priority = "high"
	Normal Priority = "normal"
	Low    Priority = "low"
)

var bands = [...]Priority{Low, Normal, High, Urgent}

// band returns the priority's band (0 low .. 3 urgent), "" counting as
// Normal, and false for an unknown priority.
func (p Priority) band() (int, bool) {
	if p == "" {
		return 1, true
	}
	for i, b := range bands {
		if b == p {
			return i, true
		}
	}
	return 0, false
}

// Weight returns the home-automation backend's weight of the priority
// (1000, 100, 10, 1; docs/home-automation.md), or 0 for an unknown one.
func (p Priority) Weight() int {
	b, ok := p.band()
	if !ok {
		return 0
	}
	return int(math.Pow10(b))
}

// Order scores. A queue member's score is
//
//	band × 2^51 + (2^51 − 1 − stamp)
//
// where band is 0 (low) to 3 (urgent) and stamp, below 2^51, is the order
// stamp issued when the conversation entered the queue: server Unix ms ×
// 512, or one more than the last stamp issued when that is larger (more
// than one entry in a millisecond). Scores are integers below 2^53, so a
// double holds them exactly; the highest score is the most urgent and,
// within a band, the oldest.
const (
	bandSize     = 1 << 51
	stampsPerMs  = 512
	maxScore     = 4*bandSize - 1
	maxStampTime = bandSize / stampsPerMs // ms: the year 2109
)

// decodeScore returns the priority and the entry time of a queue score,
// and false for a score this package does not write.
func decodeScore(s float64) (Priority, time.Time, bool) {
	if s < 0 || s > maxScore || s != math.Trunc(s) {
		return "", time.Time{}, false
	}
	n := int64(s)
	b := n / bandSize
	stamp := bandSize - 1 - (n - b*bandSize)
	return bands[b], time.UnixMilli(stamp / stampsPerMs), true
}

// checkPriority returns the band of p, or ErrInvalid for op.
func checkPriority(op string, p Priority) (int, error) {
	b, ok := p.band()
	if !ok {
		return 0, pkg.Invalidf(op, "priority %.32q: want urgent, high, normal or low", string(p))
	}
	return b, nil
}

// String returns the priority's name.
func (p Priority) String() string {
	if p == "" {
		return string(Normal)
	}
	return string(p)
}
