package dashboard

import (
	"fmt"
	"testing"
	"time"
)

func TestThrottleWindowAndBound(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	for i := 0; i < maxGuesses; i++ {
		if !th.allow("10.0.0.1:1") {
			t.Fatalf("refused after %d guesses", i)
		}
		th.fail("10.0.0.1:1")
	}
	if th.allow("10.0.0.1:2") {
		t.Fatal("allowed past maxGuesses (the port is not the client)")
	}
	now = now.Add(guessWindow)
	if !th.allow("10.0.0.1:1") {
		t.Fatal("still refused in the next window")
	}
	// A flood from many addresses tracks at most maxGuessers of them;
	// the rest share one budget.
	for i := 0; i < 3*maxGuessers; i++ {
		th.fail(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255))
	}
	if n := len(th.fails); n > maxGuessers+1 {
		t.Fatalf("%d addresses tracked, want at most %d", n, maxGuessers+1)
	}
	if th.allow("192.0.2.99:1") {
		t.Fatal("a new address in a flooded window got a fresh budget")
	}
}
