package main

import (
	"strings"
	"testing"
)

// TestRun runs the chat on the embedded Redis (an empty REDIS_URL) and
// checks that it shows what it says it shows.
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"system prompt pinned: true",
		"summary of 2 evicted messages: user: What is a...",
		"assistant (streamed in 12 chunks)",
		"assistant (response cache hit, model not called)",
		"refused: the daily budget of 185 tokens is spent",
		"6 answers, the model was called 5 times",
		"erased user-42: 2 conversations",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
