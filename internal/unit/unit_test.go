package unit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redschema/redschema/internal/unit"
)

func TestMs(t *testing.T) {
	for _, c := range []struct {
		d           time.Duration
		ceil, floor int64
	}{
		{0, 0, 0},
		{time.Nanosecond, 1, 0},
		{time.Millisecond - 1, 1, 0},
		{time.Millisecond, 1, 1},
		{1500 * time.Microsecond, 2, 1},
		{2 * time.Millisecond, 2, 2},
		{time.Hour + 1, 3_600_001, 3_600_000},
		{365 * 24 * time.Hour, 31_536_000_000, 31_536_000_000},
	} {
		assert.Equal(t, c.ceil, unit.MsCeil(c.d), "MsCeil(%v)", c.d)
		assert.Equal(t, c.floor, unit.MsFloor(c.d), "MsFloor(%v)", c.d)
	}
}
