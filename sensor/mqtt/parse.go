package mqtt

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/sensor"
)

// Parser turns one MQTT message into a reading; received is when the
// collector got it. An error (matching ErrInvalid) skips the message.
type Parser func(topic string, payload []byte, received time.Time) (sensor.Reading, error)

// defaultTopic is the filter the collector subscribes to by default: the
// sensor collector's raw sensor topics, automation/raw/{type}/{location}.
const defaultTopic = "automation/raw/+/+"

// Parse is the default Parser. The topic's last two levels are the sensor
// type and the location (automation/raw/temperature/living_room). The
// payload is one of:
//
//   - a JSON object. "timestamp" (RFC 3339, or Unix milliseconds as a
//     number) is the reading's time (default: received). Motion: "state"
//     ("on"/"off" or true/false), "entity_id", "sequence". Temperature
//     and illuminance: "value" (or the type's name) and "unit" (or
//     "<type>_unit"), "entity_id". Any other type: the object without its
//     "timestamp" is the reading's data (as in the sensor collector's
//     {"value": 1013.25, "unit": "hPa", "trend": "stable"}), and the topic
//     its original_topic.
//   - a bare number: the value, timed at reception.
//   - on / off (or ON / OFF): a motion state, timed at reception.
//
// The result's HasValue says whether its Value is known: always for
// motion (1 for "on", 0 for "off"), temperature, illuminance and a bare
// number; for any other type's object, only when its "value" is a
// number (otherwise Value is 0 and HasValue false: the reading is stored
// with its data, and the rollups skip it). What the payload does not say
// (a unit, an entity ID, a sequence) is left empty, and the sensor
// package leaves it out of the stored JSON.
func Parse(topic string, payload []byte, received time.Time) (sensor.Reading, error) {
	const op = "parse"
	levels := strings.Split(topic, "/")
	if len(levels) < 2 || levels[len(levels)-1] == "" || levels[len(levels)-2] == "" {
		return sensor.Reading{}, pkg.Invalidf(op, "topic %q has no type and location levels", topic)
	}
	r := sensor.Reading{Type: levels[len(levels)-2], Location: levels[len(levels)-1], Time: received, CollectedAt: received}
	p := bytes.TrimSpace(payload)
	switch {
	case len(p) > 0 && p[0] == '{':
		return parseObject(op, r, topic, p)
	case strings.EqualFold(string(p), sensor.On), strings.EqualFold(string(p), sensor.Off):
		r.State = strings.ToLower(string(p))
		motionValue(&r)
		return r, nil
	}
	v, err := strconv.ParseFloat(string(p), 64)
	if err != nil {
		return sensor.Reading{}, pkg.Invalidf(op, "payload %.40q on %q is not a number, on/off or a JSON object", p, topic)
	}
	r.Value, r.HasValue = v, true
	if r.Type == sensor.Motion {
		return sensor.Reading{}, pkg.Invalidf(op, "a motion payload is on/off, not %q", p)
	}
	return r, nil
}

func parseObject(op string, r sensor.Reading, topic string, p []byte) (sensor.Reading, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return sensor.Reading{}, pkg.Invalidf(op, "payload on %q: %v", topic, err)
	}
	if raw, ok := obj["timestamp"]; ok {
		t, err := parseTime(raw)
		if err != nil {
			return sensor.Reading{}, pkg.Invalidf(op, "payload on %q: timestamp: %v", topic, err)
		}
		r.Time = t
		delete(obj, "timestamp")
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(obj[k], &s)
		return s
	}
	num := func(k string) (float64, bool) {
		var f *float64 // nil for JSON null: no value, not 0
		if err := json.Unmarshal(obj[k], &f); err != nil || f == nil {
			return 0, false
		}
		return *f, true
	}
	r.EntityID = str("entity_id")
	switch r.Type {
	case sensor.Motion:
		var b *bool // nil for JSON null: no state, not "off"
		switch {
		case json.Unmarshal(obj["state"], &b) == nil && b != nil:
			r.State = sensor.Off
			if *b {
				r.State = sensor.On
			}
		default:
			r.State = strings.ToLower(str("state"))
		}
		if s, ok := num("sequence"); ok {
			r.Sequence = int64(s)
		}
		motionValue(&r)
	case sensor.Temperature, sensor.Illuminance:
		v, ok := num("value")
		if !ok {
			v, ok = num(r.Type)
		}
		if !ok {
			return sensor.Reading{}, pkg.Invalidf(op, "payload on %q has no numeric value", topic)
		}
		r.Value, r.HasValue = v, true
		r.Unit = str("unit")
		if r.Unit == "" {
			r.Unit = str(r.Type + "_unit")
		}
	default:
		data, err := json.Marshal(obj)
		if err != nil {
			return sensor.Reading{}, pkg.Invalidf(op, "payload on %q: %v", topic, err)
		}
		r.Data, r.Topic = data, topic
		r.Value, r.HasValue = num("value")
	}
	return r, nil
}

// motionValue sets a motion reading's Value from its state, as the
// sensor package stores it: 1 for "on", 0 for "off".
func motionValue(r *sensor.Reading) {
	if r.Type != sensor.Motion {
		return
	}
	switch r.State {
	case sensor.On:
		r.Value, r.HasValue = 1, true
	case sensor.Off:
		r.Value, r.HasValue = 0, true
	}
}

func parseTime(raw json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return time.Parse(time.RFC3339Nano, s)
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return time.Time{}, err
	}
	ms, err := n.Int64()
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}
