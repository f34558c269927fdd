package bench

import (
	"context"
	"strconv"
	"testing"

	"github.com/redschema/redschema/ratelimit"
)

// saturationGoroutines are the loads of BenchmarkSaturation: more callers
// than the 16 of the other rows, enough to keep one Redis busy.
var saturationGoroutines = []int{64, 256}

// BenchmarkSaturation runs the rate limiter's single-rule check
// (FixedWindow, over 1,000 identifiers, admitted) on exactly g goroutines.
// cmd/compare sets its rate beside redis-benchmark's for an EVALSHA of
// INCR + PEXPIRE at -c g -P 16 on the same server in the same run: the
// most checks of that shape one Redis serves (see its saturation rows).
func BenchmarkSaturation(b *testing.B) {
	for _, g := range saturationGoroutines {
		b.Run("ratelimit-fixed/g="+strconv.Itoa(g), func(b *testing.B) {
			e, l := rlOurs(b, ratelimit.FixedWindow, rlRate)
			runGoroutines(b, e, g, func(ctx context.Context, _, i int) error {
				_, err := l.Allow(ctx, rlIDNames[i%rlIDs])
				return err
			})
		})
	}
}
