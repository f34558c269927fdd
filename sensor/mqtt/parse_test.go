package mqtt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/sensor"
)

// Parse's result says whether its Value is known (issue 33, defect 13:
// a generic payload left Value at 0 without saying so): HasValue is set
// with the value, and only with it.
func TestParseSaysWhetherValueIsKnown(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		topic, payload string
		value          float64
		has            bool
	}{
		{"automation/raw/pressure/kitchen", `{"value":1013.25,"unit":"hPa","trend":"stable"}`, 1013.25, true},
		{"automation/raw/pressure/kitchen", `{"value":0,"unit":"hPa"}`, 0, true},
		{"automation/raw/pressure/kitchen", `{"unit":"hPa","trend":"stable"}`, 0, false},
		{"automation/raw/pressure/kitchen", `{"value":"high"}`, 0, false},
		{"automation/raw/pressure/kitchen", `{"value":null,"unit":"hPa"}`, 0, false},
		{"automation/raw/motion/hall", `{"state":null}`, 0, false},
		{"automation/raw/pressure/kitchen", `1013.25`, 1013.25, true},
		{"automation/raw/temperature/hall", `21.75`, 21.75, true},
		{"automation/raw/temperature/hall", `{"temperature":21.75}`, 21.75, true},
		{"automation/raw/motion/hall", `on`, 1, true},
		{"automation/raw/motion/hall", `off`, 0, true},
		{"automation/raw/motion/hall", `{"state":true}`, 1, true},
		{"automation/raw/motion/hall", `{"state":"off","entity_id":"m"}`, 0, true},
	} {
		r, err := Parse(tc.topic, []byte(tc.payload), now)
		require.NoError(t, err, tc.payload)
		assert.Equal(t, tc.has, r.HasValue, "%s %s", tc.topic, tc.payload)
		assert.Equal(t, tc.value, r.Value, "%s %s", tc.topic, tc.payload)
	}
}

// A null value is no value: a temperature without one is refused, as
// one without the field is, never stored as 0.
func TestParseNullIsNoValue(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	_, err := Parse("automation/raw/temperature/hall", []byte(`{"value":null,"unit":"°C"}`), now)
	require.ErrorIs(t, err, ErrInvalid)
	r, err := Parse("automation/raw/motion/hall", []byte(`{"state":null}`), now)
	require.NoError(t, err)
	assert.Empty(t, r.State, "not off")
}

// A bare payload knows no unit, entity ID or sequence: Parse leaves them
// empty (and the sensor package then leaves them out of the stored JSON).
func TestParseBarePayloadsKnowNoMore(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	r, err := Parse("automation/raw/temperature/hall", []byte("21.75"), now)
	require.NoError(t, err)
	assert.Equal(t, sensor.Reading{Type: sensor.Temperature, Location: "hall", Time: now, Value: 21.75, HasValue: true, CollectedAt: now}, r)
	r, err = Parse("automation/raw/motion/hall", []byte("off"), now)
	require.NoError(t, err)
	assert.Equal(t, sensor.Reading{Type: sensor.Motion, Location: "hall", Time: now, State: sensor.Off, HasValue: true, CollectedAt: now}, r)
}
