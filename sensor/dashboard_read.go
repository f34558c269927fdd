package sensor

import (
	"context"
	"errors"
	"time"

	"github.com/redschema/redschema/internal/call"
)

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

// View is what a dashboard's sensor page shows of one sensor type in one
// location: every location, the location's types, the type's latest
// readings there and its series.
type View struct {
	Locations []string
	Types     []string
	Latest    []Reading
	Series    Series
}

// ReadView reads Locations, Types(loc), Latest(typ, loc, latest) and
// Aggregate(typ, loc, from, to, every, opts...) together, in one
// pipeline (one round trip per node on a cluster), with their
// validation and their errors (joined). For admin tools, such as the
// dashboard's sensor page.
func (c *Client) ReadView(ctx context.Context, typ, loc string, latest int, from, to time.Time, every time.Duration, opts ...AggregateOption) (View, error) {
	const op = "read view"
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
	if rs[3], err = c.aggregateRead(op, typ, loc, from, to, every, opts, &v.Series); err != nil {
		return View{}, err
	}
	if err := c.runAll(ctx, rs[:]); err != nil {
		return View{}, err
	}
	return v, nil
}
