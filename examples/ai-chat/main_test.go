package main

import (
	"strings"
	"testing"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestRun runs the chat on the backend the test suite runs on (the embedded Redis
// unless REDIS_ADDR or REDIS_CLUSTER_ADDRS names one) and
// checks that it shows what it says it shows.
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", connecttest.URL(0))
	var out strings.Builder
	stopped := connecttest.CheckShutdown(t)
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	stopped()
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
