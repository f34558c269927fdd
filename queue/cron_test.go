package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCronNext(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	for _, c := range []struct {
		spec     string
		loc      *time.Location
		after    string
		want     string
		wantNote string
	}{
		{"*/15 * * * *", time.UTC, "2026-03-02T10:07:30Z", "2026-03-02T10:15:00Z", "step"},
		{"*/15 * * * *", time.UTC, "2026-03-02T10:15:00Z", "2026-03-02T10:30:00Z", "strictly after"},
		{"0 9 * * 1-5", time.UTC, "2026-03-06T09:00:00Z", "2026-03-09T09:00:00Z", "Friday to Monday"},
		{"30 2 1 * *", time.UTC, "2026-12-05T00:00:00Z", "2027-01-01T02:30:00Z", "year wraps"},
		{"0 0 29 2 *", time.UTC, "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z", "leap day"},
		{"0 12 13 * 5", time.UTC, "2026-03-01T00:00:00Z", "2026-03-06T12:00:00Z", "day of month OR day of week"},
		{"0 0 * * 7", time.UTC, "2026-03-02T00:00:00Z", "2026-03-08T00:00:00Z", "7 is Sunday"},
		{"5,10-12 8 * * *", time.UTC, "2026-03-02T08:06:00Z", "2026-03-02T08:10:00Z", "list and range"},
		// 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer.
		{"0 9 * * *", paris, "2026-03-28T12:00:00Z", "2026-03-29T07:00:00Z", "summer time"},
		{"0 9 * * *", paris, "2026-03-27T12:00:00Z", "2026-03-28T08:00:00Z", "winter time"},
		// 02:30 does not exist in Paris on 29 March 2026: no tick that day.
		{"30 2 * * *", paris, "2026-03-29T00:00:00Z", "2026-03-30T00:30:00Z", "skipped by DST"},
		// 02:30 happens twice on 25 October 2026: one tick, the first.
		{"30 2 * * *", paris, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z", "repeated by DST"},
		{"30 2 * * *", paris, "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "repeated by DST, once"},
	} {
		spec, err := parseCron(c.spec)
		require.NoError(t, err, c.spec)
		assert.Equal(t, utc(c.want), spec.next(utc(c.after), c.loc).UTC(), "%s (%s)", c.spec, c.wantNote)
	}
	never, err := parseCron("0 0 31 2 *")
	require.NoError(t, err)
	assert.True(t, never.next(time.Now(), time.UTC).IsZero())
	for _, bad := range []string{"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8", "*/0 * * * *", "5-1 * * * *", "a * * * *", "1,,2 * * * *"} {
		_, err := parseCron(bad)
		assert.Error(t, err, bad)
	}
}

func TestIntervalNext(t *testing.T) {
	c, err := compile("@every 1m", "")
	require.NoError(t, err)
	at := time.Date(2026, 3, 2, 10, 7, 30, 0, time.UTC)
	assert.Equal(t, time.Date(2026, 3, 2, 10, 8, 0, 0, time.UTC), c.next(at).UTC())
	assert.Equal(t, time.Date(2026, 3, 2, 10, 9, 0, 0, time.UTC), c.next(c.next(at)).UTC())
	for _, bad := range []string{"@every 1ms", "@every x", "@every 1500us", "@every -1s"} {
		_, err := compile(bad, "")
		assert.Error(t, err, bad)
	}
	_, err = compile("@every 1s", "No/Such_Zone")
	assert.Error(t, err)
}
