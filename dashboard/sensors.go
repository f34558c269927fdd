package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/redschema/redschema/sensor"
)

type readingRow struct {
	Time  time.Time `json:"time"`
	Value float64   `json:"value"`
	Unit  string    `json:"unit,omitempty"`
	State string    `json:"state,omitempty"`
}

type bucketRow struct {
	Start time.Time `json:"start"`
	Count int64     `json:"count"`
	Min   float64   `json:"min"`
	Max   float64   `json:"max"`
	Avg   float64   `json:"avg"`
}

type sensorsReply struct {
	Locations []string     `json:"locations"`
	Location  string       `json:"location,omitempty"`
	Types     []string     `json:"types"`
	Type      string       `json:"type,omitempty"`
	Latest    []readingRow `json:"latest"`
	Tier      string       `json:"tier,omitempty"`
	EveryMs   int64        `json:"every_ms,omitempty"`
	Buckets   []bucketRow  `json:"buckets"`
}

// sensorLatest is how many readings the sensors page lists.
const sensorLatest = 20

// sensors answers the sensors page: the locations, a location's sensor
// types, and for ?location= and ?type= (the first of each when not
// given) the latest readings and the last ?hours= hours (24 by default,
// at most 744) aggregated per hour, from the rollups where they exist.
// With both given (the page sends what it shows on each refresh) it is
// one pipeline, sensor.Inspector.ReadView; without, Locations and Types
// find the defaults first.
func (h *Handler) sensors(r *http.Request) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	out := sensorsReply{Locations: []string{}, Types: []string{}, Latest: []readingRow{}, Buckets: []bucketRow{}}
	hours := 24
	if s := q.Get("hours"); s != "" {
		var err error
		if hours, err = strconv.Atoi(s); err != nil || hours < 1 || hours > 744 {
			return nil, badRequest("hours must be 1..744")
		}
	}
	loc, typ := q.Get("location"), q.Get("type")
	if loc == "" {
		locs, err := h.sensor.Locations(ctx)
		if err != nil {
			return nil, err
		}
		if len(locs) == 0 {
			return out, nil
		}
		out.Locations, loc = locs, locs[0]
	}
	if typ == "" {
		types, err := h.sensor.Types(ctx, loc)
		if err != nil {
			return nil, sensorErr(err)
		}
		out.Location, out.Types = loc, append(out.Types, types...)
		if len(types) == 0 {
			if len(out.Locations) == 0 {
				if out.Locations, err = h.sensor.Locations(ctx); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
		typ = types[0]
	}
	to := time.Now()
	v, err := h.sensorInsp.ReadView(ctx, typ, loc, sensorLatest, to.Add(-time.Duration(hours)*time.Hour), to, time.Hour)
	if err != nil {
		return nil, sensorErr(err)
	}
	out.Location, out.Type = loc, typ
	out.Locations, out.Types = append([]string{}, v.Locations...), append([]string{}, v.Types...)
	for _, rd := range v.Latest {
		out.Latest = append(out.Latest, readingRow{Time: rd.Time.UTC(), Value: rd.Value, Unit: rd.Unit, State: rd.State})
	}
	out.Tier, out.EveryMs = v.Series.Tier.String(), v.Series.Every.Milliseconds()
	for _, b := range v.Series.Buckets {
		out.Buckets = append(out.Buckets, bucketRow{Start: b.Start.UTC(), Count: b.Count, Min: b.Min, Max: b.Max, Avg: b.Avg})
	}
	return out, nil
}

func sensorErr(err error) error {
	if errors.Is(err, sensor.ErrInvalid) {
		return badRequest("%v", err)
	}
	return err
}
