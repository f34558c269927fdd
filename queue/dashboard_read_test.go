package queue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

func TestNames(t *testing.T) {
	env := harness.New(t)
	names, err := queue.Names(env.Ctx(), env.Client, env.NS)
	require.NoError(t, err)
	require.Empty(t, names)
	for _, n := range []string{"b-mail", "a:colon", "c"} {
		q, err := queue.New[string](env.Client, n, queue.WithNamespace(env.NS))
		require.NoError(t, err)
		_, err = q.Enqueue(env.Ctx(), "x")
		require.NoError(t, err)
	}
	names, err = queue.Names(env.Ctx(), env.Client, env.NS)
	require.NoError(t, err)
	require.Equal(t, []string{"a:colon", "b-mail", "c"}, names)
}
