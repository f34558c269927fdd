package main

import (
	"os"
	"testing"
)

// TestRun runs the program on the backend the test suite runs on (the embedded Redis
// unless REDIS_ADDR or REDIS_CLUSTER_ADDRS names one).
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", backendURL())
	if err := run(); err != nil {
		t.Fatal(err)
	}
}

// backendURL is the REDIS_URL of the backend the test suite runs on: the
// cluster of REDIS_CLUSTER_ADDRS, the server of REDIS_ADDR, or "" (the
// embedded Redis). The program's keys are under a namespace of its own
// run, with TTLs.
func backendURL() string {
	switch {
	case os.Getenv("REDIS_CLUSTER_ADDRS") != "":
		return os.Getenv("REDIS_CLUSTER_ADDRS")
	case os.Getenv("REDIS_ADDR") != "":
		return "redis://" + os.Getenv("REDIS_ADDR") + "/0"
	}
	return ""
}
