package keys_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func guessRegistry() *keys.Registry {
	r := &keys.Registry{}
	r.MustRegister(keys.Pattern{Template: "presence:{user_id}", Type: keys.String, TTL: time.Minute, Tag: "user_id", Owner: "presence", Purpose: "status"})
	r.MustRegister(keys.Pattern{Template: "requests:total", Type: keys.Hash, TTL: time.Hour, Owner: "metrics", Purpose: "counts"})
	r.MustRegister(keys.Pattern{Template: "presence:events", Type: keys.Channel, Owner: "presence", Purpose: "events"})
	return r
}

// Guess finds the namespace a key that matches no pattern was written
// under: a longer prefix, the other hash-tag setting, or both.
func TestGuess(t *testing.T) {
	r := guessRegistry()
	none := keys.Namespace{}
	for _, tc := range []struct {
		ns   keys.Namespace
		key  string
		want keys.Namespace
		ok   bool
	}{
		{none, "ha:presence:{42}", keys.Namespace{Prefix: "ha:"}, true},
		{none, "presence:42", keys.Namespace{NoHashTags: true}, true},
		{keys.Namespace{NoHashTags: true}, "presence:{42}", none, true},
		{none, "ha:presence:42", keys.Namespace{Prefix: "ha:", NoHashTags: true}, true},
		{keys.Namespace{Prefix: "ha:"}, "ha:tenant-1:presence:{1}", keys.Namespace{Prefix: "ha:tenant-1:"}, true},
		{none, "a:b:c:requests:total", keys.Namespace{Prefix: "a:b:c:"}, true},
		{none, "a:b:c:d:requests:total", none, false}, // a prefix of four segments is not guessed
		{none, "x:presence:a:b", none, false},         // no pattern of three segments
		{none, "stray", none, false},
		{keys.Namespace{Prefix: "app:"}, "ha:presence:{1}", none, false}, // not under the prefix
	} {
		got, ok := r.Guess(tc.ns, tc.key)
		assert.Equal(t, tc.ok, ok, "%+v %q", tc.ns, tc.key)
		assert.Equal(t, tc.want, got, "%+v %q", tc.ns, tc.key)
		if ok {
			_, _, matches := r.Match(got, tc.key)
			assert.True(t, matches, "%q matches under the guess", tc.key)
		}
	}
}

// An audit whose keys match no pattern says under which namespaces they
// would, most keys first, counting at most GuessSample keys.
func TestAuditGuesses(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := guessRegistry()
	put := func(k string) { require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+k, "v", time.Minute).Err()) }
	for i := range 3 {
		put(fmt.Sprintf("ha:presence:{%d}", i))
	}
	put("presence:9")
	put("junk")
	put("presence:{1}") // matches

	rep, err := r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS})
	require.NoError(t, err)
	assert.EqualValues(t, 5, rep.Unmatched)
	assert.Equal(t, []keys.NamespaceCount{
		{Namespace: e.NS.Sub("ha:"), Keys: 3},
		{Namespace: keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}, Keys: 1},
	}, rep.Guesses)

	rep, err = r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS.Sub("ha:")})
	require.NoError(t, err)
	assert.EqualValues(t, 0, rep.Unmatched)
	assert.Empty(t, rep.Guesses, "nothing to guess when every key matches")

	pipe := e.Client.Pipeline()
	for i := range keys.GuessSample + 10 {
		pipe.Set(ctx, e.NS.Prefix+fmt.Sprintf("ha:presence:{x%d}", i), "v", time.Minute)
	}
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	rep, err = r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS})
	require.NoError(t, err)
	assert.EqualValues(t, keys.GuessSample+15, rep.Unmatched)
	var examined int64
	for _, g := range rep.Guesses {
		examined += g.Keys
	}
	assert.LessOrEqual(t, examined, int64(keys.GuessSample), "only the first GuessSample unmatched keys are examined")
	assert.Equal(t, e.NS.Sub("ha:"), rep.Guesses[0].Namespace)
}
