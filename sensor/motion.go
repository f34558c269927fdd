package sensor

import (
	"context"
	"time"

	"github.com/redschema/redschema/internal/unit"
)

// SinceMotion returns how long ago, by the server clock, the latest
// "on" event of loc happened (meta:motion:{location} lastMotionTime),
// in one round trip; ErrNotFound when there was none within the
// retention. A lastMotionTime that is not Unix ms is keys.ErrCorrupt.
func (c *Client) SinceMotion(ctx context.Context, loc string) (time.Duration, error) {
	const op = "since motion"
	now, last, key, err := c.motion(ctx, op, loc)
	if err != nil {
		return 0, err
	}
	if last < 0 {
		return 0, pkg.Fail(op, key, ErrNotFound, nil)
	}
	return time.Duration(max(now-last, 0)) * time.Millisecond, nil
}

// MotionWithin reports whether loc had an "on" event within the last
// window by the server clock (after now - window; the sensor collector's
// ZRANGEBYSCORE (now-600000) +inf, its occupancy question "has there been
// motion in the last 10 minutes?"), in one round trip. window must be in
// (0, retention].
func (c *Client) MotionWithin(ctx context.Context, loc string, window time.Duration) (bool, error) {
	const op = "motion within"
	if window <= 0 || window > c.opt.retention {
		return false, pkg.Invalidf(op, "window %v outside (0, %v]", window, c.opt.retention)
	}
	now, last, _, err := c.motion(ctx, op, loc)
	if err != nil {
		return false, err
	}
	return last >= 0 && last > now-unit.MsFloor(window), nil
}

// motion returns the server clock and lastMotionTime (-1 for none).
func (c *Client) motion(ctx context.Context, op, loc string) (now, last int64, key string, err error) {
	if err := checkLocation(op, loc, c.locs); err != nil {
		return 0, 0, "", err
	}
	key, err = pkg.Key(op, motionMetaKey, c.opt.ns, loc)
	if err != nil {
		return 0, 0, "", err
	}
	rep, err := c.run.Run(ctx, motionOp, []string{key}, unit.MsFloor(c.opt.retention))
	if err != nil {
		return 0, 0, key, err
	}
	now, last = rep.Int(0), -1
	if rep.Raw(1) != nil {
		last = rep.Int(1)
	}
	return now, last, key, rep.Err()
}
