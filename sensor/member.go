package sensor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The seed's JSON members, field for field in the seed's order, with the
// reading's ID appended (seed readers ignore a field they do not know;
// WithoutReadingIDs leaves it out).
// A field the reading does not know (an empty unit, entity ID or topic,
// a zero sequence) is left out rather than written empty; the readers
// take a missing field and an empty one alike.

type motionJSON struct {
	Timestamp   string `json:"timestamp"`
	State       string `json:"state"`
	EntityID    string `json:"entity_id,omitempty"`
	Sequence    int64  `json:"sequence,omitempty"`
	CollectedAt int64  `json:"collected_at"`
	ID          string `json:"id,omitempty"`
}

type temperatureJSON struct {
	Timestamp   string  `json:"timestamp"`
	CollectedAt int64   `json:"collected_at"`
	Value       float64 `json:"temperature"`
	Unit        string  `json:"temperature_unit,omitempty"`
	EntityID    string  `json:"entity_id,omitempty"`
	ID          string  `json:"id,omitempty"`
}

type illuminanceJSON struct {
	Timestamp   string  `json:"timestamp"`
	CollectedAt int64   `json:"collected_at"`
	Value       float64 `json:"illuminance"`
	Unit        string  `json:"illuminance_unit,omitempty"`
	EntityID    string  `json:"entity_id,omitempty"`
	ID          string  `json:"id,omitempty"`
}

type genericJSON struct {
	Data        json.RawMessage `json:"data"`
	Topic       string          `json:"original_topic,omitempty"`
	Timestamp   string          `json:"timestamp"`
	CollectedAt int64           `json:"collected_at"`
	EntityID    string          `json:"entity_id,omitempty"`
	ID          string          `json:"id,omitempty"`
}

// anyJSON reads any of the above, and the seed's own members.
type anyJSON struct {
	Timestamp   string          `json:"timestamp"`
	State       *string         `json:"state"`
	EntityID    string          `json:"entity_id"`
	Sequence    int64           `json:"sequence"`
	CollectedAt int64           `json:"collected_at"`
	Temperature *float64        `json:"temperature"`
	TempUnit    string          `json:"temperature_unit"`
	Illuminance *float64        `json:"illuminance"`
	IllumUnit   string          `json:"illuminance_unit"`
	Data        json.RawMessage `json:"data"`
	Topic       string          `json:"original_topic"`
	ID          string          `json:"id"`
}

// timeLayout is the seed's timestamp: UTC, milliseconds, "Z".
const timeLayout = "2006-01-02T15:04:05.000Z"

func isoMS(t time.Time) string { return t.UTC().Format(timeLayout) }

// encode returns the seed JSON of a prepared reading (without "id" when
// the reading has none: WithoutReadingIDs). It writes what the sensor
// collector's JSON.stringify writes: fields in its order, no HTML
// escaping ('<', '>' and '&' as themselves).
func encode(r Reading) ([]byte, error) {
	ts, col := isoMS(r.Time), r.CollectedAt.UnixMilli()
	switch r.Type {
	case Motion:
		return marshal(motionJSON{ts, r.State, r.EntityID, r.Sequence, col, r.ID})
	case Temperature:
		return marshal(temperatureJSON{ts, col, r.Value, r.Unit, r.EntityID, r.ID})
	case Illuminance:
		return marshal(illuminanceJSON{ts, col, r.Value, r.Unit, r.EntityID, r.ID})
	}
	data := r.Data
	if data == nil {
		var err error
		if data, err = marshal(valueJSON{r.Value, r.Unit}); err != nil {
			return nil, err
		}
	} else {
		var b bytes.Buffer
		if err := json.Compact(&b, data); err != nil {
			return nil, err
		}
		data = b.Bytes()
	}
	return marshal(genericJSON{data, r.Topic, ts, col, r.EntityID, r.ID})
}

// valueJSON is a generic reading's data built from Value and Unit, in
// the collector's order ({"value": 1013.25, "unit": "hPa"}).
type valueJSON struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decode parses a stored seed member of sensor type typ in location loc.
// ms is its score (the ZSET families), or -1 (the list) to take the time
// from the JSON. The error says what is wrong; the caller names the key.
func decode(typ, loc string, member string, ms int64) (Reading, error) {
	var j anyJSON
	if err := json.Unmarshal([]byte(member), &j); err != nil {
		return Reading{}, fmt.Errorf("member %.64q: %v", member, err)
	}
	r := Reading{Type: typ, Location: loc, EntityID: j.EntityID, ID: j.ID, Topic: j.Topic}
	t, err := time.Parse(time.RFC3339Nano, j.Timestamp)
	if err != nil {
		return Reading{}, fmt.Errorf("member %.64q: timestamp: %v", member, err)
	}
	if ms >= 0 {
		t = time.UnixMilli(ms).UTC() // the score is the time the queries use
	}
	r.Time = t.UTC()
	if j.CollectedAt > 0 {
		r.CollectedAt = time.UnixMilli(j.CollectedAt).UTC()
	}
	switch familyOf(typ) {
	case famMotion:
		if j.State == nil || (*j.State != On && *j.State != Off) {
			return Reading{}, fmt.Errorf("member %.64q: no motion state", member)
		}
		r.State, r.Sequence, r.HasValue = *j.State, j.Sequence, true
		if r.State == On {
			r.Value = 1
		}
	case famEnv:
		v, u := j.Temperature, j.TempUnit
		if typ == Illuminance {
			v, u = j.Illuminance, j.IllumUnit
		}
		if v == nil {
			return Reading{}, fmt.Errorf("member %.64q: no %s", member, typ)
		}
		r.Value, r.Unit, r.HasValue = *v, u, true
	case famGeneric:
		if len(j.Data) == 0 || j.Data[0] != '{' {
			return Reading{}, fmt.Errorf("member %.64q: data is not an object", member)
		}
		r.Data = j.Data
		r.Value, r.HasValue, _ = dataValue(j.Data)
		var u struct {
			Unit any `json:"unit"`
		}
		if json.Unmarshal(j.Data, &u) == nil {
			r.Unit, _ = u.Unit.(string)
		}
	}
	return r, nil
}

// valueArg is a reading's value as the write script takes it ("" for
// none).
func valueArg(r Reading) string {
	if !r.HasValue {
		return ""
	}
	return strconv.FormatFloat(r.Value, 'g', -1, 64)
}
