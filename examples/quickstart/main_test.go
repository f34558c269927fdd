package main

import (
	"testing"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestRun runs the program on the backend the test suite runs on (the embedded Redis
// unless REDIS_ADDR or REDIS_CLUSTER_ADDRS names one).
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", connecttest.URL(0))
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
