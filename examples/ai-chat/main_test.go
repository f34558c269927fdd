package main

import (
	"os"
	"strings"
	"testing"
)

// TestRun runs the chat on the backend the test suite runs on (the embedded Redis
// unless REDIS_ADDR or REDIS_CLUSTER_ADDRS names one) and
// checks that it shows what it says it shows.
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", backendURL())
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"system prompt pinned: true",
		"summary of 2 evicted messages: user: What is a...",
		"assistant (response cache hit, model not called)",
		"refused: the daily budget of 185 tokens is spent",
		"6 answers, the model was called 5 times",
		"erased user-42: 2 conversations",
		"assistant (streamed in 12 chunks)",
	}
	for _, want := range want {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
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
