package dashboard

import (
	"net"
	"sync"
	"time"
)

// Wrong tokens are throttled per client address: after maxGuesses in a
// guessWindow, the address is refused (429) until the window ends. A
// 32-hex-digit token then takes longer than the universe to guess.
const (
	maxGuesses  = 10
	guessWindow = time.Minute
	// maxGuessers bounds the addresses tracked in one window; past it,
	// every new address shares one budget, so a flood from many
	// addresses neither grows memory nor gets more guesses.
	maxGuessers = 4096
)

// throttle counts wrong tokens per client address in fixed windows.
type throttle struct {
	mu    sync.Mutex
	start time.Time
	fails map[string]int
	now   func() time.Time
}

func newThrottle() *throttle { return &throttle{fails: map[string]int{}, now: time.Now} }

// host is the address a remote address counts under: its IP, or the
// shared bucket "" once the window tracks maxGuessers addresses.
func (t *throttle) host(remote string) string {
	h, _, err := net.SplitHostPort(remote)
	if err != nil {
		h = remote
	}
	if _, ok := t.fails[h]; !ok && len(t.fails) >= maxGuessers {
		return ""
	}
	return h
}

// roll starts a new window when the current one has ended.
func (t *throttle) roll() {
	if now := t.now(); now.Sub(t.start) >= guessWindow {
		t.start, t.fails = now, map[string]int{}
	}
}

// allow reports whether remote may try a token now.
func (t *throttle) allow(remote string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll()
	return t.fails[t.host(remote)] < maxGuesses
}

// fail counts a wrong token from remote.
func (t *throttle) fail(remote string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll()
	t.fails[t.host(remote)]++
}
