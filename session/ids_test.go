package session

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIDEntropy draws 100k session IDs: all unique, 22 URL-safe characters
// decoding to 128 bits, each bit set about half of the time.
func TestIDEntropy(t *testing.T) {
	const n = 100_000
	seen := make(map[string]struct{}, n)
	var ones [IDBytes * 8]int
	for i := 0; i < n; i++ {
		id, err := NewID()
		require.NoError(t, err)
		if _, dup := seen[id]; dup {
			t.Fatalf("duplicate ID %q after %d", id, i)
		}
		seen[id] = struct{}{}
		require.Len(t, id, 22)
		raw, err := b64.DecodeString(id)
		require.NoError(t, err)
		require.Len(t, raw, IDBytes)
		for j, b := range raw {
			for k := 0; k < 8; k++ {
				ones[j*8+k] += int(b>>k) & 1
			}
		}
	}
	// Each bit is Binomial(n, 1/2): sd = 158; allow 6 sd.
	for i, c := range ones {
		assert.InDelta(t, n/2, c, 950, "bit %d", i)
	}
}

// TestCreateUniqueConcurrent creates sessions from many goroutines; every
// ID is distinct and listed.
func TestCreateUniqueConcurrent(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	const workers, each = 50, 20
	var mu sync.Mutex
	ids := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				sess, _, err := s.Create(ctx, Info{UserID: "u1"})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				ids[sess.ID] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, ids, workers*each)
	list, err := s.List(ctx, "u1")
	require.NoError(t, err)
	assert.Len(t, list, workers*each)
}
