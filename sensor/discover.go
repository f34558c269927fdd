package sensor

import (
	"context"
	"strings"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// Types returns the sensor types with a reading in loc within the
// retention, sorted, in one round trip: one read of the index
// sensor-index:types:{location} that every write maintains (no KEYS, no
// SCAN; the sensor collector, docs/sensor-collector.md, found them with
// KEYS meta:*:{location}). A name in the index that is not a type is
// keys.ErrCorrupt naming the key.
func (c *Client) Types(ctx context.Context, loc string) ([]string, error) {
	const op = "types"
	var out []string
	r, err := c.typesRead(op, loc, &out)
	if err != nil {
		return nil, err
	}
	return out, c.runOne(ctx, r)
}

// typesRead prepares Types(loc) into dst.
func (c *Client) typesRead(op, loc string, dst *[]string) (read, error) {
	if err := checkLocation(op, loc, c.locs); err != nil {
		return read{}, err
	}
	k, err := pkg.Key(op, typesKey, c.opt.ns, loc)
	if err != nil {
		return read{}, err
	}
	return c.index(op, k, typesOp, false, dst), nil
}

// Locations returns the locations with a reading within the retention,
// sorted, in one round trip: one read of the index
// sensor-index:locations. Every write records its location there, so a
// location shows from its first reading on, and again from the next
// reading after the index was lost (evicted, flushed, or not yet
// replicated at a failover). An entry's time is moved forward at most
// once a minute, so a location stays listed up to a minute after its last
// reading leaves the retention.
func (c *Client) Locations(ctx context.Context) ([]string, error) {
	const op = "locations"
	var out []string
	r, err := c.locationsRead(op, &out)
	if err != nil {
		return nil, err
	}
	return out, c.runOne(ctx, r)
}

// locationsRead prepares Locations into dst.
func (c *Client) locationsRead(op string, dst *[]string) (read, error) {
	k, err := pkg.Key(op, locationsKey, c.opt.ns)
	if err != nil {
		return read{}, err
	}
	return c.index(op, k, locationsOp, true, dst), nil
}

// index prepares a read of an index (of locations when loc, else of a
// location's types) into dst.
func (c *Client) index(op, key string, o *call.Op, loc bool, dst *[]string) read {
	window := c.opt.retention
	if loc {
		window += locationRefresh
	}
	return read{call: call.Call{Op: o, Keys: []string{key}, Args: []any{unit.MsFloor(window)}}, done: func(rep *call.Reply, err error) error {
		if err != nil {
			return err
		}
		names := rep.Strs(0)
		if err := rep.Err(); err != nil {
			return err
		}
		for _, n := range names {
			if !nameOK(n, loc) || (!loc && n == environmental) {
				rep.Corruptf(key, "index member %q is not a %s", clip(n), strings.TrimSuffix(op, "s"))
				return rep.Err()
			}
		}
		*dst = names
		return nil
	}}
}
