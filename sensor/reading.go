package sensor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// The sensor types the sensor collector's layout stores apart from the
// generic list.
const (
	Motion      = "motion"      // sensor:motion:{location} and meta:motion:{location}
	Temperature = "temperature" // sensor:environmental:{location}
	Illuminance = "illuminance" // sensor:environmental:{location}
)

// environmental is the seed's key segment for temperature and illuminance;
// as a type it would name that sorted set as a list, so it is refused.
const environmental = "environmental"

// Motion states.
const (
	On  = "on"
	Off = "off"
)

// Bounds of a reading's fields.
const (
	maxNameLen   = 64        // a type or a location
	maxUnitLen   = 32        // Unit
	maxEntityLen = 128       // EntityID
	maxTopicLen  = 256       // Topic
	maxDataLen   = 8 << 10   // a generic reading's Data, JSON-encoded
	maxIDLen     = 64        // ID
	maxSequence  = 1<<53 - 1 // Sequence (exact in Lua's doubles)
)

// minTime is the earliest timestamp a reading may have.
var minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Reading is one sensor reading, in and out.
//
// Which fields are stored depends on the type (the sensor collector's
// JSON, plus the reading's ID):
//
//   - Motion: Time, State ("on" or "off"), EntityID, Sequence,
//     CollectedAt. Value is 1 for "on" and 0 for "off" (the rollups
//     aggregate it).
//   - Temperature, Illuminance: Time, CollectedAt, Value, Unit (and
//     EntityID when set).
//   - Any other type: Time, CollectedAt, Topic, and Data, the payload
//     object; a reading without Data stores {"value": Value, "unit":
//     Unit}. Read back, Value and Unit are Data's "value" (when it is a
//     number) and "unit" (when it is a string); HasValue says whether
//     there was a number.
//
// What a reading does not know is left out of the stored JSON, not
// written empty: an empty Unit, EntityID or Topic, and a zero Sequence.
// Read back, a missing field is the zero value (as is an empty one,
// which earlier versions wrote).
type Reading struct {
	Type     string    // "motion", "temperature", "illuminance", or any other type (1 to 64 of a-z 0-9 _ -)
	Location string    // "study", "living_room" (1 to 64 of A-Z a-z 0-9 _ - .)
	Time     time.Time // when it was measured (JSON "timestamp"); stored to the millisecond
	Value    float64   // the measurement; motion: 1 on, 0 off
	HasValue bool      // a generic reading's Data holds a numeric "value" (always true for the built-in types)
	Unit     string    // "°C", "lux", "hPa"; at most 32 bytes
	State    string    // motion: On or Off
	EntityID string    // "binary_sensor.motion_study"; at most 128 bytes
	Sequence int64     // motion: the sender's sequence number (0: none; at most 2^53-1)
	// Data is a generic reading's payload object ({"value": 1013.25,
	// "unit": "hPa", "trend": "stable"}), as JSON, at most 8 KiB. Nil on
	// write: built from Value and Unit.
	Data json.RawMessage
	// Topic is the MQTT topic a generic reading came from
	// ("original_topic"); at most 256 bytes.
	Topic string
	// CollectedAt is when the collector received it ("collected_at"); zero
	// on write means the local clock at Ingest.
	CollectedAt time.Time
	// ID identifies the reading: it makes two identical readings two
	// members, and a resent write recognisable. Empty on write: Ingest
	// draws a random one. Letters, digits, '-' and '_', at most 64 bytes.
	ID string
}

// MotionReading returns a motion event: on (motion detected) or off.
func MotionReading(location, entityID string, on bool, sequence int64, at time.Time) Reading {
	r := Reading{Type: Motion, Location: location, Time: at, State: Off, EntityID: entityID, Sequence: sequence, HasValue: true}
	if on {
		r.State, r.Value = On, 1
	}
	return r
}

// TemperatureReading returns a temperature reading in unit ("°C").
func TemperatureReading(location string, value float64, unit string, at time.Time) Reading {
	return Reading{Type: Temperature, Location: location, Time: at, Value: value, Unit: unit, HasValue: true}
}

// IlluminanceReading returns an illuminance reading in unit ("lux").
func IlluminanceReading(location string, value float64, unit string, at time.Time) Reading {
	return Reading{Type: Illuminance, Location: location, Time: at, Value: value, Unit: unit, HasValue: true}
}

// GenericReading returns a reading of any other type with a numeric
// value: stored as {"data": {"value": value, "unit": unit}, ...}.
func GenericReading(sensorType, location string, value float64, unit string, at time.Time) Reading {
	return Reading{Type: sensorType, Location: location, Time: at, Value: value, Unit: unit, HasValue: true}
}

// family is where a type's readings live.
type family uint8

const (
	famMotion family = iota
	famEnv
	famGeneric
)

func familyOf(typ string) family {
	switch typ {
	case Motion:
		return famMotion
	case Temperature, Illuminance:
		return famEnv
	}
	return famGeneric
}

// checkType validates a type name: 1 to maxNameLen bytes of lower-case
// letters, digits, '_' and '-', not "environmental", and known to the
// allow-list when there is one.
func checkType(op, t string, allow map[string]bool) error {
	if !nameOK(t, false) {
		return pkg.Invalidf(op, "sensor type %q: want 1 to %d of a-z 0-9 _ -", clip(t), maxNameLen)
	}
	if t == environmental {
		return pkg.Invalidf(op, "sensor type %q is reserved (temperature and illuminance share that key)", t)
	}
	if allow != nil && !allow[t] {
		return pkg.Invalidf(op, "unknown sensor type %q", t)
	}
	return nil
}

// checkLocation validates a location: 1 to maxNameLen bytes of letters,
// digits, '_', '-' and '.', known to the allow-list when there is one.
func checkLocation(op, l string, allow map[string]bool) error {
	if !nameOK(l, true) {
		return pkg.Invalidf(op, "location %q: want 1 to %d of A-Z a-z 0-9 _ - .", clip(l), maxNameLen)
	}
	if allow != nil && !allow[l] {
		return pkg.Invalidf(op, "unknown location %q", l)
	}
	return nil
}

func nameOK(s string, loc bool) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
		case loc && (c >= 'A' && c <= 'Z' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// clip shortens a bad value for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// textOK reports whether s is valid UTF-8 of at most n bytes without
// control characters, quotes or backslashes (so that it is the same
// bytes inside and outside JSON).
func textOK(s string, n int) bool {
	if len(s) > n || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' })
}

func idOK(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// prepare validates r for a write and completes it: the reading's ID
// (drawn when empty), CollectedAt, a motion reading's Value. now is the
// local clock.
func (c *Client) prepare(op string, r Reading, now time.Time) (Reading, error) {
	if err := checkType(op, r.Type, c.types); err != nil {
		return r, err
	}
	if err := checkLocation(op, r.Location, c.locs); err != nil {
		return r, err
	}
	switch {
	case r.Time.Before(minTime):
		return r, pkg.Invalidf(op, "timestamp %v before %v", r.Time, minTime)
	case r.Time.After(now.Add(c.opt.maxFuture)):
		return r, pkg.Invalidf(op, "timestamp %v more than %v in the future", r.Time.UTC(), c.opt.maxFuture)
	case math.IsNaN(r.Value) || math.IsInf(r.Value, 0):
		return r, pkg.Invalidf(op, "value %v", r.Value)
	case !textOK(r.Unit, maxUnitLen):
		return r, pkg.Invalidf(op, "unit %q: at most %d bytes of UTF-8 text without quotes, backslashes or control characters", clip(r.Unit), maxUnitLen)
	case !textOK(r.EntityID, maxEntityLen):
		return r, pkg.Invalidf(op, "entity ID %q: at most %d bytes of UTF-8 text without quotes, backslashes or control characters", clip(r.EntityID), maxEntityLen)
	case !textOK(r.Topic, maxTopicLen):
		return r, pkg.Invalidf(op, "topic %q: at most %d bytes of UTF-8 text without quotes, backslashes or control characters", clip(r.Topic), maxTopicLen)
	case r.Sequence < 0 || r.Sequence > maxSequence:
		return r, pkg.Invalidf(op, "sequence %d outside [0, 2^53-1]", r.Sequence)
	case r.ID != "" && !idOK(r.ID):
		return r, pkg.Invalidf(op, "reading ID %q: want 1 to %d of A-Z a-z 0-9 - _", clip(r.ID), maxIDLen)
	case !r.CollectedAt.IsZero() && r.CollectedAt.Before(minTime):
		return r, pkg.Invalidf(op, "collected_at %v before %v", r.CollectedAt, minTime)
	}
	switch familyOf(r.Type) {
	case famMotion:
		switch r.State {
		case On:
			r.Value = 1
		case Off:
			r.Value = 0
		default:
			return r, pkg.Invalidf(op, "motion state %q: want %q or %q", clip(r.State), On, Off)
		}
		r.HasValue = true
	case famEnv:
		if r.State != "" {
			return r, pkg.Invalidf(op, "a %s reading has no state", r.Type)
		}
		r.HasValue = true
	case famGeneric:
		if r.State != "" {
			return r, pkg.Invalidf(op, "a %s reading has no state", r.Type)
		}
		if r.Data != nil {
			v, has, err := dataValue(r.Data)
			if err != nil {
				return r, pkg.Invalidf(op, "data: %v", err)
			}
			if len(r.Data) > maxDataLen {
				return r, pkg.Invalidf(op, "data of %d bytes, at most %d", len(r.Data), maxDataLen)
			}
			r.Value, r.HasValue = v, has
		} else {
			r.HasValue = true
		}
	}
	// After the switch: a generic reading's value comes from its data.
	if math.Abs(r.Value) >= 1e21 {
		return r, pkg.Invalidf(op, "value %v: magnitude at most 1e21", r.Value)
	}
	if r.ID == "" {
		r.ID = newID()
	}
	if r.CollectedAt.IsZero() {
		r.CollectedAt = now
	}
	r.Time = r.Time.Truncate(time.Millisecond)
	r.CollectedAt = r.CollectedAt.Truncate(time.Millisecond)
	return r, nil
}

// dataValue checks that data is a JSON object and returns its numeric
// "value", if any.
func dataValue(data json.RawMessage) (float64, bool, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return 0, false, errNotObject
	}
	raw, ok := obj["value"]
	if !ok {
		return 0, false, nil
	}
	var v *float64 // nil for JSON null: no value, as the scripts read it
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return 0, false, nil
	}
	return *v, true, nil
}

var errNotObject = jsonError("not a JSON object")

type jsonError string

func (e jsonError) Error() string { return string(e) }
