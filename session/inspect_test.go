package session

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Inspect decodes a session as Get returns it, and reports as corrupt,
// unread, a session hash grown past the 1,024 fields of a record.
func TestInspectSessionBounded(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, _ := mustCreate(t, e, s, "u1")
	reg := harness.Registry(t, Schema())
	k := sessKey(t, e, "u1", sess.ID)
	in, err := reg.Inspect(ctx, e.Client, e.NS, k, "")
	require.NoError(t, err)
	require.NoError(t, in.DecodeErr)
	got, ok := in.Value.(*Session)
	require.True(t, ok, "%T", in.Value)
	assert.Equal(t, "u1", got.UserID)
	assert.Equal(t, sess.ID, got.ID)

	n, err := e.Client.HLen(ctx, k).Result()
	require.NoError(t, err)
	pad := []any{}
	for i := n; i <= 1024; i++ {
		pad = append(pad, fmt.Sprint("pad", i), "x")
	}
	require.NoError(t, e.Client.HSet(ctx, k, pad...).Err())
	in, err = reg.Inspect(ctx, e.Client, e.NS, k, "")
	require.NoError(t, err)
	assert.ErrorIs(t, in.DecodeErr, keys.ErrCorrupt)
	assert.ErrorContains(t, in.DecodeErr, "1025 fields")
	assert.ErrorContains(t, in.DecodeErr, k)
	assert.Nil(t, in.Value)
}
