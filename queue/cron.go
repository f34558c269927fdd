package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronSpec is a parsed 5-field cron expression: minute, hour, day of
// month, month, day of week (0 or 7 is Sunday). Each field is a set of
// allowed values as a bit mask.
type cronSpec struct {
	min, hour, dom, month, dow uint64
	domStar, dowStar           bool // the field was "*": the other day field alone decides
}

// cronFields are the bounds of the five fields.
var cronFields = [5]struct{ lo, hi int }{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}

// parseCron parses "m h dom mon dow". Each field is a comma-separated
// list of "*", "n", "a-b", each optionally followed by "/step".
func parseCron(s string) (cronSpec, error) {
	f := strings.Fields(s)
	if len(f) != 5 {
		return cronSpec{}, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", s, len(f))
	}
	var masks [5]uint64
	for i, field := range f {
		m, err := parseCronField(field, cronFields[i].lo, cronFields[i].hi)
		if err != nil {
			return cronSpec{}, fmt.Errorf("cron %q: field %d %q: %w", s, i+1, field, err)
		}
		masks[i] = m
	}
	if masks[4]&(1<<7) != 0 { // 7 is Sunday too
		masks[4] |= 1
	}
	return cronSpec{min: masks[0], hour: masks[1], dom: masks[2], month: masks[3], dow: masks[4],
		domStar: f[2] == "*", dowStar: f[4] == "*"}, nil
}

func parseCronField(field string, lo, hi int) (uint64, error) {
	var mask uint64
	for _, part := range strings.Split(field, ",") {
		rng, stepStr, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n < 1 || n > hi {
				return 0, fmt.Errorf("bad step %q", stepStr)
			}
			step = n
		}
		a, b := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			x, y, _ := strings.Cut(rng, "-")
			var err1, err2 error
			a, err1 = strconv.Atoi(x)
			b, err2 = strconv.Atoi(y)
			if err1 != nil || err2 != nil || a > b {
				return 0, fmt.Errorf("bad range %q", rng)
			}
		default:
			n, err := strconv.Atoi(rng)
			if err != nil {
				return 0, fmt.Errorf("bad value %q", rng)
			}
			a, b = n, n
			if hasStep {
				b = hi
			}
		}
		if a < lo || b > hi {
			return 0, fmt.Errorf("%q outside %d-%d", rng, lo, hi)
		}
		for v := a; v <= b; v += step {
			mask |= 1 << uint(v)
		}
	}
	return mask, nil
}

func (c cronSpec) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case c.domStar && c.dowStar:
		return true
	case c.domStar:
		return dow
	case c.dowStar:
		return dom
	}
	return dom || dow // both restricted: either (as cron does)
}

// next returns the first time strictly after t matching c, in loc's wall
// clock. A wall-clock time a DST change skips does not match that day;
// one it repeats matches once (at its first instant). It returns
// the zero time if nothing matches within five years (31 February).
func (c cronSpec) next(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc).Truncate(time.Minute).Add(time.Minute)
	end := t.AddDate(5, 0, 0)
	for t.Before(end) {
		switch {
		case c.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case c.hour&(1<<uint(t.Hour())) == 0:
			// absolute minutes, so that an hour a DST change repeats is
			// walked through from its first instant
			t = t.Add(time.Duration(60-t.Minute()) * time.Minute)
		case c.min&(1<<uint(t.Minute())) == 0, repeated(t):
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

// repeated reports a wall-clock time t already had earlier the same day
// (the second pass through an hour a DST change repeats; shifts are 30
// minutes to 2 hours).
func repeated(t time.Time) bool {
	for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		u := t.Add(-d)
		if u.Day() == t.Day() && u.Hour() == t.Hour() && u.Minute() == t.Minute() {
			return true
		}
	}
	return false
}
