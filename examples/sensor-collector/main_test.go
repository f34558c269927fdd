package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the program on the embedded Redis (an empty REDIS_URL) and
// checks the seed's questions were answered.
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"collector: 244 messages received, 244 readings written, 0 dropped, 0 malformed",
		"Has there been motion in the study in the last 10 minutes? true",
		"When was the last motion in the study? 4m0s ago",
		"What's the current temperature in the living room? 21.0 °C",
		"(minute tier)",
		"Sensors in the kitchen: [pressure]; locations: [kitchen living_room study]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
