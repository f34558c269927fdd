package connecttest

import (
	"context"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLog is the logger go-redis writes to while a CheckShutdown is
// active: go-redis's own format on stderr, and a copy of each line for
// the checks that watch.
var redisLog = struct {
	once     sync.Once
	mu       sync.Mutex
	watchers map[*[]string]bool
}{watchers: map[*[]string]bool{}}

type teeLogger struct{ std *log.Logger }

func (l teeLogger) Printf(_ context.Context, format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	_ = l.std.Output(2, line)
	redisLog.mu.Lock()
	defer redisLog.mu.Unlock()
	for w := range redisLog.watchers {
		*w = append(*w, line)
	}
}

// CheckShutdown checks that a program, run by t between this call and a
// call of the function it returns, shuts down in order: it stops its
// servers, workers and subscribers, waits for them, and only then closes
// its Redis clients. Call the returned function once the program's run
// function has returned. It fails t
//
//   - when go-redis logged, while the program ran, that a connection
//     came back to a pool already closed ("Unexpected conn[…] state
//     changed by hook to CLOSED": a client closed while a call was still
//     using it);
//   - when goroutines of the program (package main, other than the
//     test's own) or of this module still run 2 s after it returned:
//     work that outlives the run may be using a client the run closed.
//
// Not for parallel tests: go-redis has one logger per process.
func CheckShutdown(t testing.TB) func() {
	t.Helper()
	redisLog.once.Do(func() {
		redis.SetLogger(teeLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	})
	lines := new([]string)
	redisLog.mu.Lock()
	redisLog.watchers[lines] = true
	redisLog.mu.Unlock()
	stop := func() []string {
		redisLog.mu.Lock()
		defer redisLog.mu.Unlock()
		delete(redisLog.watchers, lines)
		return *lines
	}
	t.Cleanup(func() { stop() })
	return func() {
		t.Helper()
		// A goroutine on its way out (a pipeline drainer that has just
		// answered its last caller and yields once before it sees an
		// empty queue) is not a leak: give such goroutines a moment.
		left := Leftovers()
		for deadline := time.Now().Add(2 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = Leftovers() {
			time.Sleep(10 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("%d goroutines still run after the program returned:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
		for _, l := range stop() {
			if strings.Contains(l, "Unexpected conn") {
				t.Errorf("go-redis: %s", l)
			}
		}
	}
}

// Leftovers returns the stacks of the goroutines that run code of a
// program (package main) or of this module, other than the caller's and
// those of tests (a function Test…, the testing package, connecttest).
func Leftovers() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller
		}
		ours, test := false, false
		for _, line := range strings.Split(g, "\n") {
			fn, _, _ := strings.Cut(line, "(")
			_, name, _ := strings.Cut(fn[strings.LastIndexByte(fn, '/')+1:], ".")
			switch {
			case strings.HasPrefix(line, "\t"), strings.HasPrefix(line, "created by "):
			case strings.HasPrefix(name, "Test"), strings.HasPrefix(fn, "testing."),
				strings.HasPrefix(fn, "github.com/redschema/redschema/connect/connecttest."):
				test = true
			case strings.HasPrefix(fn, "main."), strings.HasPrefix(fn, "github.com/redschema/redschema/"):
				ours = true
			}
		}
		if ours && !test {
			out = append(out, g)
		}
	}
	return out
}
