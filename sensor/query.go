package sensor

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// maxLatest bounds Latest's n.
const maxLatest = 10000

// read is one prepared read: its script call, and what decodes its reply
// (or its error) into the caller's destination. Alone it is one round
// trip (runOne); several go in one pipeline (runAll).
type read struct {
	call call.Call
	done func(rep *call.Reply, err error) error
}

func (c *Client) runOne(ctx context.Context, r read) error {
	rep, err := c.run.Run(ctx, r.call.Op, r.call.Keys, r.call.Args...)
	return r.done(&rep, err)
}

// runAll runs rs in one pipeline (split per node on a cluster) and joins
// their errors.
func (c *Client) runAll(ctx context.Context, rs []read) error {
	calls := make([]call.Call, len(rs))
	for i, r := range rs {
		calls[i] = r.call
	}
	reps, errs := c.run.RunMany(ctx, calls)
	var all []error
	for i, r := range rs {
		all = append(all, r.done(&reps[i], errs[i]))
	}
	return errors.Join(all...)
}

// Latest returns the newest n readings (n in [1, 10,000]) of sensor
// type typ in location loc within the retention, newest first, in one
// round trip (one script: a paged reverse range of the sorted set,
// skipping the other environmental type, or the list sorted by time).
// A location without readings gives an empty slice. A member that is not
// a reading of its key is keys.ErrCorrupt naming the key.
func (c *Client) Latest(ctx context.Context, typ, loc string, n int) ([]Reading, error) {
	const op = "latest"
	var out []Reading
	r, err := c.latestRead(op, typ, loc, n, &out)
	if err != nil {
		return nil, err
	}
	return out, c.runOne(ctx, r)
}

// latestRead prepares Latest(typ, loc, n) into dst.
func (c *Client) latestRead(op, typ, loc string, n int, dst *[]Reading) (read, error) {
	if n < 1 || n > maxLatest {
		return read{}, pkg.Invalidf(op, "n %d outside [1, %d]", n, maxLatest)
	}
	t, err := c.target(op, typ, loc)
	if err != nil {
		return read{}, err
	}
	return read{call: call.Call{Op: latestOps[t.kind], Keys: []string{t.raw}, Args: []any{t.kind, t.field, n, unit.MsFloor(c.opt.retention)}},
		done: func(rep *call.Reply, err error) error {
			if err != nil {
				return err
			}
			rs, err := c.readings(rep, t, rep.List(0))
			if err == nil {
				*dst = rs
			}
			return err
		}}, nil
}

// Current returns the newest reading of typ in loc (the current
// temperature, illuminance, pressure), or ErrNotFound when there is none
// within the retention. One round trip.
func (c *Client) Current(ctx context.Context, typ, loc string) (Reading, error) {
	rs, err := c.Latest(ctx, typ, loc, 1)
	if err != nil {
		return Reading{}, err
	}
	if len(rs) == 0 {
		t, _ := c.target("current", typ, loc)
		return Reading{}, pkg.Fail("current", t.raw, ErrNotFound, nil)
	}
	return rs[0], nil
}

// defaultRangeLimit and maxRangeLimit bound the readings one Range call
// returns (its limit).
const (
	defaultRangeLimit = 10000
	maxRangeLimit     = 100000
)

// ErrTruncated is returned, with the readings, by Range and Since when
// the range holds more readings than the limit: the readings are the
// oldest of the range; ask again from after the last one.
var ErrTruncated = errors.New("sensor: range truncated at the limit")

// Range returns the readings of typ in loc with from <= time <= to, within
// the retention, oldest first (readings of one time in the order they
// were written), in one round trip. It returns at most limit readings,
// the oldest of the range: 0 means 10,000, else limit is within [1,
// 100,000]. More than the limit returns the first ones and an error
// matching ErrTruncated. from after to is ErrInvalid.
func (c *Client) Range(ctx context.Context, typ, loc string, from, to time.Time, limit int) ([]Reading, error) {
	return c.rangeOf(ctx, "range", typ, loc, from.UnixMilli(), to.UnixMilli(), limit)
}

// Since returns the readings of typ in loc from t on (t included), as
// Range does, at most limit of them (0: 10,000).
func (c *Client) Since(ctx context.Context, typ, loc string, t time.Time, limit int) ([]Reading, error) {
	return c.rangeOf(ctx, "since", typ, loc, t.UnixMilli(), maxMS, limit)
}

// maxMS is a time beyond every reading's (the year 2255).
const maxMS = 9007199254740

func (c *Client) rangeOf(ctx context.Context, op, typ, loc string, from, to int64, limit int) ([]Reading, error) {
	if limit == 0 {
		limit = defaultRangeLimit
	}
	switch {
	case limit < 1 || limit > maxRangeLimit:
		return nil, pkg.Invalidf(op, "limit %d outside [1, %d]", limit, maxRangeLimit)
	case from > to:
		return nil, pkg.Invalidf(op, "from %v after to %v", time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC())
	}
	from, to = max(from, 0), min(to, maxMS)
	t, err := c.target(op, typ, loc)
	if err != nil {
		return nil, err
	}
	rep, err := c.run.Run(ctx, rangeOps[t.kind], []string{t.raw}, t.kind, t.field, from, to, limit, unit.MsFloor(c.opt.retention))
	if err != nil {
		return nil, err
	}
	truncated := rep.Int(0) == 1
	rs, err := c.readings(&rep, t, rep.List(1))
	if err == nil && truncated {
		err = pkg.Fail(op, t.raw, ErrTruncated, nil)
	}
	return rs, err
}

// readings decodes a read script's {ts, payload, ...} list.
func (c *Client) readings(rep *call.Reply, t target, items []any) ([]Reading, error) {
	if err := rep.Err(); err != nil {
		return nil, err
	}
	out := make([]Reading, 0, len(items)/2)
	for i := 0; i+1 < len(items); i += 2 {
		ts, err1 := toInt(items[i])
		s, ok := items[i+1].(string)
		if err1 != nil || !ok {
			rep.Corruptf(t.raw, "reply item %d is not a time and a member", i/2)
			return nil, rep.Err()
		}
		var r Reading
		var err error
		if t.compact {
			r, err = decodeCompact(t.typ, t.loc, s, ts)
		} else if t.kind == "list" {
			r, err = decode(t.typ, t.loc, s, -1)
		} else {
			r, err = decode(t.typ, t.loc, s, ts)
		}
		if err != nil {
			rep.Corruptf(t.raw, "%v", err)
			return nil, rep.Err()
		}
		out = append(out, r)
	}
	return out, nil
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, strconv.ErrSyntax
}

// decodeCompact parses a compact entry, "value|unit|entity|rid".
func decodeCompact(typ, loc, s string, ts int64) (Reading, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 {
		return Reading{}, errors.New("compact entry " + strconv.Quote(clip(s)) + " has not 4 fields")
	}
	r := Reading{Type: typ, Location: loc, Time: time.UnixMilli(ts).UTC(), Unit: parts[1], EntityID: parts[2], ID: parts[3]}
	if parts[0] != "" {
		v, err := strconv.ParseFloat(parts[0], 64)
		if err != nil {
			return Reading{}, errors.New("compact entry " + strconv.Quote(clip(s)) + ": value is not a number")
		}
		r.Value, r.HasValue = v, true
	}
	if typ == Motion {
		switch {
		case r.HasValue && r.Value == 1:
			r.State = On
		case r.HasValue && r.Value == 0:
			r.State = Off
		default:
			return Reading{}, errors.New("compact entry " + strconv.Quote(clip(s)) + ": not a motion state")
		}
	}
	return r, nil
}
