package sensor

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// Many writers on the same locations, singly and in batches, identical
// readings among them: every reading is stored once, the rollups count
// exactly the raw readings, the list never passes its cap, and the index
// lists every type.
func TestConcurrentWritersKeepTheInvariants(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			const listCap = 50
			c := newClient(t, e, append([]Option{WithListCap(listCap)}, enc.opts...)...)
			base := e.Now().Add(-30 * time.Minute).Truncate(time.Minute)
			locs := []string{"a", "b", "c"}
			var stored atomic.Int64
			var over atomic.Int64
			stop := make(chan struct{})
			watch := sync.WaitGroup{}
			watch.Add(1)
			go func() {
				defer watch.Done()
				tg := c.mustTarget(t, "pressure", "a")
				for {
					select {
					case <-stop:
						return
					default:
					}
					if n := e.Client.LLen(ctx, tg.raw).Val(); n > listCap {
						over.Add(1)
					}
					time.Sleep(time.Millisecond)
				}
			}()
			var wg sync.WaitGroup
			for g := range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 20 {
						at := base.Add(time.Duration(i) * time.Second) // goroutines collide on times: identical readings
						loc := locs[(g+i)%len(locs)]
						rs := []Reading{
							TemperatureReading(loc, float64(i), "°C", at),
							MotionReading(loc, "m", i%3 == 0, int64(i), at),
							GenericReading("pressure", loc, float64(i), "hPa", at),
						}
						if g%2 == 0 {
							res, err := c.IngestBatch(ctx, rs)
							if !assert.NoError(t, err) {
								return
							}
							for _, r := range res {
								if r.Outcome == Stored {
									stored.Add(1)
								}
							}
							continue
						}
						for _, r := range rs {
							res, err := c.Ingest(ctx, r)
							if !assert.NoError(t, err) {
								return
							}
							if res.Outcome == Stored {
								stored.Add(1)
							}
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			watch.Wait()
			require.Equal(t, int64(24*20*3), stored.Load(), "every reading stored (KeepBoth)")
			assert.Zero(t, over.Load(), "the list never passed its cap")
			var raw, rolled int64
			for _, loc := range locs {
				for _, typ := range []string{Temperature, Motion, "pressure"} {
					rs, err := c.Range(ctx, typ, loc, base, base.Add(time.Hour), maxRangeLimit)
					require.NoError(t, err)
					ids := map[string]bool{}
					for _, r := range rs {
						assert.False(t, ids[r.ID], "no reading twice")
						ids[r.ID] = true
					}
					if typ == "pressure" {
						if !c.opt.compact { // the compact encoding has no lists: retention bounds it
							assert.LessOrEqual(t, len(rs), listCap)
						}
					} else {
						raw += int64(len(rs))
					}
					s, err := c.Aggregate(ctx, typ, loc, base, base.Add(time.Hour), time.Hour, MinuteTier)
					require.NoError(t, err)
					for _, b := range s.Buckets {
						if typ != "pressure" {
							rolled += b.Count
						}
					}
				}
				types, err := c.Types(ctx, loc)
				require.NoError(t, err)
				assert.Equal(t, []string{Motion, "pressure", Temperature}, types)
			}
			assert.Equal(t, int64(24*20*2), raw, "the sorted sets hold every reading once")
			assert.Equal(t, raw, rolled, "the rollups count exactly the raw readings")
			t.Logf("%s: %d readings from 24 writers, %d in the sorted sets and rollups", enc.name, stored.Load(), raw)
		})
	}
}
