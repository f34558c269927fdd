package call_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// WrapPipe names the key of the command that failed, not the pipeline's
// first, and lets redis.Nil pass.
func TestWrapPipe(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	p := &call.Pkg{Name: "demo"}
	tag := "{wp}"
	good, bad, missing := e.NS.Prefix+"good"+tag, e.NS.Prefix+"bad"+tag, e.NS.Prefix+"missing"+tag
	require.NoError(t, e.Client.Set(ctx, good, "x", 0).Err())
	require.NoError(t, e.Client.HSet(ctx, bad, "f", "v").Err())
	t.Cleanup(func() { e.Client.Del(ctx, good); e.Client.Del(ctx, bad) })

	pipe := e.Client.Pipeline()
	pipe.Get(ctx, good)
	pipe.Get(ctx, missing)
	cmds, err := pipe.Exec(ctx)
	require.ErrorIs(t, err, redis.Nil)
	assert.NoError(t, p.WrapPipe(ctx, "read", cmds), "redis.Nil is no failure")

	pipe = e.Client.Pipeline()
	pipe.Get(ctx, good)
	pipe.Get(ctx, missing)
	pipe.Get(ctx, bad)
	cmds, err = pipe.Exec(ctx)
	require.Error(t, err)
	err = p.WrapPipe(ctx, "read", cmds)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	var ce *call.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, bad, ce.Key, "%v", err)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", bad))

	// Skip: one key's replies at a time; a key of another type is kept
	// aside, any other failure returned
	var corrupt []error
	for i, want := range []bool{false, false, true} {
		skip, err := p.Skip(ctx, "read", &corrupt, cmds[i])
		require.NoError(t, err, i)
		assert.Equal(t, want, skip, i)
	}
	require.Len(t, corrupt, 1)
	assert.ErrorIs(t, corrupt[0], keys.ErrCorrupt)
	assert.Contains(t, corrupt[0].Error(), fmt.Sprintf("%q", bad))
	down := redis.NewStringCmd(ctx, "get", good)
	down.SetErr(errors.New("connection refused"))
	skip, err := p.Skip(ctx, "read", &corrupt, cmds[0], down)
	assert.True(t, skip)
	require.Error(t, err)
	assert.NotErrorIs(t, err, keys.ErrCorrupt)
	assert.Len(t, corrupt, 1, "only a key of another type is kept aside")
}
