package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

// An unreachable server is never reported as a decision: without degraded
// mode every call fails with an error, never a refusal (a Result with
// Allowed false), ErrLimited, ErrInvalid, ErrNoRuntimeConfig or
// ErrCorrupt.
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	l, err := ratelimit.New(pc, ratelimit.Policy{{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(10)}},
		ratelimit.WithNamespace(e.NS), ratelimit.WithRuntimeConfig())
	require.NoError(t, err)
	_, err = l.Allow(ctx, "u1")
	require.NoError(t, err)

	p.Stall()
	defer p.Resume()
	sentinels := []error{ratelimit.ErrLimited, ratelimit.ErrInvalid, ratelimit.ErrNoRuntimeConfig, keys.ErrCorrupt}
	for name, op := range map[string]func(ctx context.Context) error{
		"allow": func(ctx context.Context) error {
			r, err := l.Allow(ctx, "u1")
			assert.False(t, r.Allowed, "no admission without an answer")
			return err
		},
		"allowN":   func(ctx context.Context) error { _, err := l.AllowN(ctx, "u1", 2); return err },
		"peek":     func(ctx context.Context) error { _, err := l.Peek(ctx, "u1"); return err },
		"wait":     func(ctx context.Context) error { _, err := l.Wait(ctx, "u1", 1); return err },
		"reserve":  func(ctx context.Context) error { _, err := l.Reserve(ctx, "u1", 1); return err },
		"refund":   func(ctx context.Context) error { return l.Refund(ctx, "u1", 1) },
		"penalize": func(ctx context.Context) error { return l.Penalize(ctx, "u1", 1) },
		"block":    func(ctx context.Context) error { return l.Block(ctx, "u1", time.Minute) },
		"reset":    func(ctx context.Context) error { return l.Reset(ctx, "u1") },
		"set":      func(ctx context.Context) error { return l.SetConfig(ctx, "k1", ratelimit.Config{PerDay: 5}) },
		"config":   func(ctx context.Context) error { _, err := l.Config(ctx, "k1"); return err },
		"delete":   func(ctx context.Context) error { return l.DeleteConfig(ctx, "k1") },
	} {
		sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := op(sctx)
		cancel()
		require.Error(t, err, name)
		for _, s := range sentinels {
			assert.NotErrorIs(t, err, s, "%s: %v", name, err)
		}
	}
}
