package sensor

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Inspector holds the admin reads of the sensors, for the dashboard and
// the CLI. It is built like a Client and reads as one reads. It is safe
// for concurrent use.
type Inspector struct {
	c *Client // the reads of a Client built from the same options
}

// NewInspector returns the Inspector of the sensors under the namespace
// of WithNamespace. It takes the options of New and checks them as New
// does (ErrInvalid on a bad option, a nil client or a client without
// ContextTimeoutEnabled); those that shape a Client's reads (the
// namespace, the encoding, the rollups, the retention, the allowed types
// and locations) shape the Inspector's alike, and those of writes only
// are ignored. It does not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	c, err := build("new inspector", rdb, opts)
	if err != nil {
		return nil, err
	}
	return &Inspector{c: c}, nil
}

// View is what a dashboard's sensor page shows of one sensor type in one
// location: every location, the location's types, the type's latest
// readings there and its series.
type View struct {
	Locations []string
	Types     []string
	Latest    []Reading
	Series    Series
}

// ReadView reads what Client.Locations, Types(loc), Latest(typ, loc,
// latest) and Aggregate(typ, loc, from, to, every, AutoTier) read,
// together, in one pipeline (one round trip, one per node on a cluster),
// with their validation and their errors (joined). For admin tools, such
// as the dashboard's sensor page.
func (in *Inspector) ReadView(ctx context.Context, typ, loc string, latest int, from, to time.Time, every time.Duration) (View, error) {
	const op = "read view"
	c := in.c
	var v View
	var rs [4]read
	var err error
	if rs[0], err = c.locationsRead(op, &v.Locations); err != nil {
		return View{}, err
	}
	if rs[1], err = c.typesRead(op, loc, &v.Types); err != nil {
		return View{}, err
	}
	if rs[2], err = c.latestRead(op, typ, loc, latest, &v.Latest); err != nil {
		return View{}, err
	}
	if rs[3], err = c.aggregateRead(op, typ, loc, from, to, every, AutoTier, &v.Series); err != nil {
		return View{}, err
	}
	if err := c.runAll(ctx, rs[:]); err != nil {
		return View{}, err
	}
	return v, nil
}
