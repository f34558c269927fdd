package sensor_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/sensor"
)

// An unreachable server is never reported as a business answer: every
// call fails with an error, never ErrNotFound, ErrTooMany,
// ErrInvalid or ErrCorrupt.
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	c, err := sensor.New(pc, sensor.WithNamespace(e.NS))
	require.NoError(t, err)
	now := e.Now()
	_, err = c.Ingest(ctx, sensor.TemperatureReading("kitchen", 21, "°C", now))
	require.NoError(t, err)

	// A cluster client learns the commands' key positions (COMMAND) on its
	// first plain command, with a timeout of its own (5 s in go-redis
	// v9.22) rather than the caller's: warm it, as connect.Open does, so
	// the calls below are bounded by their own deadlines.
	_, err = c.Current(ctx, "temperature", "kitchen")
	require.NoError(t, err)

	p.Stall()
	defer p.Resume()
	sentinels := []error{sensor.ErrNotFound, sensor.ErrTooMany, sensor.ErrInvalid, keys.ErrCorrupt}
	for name, op := range map[string]func(ctx context.Context) error{
		"ingest": func(ctx context.Context) error {
			_, err := c.Ingest(ctx, sensor.TemperatureReading("kitchen", 22, "°C", now.Add(time.Second)))
			return err
		},
		"batch": func(ctx context.Context) error {
			_, err := c.IngestBatch(ctx, []sensor.Reading{sensor.TemperatureReading("hall", 20, "°C", now)})
			return err
		},
		"current": func(ctx context.Context) error { _, err := c.Current(ctx, "temperature", "kitchen"); return err },
		"latest":  func(ctx context.Context) error { _, err := c.Latest(ctx, "temperature", "kitchen", 5); return err },
		"range": func(ctx context.Context) error {
			_, err := c.Range(ctx, "temperature", "kitchen", now.Add(-time.Hour), now, 0)
			return err
		},
		"aggregate": func(ctx context.Context) error {
			_, err := c.Aggregate(ctx, "temperature", "kitchen", now.Add(-time.Hour), now, time.Minute, sensor.AutoTier)
			return err
		},
		"locations": func(ctx context.Context) error { _, err := c.Locations(ctx); return err },
		"types":     func(ctx context.Context) error { _, err := c.Types(ctx, "kitchen"); return err },
		"motion":    func(ctx context.Context) error { _, err := c.SinceMotion(ctx, "kitchen"); return err },
	} {
		sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		start := time.Now()
		err := op(sctx)
		cancel()
		took := time.Since(start)
		assert.Less(t, took, 5*time.Second, "%s returned %v after its deadline", name, took)
		require.Error(t, err, name)
		for _, s := range sentinels {
			assert.NotErrorIs(t, err, s, "%s: %v", name, err)
		}
	}
}
