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

// sensors answers the sensors page: the locations (sensor.Client.
// Locations), a location's sensor types (Types), and for ?location= and
// ?type= the latest readings (Latest) and the last ?hours= hours (24 by
// default, at most 744) aggregated per hour, from the rollups where they
// exist (Aggregate with the automatic tier).
func (h *Handler) sensors(r *http.Request) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	out := sensorsReply{Locations: []string{}, Types: []string{}, Latest: []readingRow{}, Buckets: []bucketRow{}}
	var err error
	if out.Locations, err = h.sensor.Locations(ctx); err != nil {
		return nil, err
	}
	loc := q.Get("location")
	if loc == "" && len(out.Locations) > 0 {
		loc = out.Locations[0]
	}
	if loc == "" {
		return out, nil
	}
	out.Location = loc
	if out.Types, err = h.sensor.Types(ctx, loc); err != nil {
		return nil, sensorErr(err)
	}
	typ := q.Get("type")
	if typ == "" && len(out.Types) > 0 {
		typ = out.Types[0]
	}
	if typ == "" {
		return out, nil
	}
	out.Type = typ
	hours := 24
	if s := q.Get("hours"); s != "" {
		if hours, err = strconv.Atoi(s); err != nil || hours < 1 || hours > 744 {
			return nil, badRequest("hours must be 1..744")
		}
	}
	latest, err := h.sensor.Latest(ctx, typ, loc, sensorLatest)
	if err != nil {
		return nil, sensorErr(err)
	}
	for _, rd := range latest {
		out.Latest = append(out.Latest, readingRow{Time: rd.Time.UTC(), Value: rd.Value, Unit: rd.Unit, State: rd.State})
	}
	to := time.Now()
	series, err := h.sensor.Aggregate(ctx, typ, loc, to.Add(-time.Duration(hours)*time.Hour), to, time.Hour)
	if err != nil {
		return nil, sensorErr(err)
	}
	out.Tier, out.EveryMs = series.Tier.String(), series.Every.Milliseconds()
	for _, b := range series.Buckets {
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
