package main

import "testing"

// TestRun runs the program on the embedded Redis (an empty REDIS_URL).
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
