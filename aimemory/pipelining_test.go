package aimemory

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// Appends made at once share pipelines (WithPipelining), or go out one
// round trip each with WithPipelining(0); either way each conversation
// holds every message once, and each Append reports its own length.
func TestAppendsSharePipelines(t *testing.T) {
	for _, lanes := range []int{1, 0} {
		t.Run(fmt.Sprint("lanes=", lanes), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			rdb := e.FreshClient()
			m, err := New(rdb, WithNamespace(e.NS), WithPipelining(lanes))
			require.NoError(t, err)
			t.Cleanup(func() { _ = m.Close() })
			const convs, per = 20, 10
			trips := harness.CountTrips(rdb)
			lengths := make([][]int, convs)
			var mu sync.Mutex
			harness.AllAtOnce(convs*per, func(i int) {
				conv := fmt.Sprint("conv-", i%convs)
				a, err := m.Append(ctx, "u1", conv, []Message{msg(User, fmt.Sprint("m", i), 3)})
				if assert.NoError(t, err) {
					mu.Lock()
					lengths[i%convs] = append(lengths[i%convs], a.Length)
					mu.Unlock()
				}
			})
			for i, got := range lengths {
				assert.ElementsMatch(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, got, "conv-%d", i)
				k, err := convKey.Key(e.NS, "u1", fmt.Sprint("conv-", i))
				require.NoError(t, err)
				n, err := rdb.LLen(ctx, k).Result()
				require.NoError(t, err)
				assert.EqualValues(t, per, n)
			}
			trips.CheckShared(t, lanes, convs*per)
		})
	}
}
