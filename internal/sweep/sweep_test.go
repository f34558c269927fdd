package sweep

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		every  time.Duration
		batch  int
		window time.Duration
		ok     bool
	}{
		{time.Second, 4, time.Minute, true},      // 4 intervals
		{time.Second, 1, 3 * time.Second, false}, // 16 intervals
		{0, 1, time.Minute, false},
		{time.Second, 0, time.Minute, false},
		{time.Second, 17, time.Minute, false},
		{2 * time.Minute, 16, time.Minute, false},
	} {
		if why := Check(16, c.every, c.batch, c.window); (why == "") != c.ok {
			t.Errorf("Check(16, %v, %d, %v) = %q", c.every, c.batch, c.window, why)
		}
	}
}

// TestLoopGoesRoundTheRing checks that the loop visits every slot, in
// batches, reports failures and ends with its context.
func TestLoopGoesRoundTheRing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[int]bool{}
	var failures int
	done := make(chan error, 1)
	go func() {
		done <- Loop(ctx, 10, time.Millisecond, 3, func(_ context.Context, first, count int) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			for i := 0; i < count; i++ {
				seen[(first+i)%10] = true
			}
			if len(seen) == 10 {
				cancel()
			}
			return count, errors.New("boom")
		}, func(error) { mu.Lock(); failures++; mu.Unlock() })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Loop returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never went round the ring")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 10 || failures == 0 {
		t.Errorf("seen %d slots, %d failures reported", len(seen), failures)
	}
}
