// Package scanmany SCANs several patterns of one node together: the
// cursors of all patterns advance in one pipeline per step, so that an
// admin read of a few patterns on a small keyspace costs one round trip
// per node for its discovery (the reads of what it found are the caller's
// next pipeline).
package scanmany

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Count is the COUNT hint of each SCAN.
const Count = 1000

// Keys returns, for each MATCH glob of matches, the keys of node that
// match it, each once (SCAN's guarantee: a key present for the whole scan
// is returned; SCAN itself may return a key twice, when the keyspace is
// resized between steps, and Keys drops the repeats). Each step is one
// pipeline with one SCAN per pattern whose cursor has not come back to 0.
func Keys(ctx context.Context, node redis.UniversalClient, matches []string) ([][]string, error) {
	out := make([][]string, len(matches))
	seen := make([]map[string]struct{}, len(matches))
	for i := range seen {
		seen[i] = map[string]struct{}{}
	}
	cursors := make([]uint64, len(matches))
	open := make([]bool, len(matches))
	for i := range open {
		open[i] = true
	}
	for {
		pipe := node.Pipeline()
		cmds := make([]*redis.ScanCmd, len(matches))
		n := 0
		for i, m := range matches {
			if open[i] {
				cmds[i] = pipe.Scan(ctx, cursors[i], m, Count)
				n++
			}
		}
		if n == 0 {
			return out, nil
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i, c := range cmds {
			if c == nil {
				continue
			}
			ks, next := c.Val()
			for _, k := range ks {
				if _, dup := seen[i][k]; !dup {
					seen[i][k] = struct{}{}
					out[i] = append(out[i], k)
				}
			}
			cursors[i], open[i] = next, next != 0
		}
	}
}
