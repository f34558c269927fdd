package sensor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// cmdCounter is a go-redis hook that counts commands by name, inside
// pipelines too.
type cmdCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *cmdCounter) count(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.n[strings.ToLower(c.Name())]++
	}
}

func (h *cmdCounter) get(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[name]
}

func (h *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// Every type of a location, and every location, found from the index the
// writes maintain: no KEYS, no SCAN, one round trip each.
func TestDiscoveryWithoutKeysOrScan(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			rdb := e.FreshClient()
			cmds := &cmdCounter{n: map[string]int{}}
			rdb.AddHook(cmds)
			trips := harness.CountTrips(rdb)
			c, err := New(rdb, append([]Option{WithNamespace(e.NS)}, enc.opts...)...)
			require.NoError(t, err)
			followServerClock(e, c)
			at := e.Now().Add(-time.Minute)
			for _, r := range []Reading{
				MotionReading("kitchen", "m", true, 1, at),
				TemperatureReading("kitchen", 20, "°C", at),
				IlluminanceReading("kitchen", 300, "lux", at),
				GenericReading("pressure", "kitchen", 1013, "hPa", at),
				GenericReading("humidity", "kitchen", 40, "%", at),
				GenericReading("humidity", "bathroom", 70, "%", at),
			} {
				_, err := c.Ingest(ctx, r)
				require.NoError(t, err)
			}
			_, err = c.Types(ctx, "warm") // EVALSHA, NOSCRIPT, EVAL: the first call loads the script
			require.NoError(t, err)
			_, err = c.Locations(ctx)
			require.NoError(t, err)
			trips.Reset()
			types, err := c.Types(ctx, "kitchen")
			require.NoError(t, err)
			assert.Equal(t, []string{"humidity", Illuminance, Motion, "pressure", Temperature}, types)
			assert.Equal(t, int64(1), trips.Total())
			types, err = c.Types(ctx, "bathroom")
			require.NoError(t, err)
			assert.Equal(t, []string{"humidity"}, types)
			types, err = c.Types(ctx, "attic")
			require.NoError(t, err)
			assert.Empty(t, types)
			trips.Reset()
			locs, err := c.Locations(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"bathroom", "kitchen"}, locs)
			assert.Equal(t, int64(1), trips.Total())
			assert.Zero(t, cmds.get("keys"), "no KEYS")
			assert.Zero(t, cmds.get("scan"), "no SCAN")

			if e.Mini != nil {
				// Types leave the index with their last reading;
				// locations up to locationRefresh later.
				e.Advance(defaultRetention - time.Minute + time.Millisecond)
				types, err = c.Types(ctx, "kitchen")
				require.NoError(t, err)
				assert.Empty(t, types)
				locs, err = c.Locations(ctx)
				require.NoError(t, err)
				assert.Equal(t, []string{"bathroom", "kitchen"}, locs)
				e.Advance(locationRefresh)
				locs, err = c.Locations(ctx)
				require.NoError(t, err)
				assert.Empty(t, locs)
			}
		})
	}
}
