package sensor

import (
	"context"
	"strings"

	"github.com/redschema/redschema/internal/call"
)

// Types returns the sensor types with a reading in loc within the
// retention, sorted, in one round trip: one read of the index
// sensor-index:types:{location} that every write maintains (no KEYS, no
// SCAN; seed 003 found them with KEYS meta:*:{location}). A name in the
// index that is not a type is keys.ErrCorrupt naming the key.
func (c *Client) Types(ctx context.Context, loc string) ([]string, error) {
	const op = "types"
	if err := checkLocation(op, loc, c.locs); err != nil {
		return nil, err
	}
	k, err := pkg.Key(op, typesKey, c.opt.ns, loc)
	if err != nil {
		return nil, err
	}
	return c.index(ctx, op, k, typesOp, false)
}

// Locations returns the locations with a reading within the retention,
// sorted, in one round trip: one read of the index
// sensor-index:locations, which writes refresh at most once a minute per
// location and client (so a location's first reading shows at once, and
// its entry outlives its last reading by at most a minute).
func (c *Client) Locations(ctx context.Context) ([]string, error) {
	const op = "locations"
	k, err := pkg.Key(op, locationsKey, c.opt.ns)
	if err != nil {
		return nil, err
	}
	return c.index(ctx, op, k, locationsOp, true)
}

func (c *Client) index(ctx context.Context, op, key string, o *call.Op, loc bool) ([]string, error) {
	rep, err := c.run.Run(ctx, o, []string{key}, ms(c.opt.retention))
	if err != nil {
		return nil, err
	}
	names := rep.Strs(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if !nameOK(n, loc) || (!loc && n == environmental) {
			rep.Corruptf(key, "index member %q is not a %s", clip(n), strings.TrimSuffix(op, "s"))
			return nil, rep.Err()
		}
	}
	return names, nil
}
