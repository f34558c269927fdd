package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestRun runs the program on the suite's backend and checks that the
// seed's questions (the occupancy, light and behaviour agents') were
// answered and the keyspace audit is clean.
func TestRun(t *testing.T) {
	prefix := connecttest.Use(t, "collector", 1)
	start := time.Now()
	var out bytes.Buffer
	stopped := connecttest.CheckShutdown(t)
	if err := run(prefix, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	stopped()
	want := []string{
		"collector: 244 messages received, 244 readings written, 0 dropped, 0 malformed",
		"Recent motion events in the study: 10, newest off ",
		"Has there been motion in the study in the last 10 minutes? true",
		"When was the last motion in the study? 4m0s ago",
		"Recent temperature readings in the living room: 21.0 21.1 21.2 21.3 21.4",
		"What's the current temperature in the living room? 21.0 °C",
		"(minute tier)",
		"Environmental conditions in the living room during the episode ",
		"  temperature 3 readings, 21.5 to 21.7 °C",
		"  illuminance 3 readings, 470.0 to 480.0 lux",
		"Sensors in the kitchen: [pressure]; locations: [kitchen living_room study]",
		"Last 10 pressure readings in the kitchen: 1013.16 ... 1013.25 hPa",
		`audit of "` + prefix + `": `,
		" keys, 0 problems\n",
	}
	// The hour of readings is all "today" unless the test began in the
	// first hour of the day.
	if y, m, d := start.Add(-62 * time.Minute).Date(); time.Date(y, m, d, 0, 0, 0, 0, time.Local).Equal(time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.Local)) {
		want = append(want, "All motion events in the study today: 61 events since 00:00, 3 of them motion")
	} else {
		want = append(want, "All motion events in the study today: ")
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out.String())
	}
}
