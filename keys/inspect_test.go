package keys_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestInspect(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := &keys.Registry{}
	counter := r.MustRegister(keys.Pattern{Template: "hits:{page}", Type: keys.String, TTL: time.Hour, Tag: "page", Owner: "demo", Purpose: "hits"})
	log := r.MustRegister(keys.Pattern{Template: "log:{page}", Type: keys.List, TTL: time.Hour, Tag: "page", Owner: "demo", Purpose: "log"})
	bare := r.MustRegister(keys.Pattern{Template: "bare:{page}", Type: keys.String, TTL: time.Hour, Tag: "page", Owner: "demo", Purpose: "no decoder"})
	ch := r.MustRegister(keys.Pattern{Template: "events:{page}", Type: keys.Channel, Owner: "demo", Purpose: "events"})
	r.SetDecoder(counter, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		n, err := strconv.Atoi(v)
		return map[string]any{"page": ref.Arg("page"), "hits": n}, err
	}))
	r.SetDecoder(log, keys.ListDecoder(func(_ keys.Ref, s string) (any, error) { return s, nil }))
	assert.Panics(t, func() { r.SetDecoder(ch, nil) }, "channels have no value")
	assert.Panics(t, func() { (&keys.Registry{}).SetDecoder(counter, nil) }, "not registered in that registry")

	key := func(tp *keys.Template, page string) string {
		k, err := tp.Key(e.NS, page)
		require.NoError(t, err)
		return k
	}
	require.NoError(t, e.Client.Set(ctx, key(counter, "home"), "12", time.Minute).Err())
	in, err := r.Inspect(ctx, e.Client, e.NS, key(counter, "home"), "")
	require.NoError(t, err)
	assert.Equal(t, counter, in.Template)
	assert.Equal(t, keys.String, in.Type)
	assert.InDelta(t, time.Minute, in.TTL, float64(time.Second))
	assert.NoError(t, in.DecodeErr)
	assert.Equal(t, map[string]any{"page": "home", "hits": 12}, in.Value)

	// A collection: its length and the first InspectLimit elements.
	lk := key(log, "home")
	for i := 0; i < keys.InspectLimit+5; i++ {
		require.NoError(t, e.Client.RPush(ctx, lk, fmt.Sprint(i)).Err())
	}
	in, err = r.Inspect(ctx, e.Client, e.NS, lk, "")
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), in.TTL)
	col := in.Value.(keys.Collection)
	assert.EqualValues(t, keys.InspectLimit+5, col.Len)
	assert.Len(t, col.Items, keys.InspectLimit)
	assert.Equal(t, "0", col.Items[0])

	// Corrupt value, wrong type, no decoder: reported, not failed.
	require.NoError(t, e.Client.Set(ctx, key(counter, "bad"), "twelve", time.Minute).Err())
	in, err = r.Inspect(ctx, e.Client, e.NS, key(counter, "bad"), "")
	require.NoError(t, err)
	assert.ErrorIs(t, in.DecodeErr, keys.ErrCorrupt)
	assert.Contains(t, in.DecodeErr.Error(), key(counter, "bad"))
	assert.Nil(t, in.Value)
	require.NoError(t, e.Client.SAdd(ctx, key(counter, "set"), "x").Err())
	in, err = r.Inspect(ctx, e.Client, e.NS, key(counter, "set"), "")
	require.NoError(t, err)
	assert.Equal(t, keys.Set, in.Type)
	assert.ErrorIs(t, in.DecodeErr, keys.ErrCorrupt)
	require.NoError(t, e.Client.Set(ctx, key(bare, "x"), "1", time.Minute).Err())
	in, err = r.Inspect(ctx, e.Client, e.NS, key(bare, "x"), "")
	require.NoError(t, err)
	assert.ErrorContains(t, in.DecodeErr, "package demo registers no decoder")

	// Unowned, channel, missing.
	_, err = r.Inspect(ctx, e.Client, e.NS, e.NS.Prefix+"nobody:home", "")
	assert.ErrorIs(t, err, keys.ErrUnowned)
	_, err = r.Inspect(ctx, e.Client, e.NS, key(ch, "home"), "")
	assert.ErrorIs(t, err, keys.ErrUnowned)
	assert.ErrorContains(t, err, "channel")
	_, err = r.Inspect(ctx, e.Client, e.NS, key(counter, "none"), "")
	assert.ErrorIs(t, err, keys.ErrNotFound)
}

// Audit with Largest lists the biggest probed keys, biggest first, and
// EstBytes extrapolates the sample.
func TestAuditLargest(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := &keys.Registry{}
	tp := r.MustRegister(keys.Pattern{Template: "blob:{id}", Type: keys.String, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: "blobs"})
	op := r.MustRegister(keys.Pattern{Template: "other:{id}", Type: keys.String, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: "other"})
	other, err := op.Key(e.NS, "1")
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, other, "x", time.Minute).Err())
	for i := 1; i <= 5; i++ {
		k, err := tp.Key(e.NS, strconv.Itoa(i))
		require.NoError(t, err)
		require.NoError(t, e.Client.Set(ctx, k, string(make([]byte, i*1000)), time.Minute).Err())
	}
	rep, err := r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS, Largest: 2})
	require.NoError(t, err)
	require.Len(t, rep.Largest, 2)
	require.Equal(t, tp, rep.Patterns[0].Template)
	k5, _ := tp.Key(e.NS, "5")
	k4, _ := tp.Key(e.NS, "4")
	assert.Equal(t, k5, rep.Largest[0].Key)
	assert.Equal(t, k4, rep.Largest[1].Key)
	assert.Greater(t, rep.Largest[0].Bytes, rep.Largest[1].Bytes)
	st := rep.Patterns[0]
	assert.Equal(t, st.Bytes, st.EstBytes(), "every key sampled: exact")
	// Each pattern keeps its own 3 biggest, whatever Largest says.
	require.Len(t, st.Largest, 3)
	for i, want := range []string{"5", "4", "3"} {
		k, _ := tp.Key(e.NS, want)
		assert.Equal(t, k, st.Largest[i].Key)
		assert.Equal(t, tp, st.Largest[i].Template)
	}
	assert.Equal(t, rep.Largest[0], st.Largest[0])
	require.Len(t, rep.Patterns[1].Largest, 1)
	assert.Equal(t, other, rep.Patterns[1].Largest[0].Key)

	rep, err = r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS, Sample: 2})
	require.NoError(t, err)
	st = rep.Patterns[0]
	assert.EqualValues(t, 2, st.Sampled)
	assert.Equal(t, st.AvgBytes()*5, st.EstBytes())
	assert.Empty(t, rep.Largest)
	assert.Len(t, st.Largest, 2, "only the probed keys take part")
}

// Audit groups the unmatched keys by their first segment under the
// namespace (the whole key when it has none), most keys first, and lists
// the top TopPrefixes of them.
func TestAuditUnmatchedPrefixes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := &keys.Registry{}
	tp := r.MustRegister(keys.Pattern{Template: "blob:{id}", Type: keys.String, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: "blobs"})
	owned, err := tp.Key(e.NS, "1")
	require.NoError(t, err)
	stray := map[string]int{"zentoria:jobs:": 5, "legacy:": 3, "bull:q:": 2}
	for p, n := range stray {
		for i := 0; i < n; i++ {
			require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+p+strconv.Itoa(i), "x", time.Minute).Err())
		}
	}
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"nocolon", "x", time.Minute).Err())
	require.NoError(t, e.Client.Set(ctx, owned, "x", time.Minute).Err())

	rep, err := r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS, TopPrefixes: 3})
	require.NoError(t, err)
	assert.EqualValues(t, 11, rep.Unmatched)
	assert.Equal(t, []keys.NamespaceCount{
		{Namespace: keys.Namespace{Prefix: e.NS.Prefix + "zentoria:"}, Keys: 5},
		{Namespace: keys.Namespace{Prefix: e.NS.Prefix + "legacy:"}, Keys: 3},
		{Namespace: keys.Namespace{Prefix: e.NS.Prefix + "bull:"}, Keys: 2},
	}, rep.UnmatchedPrefixes)
	assert.Zero(t, rep.PrefixOverflow)

	rep, err = r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS})
	require.NoError(t, err)
	require.Len(t, rep.UnmatchedPrefixes, 4, "default: the top 10")
	assert.Equal(t, keys.NamespaceCount{Namespace: keys.Namespace{Prefix: e.NS.Prefix + "nocolon"}, Keys: 1}, rep.UnmatchedPrefixes[3], "no ':': the whole key")
}

// Audit counts at most 1,000 distinct prefixes of unmatched keys: the keys
// of the others are counted in PrefixOverflow, and every count is exact.
func TestAuditUnmatchedPrefixesBounded(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const distinct = 1010
	pipe := e.Client.Pipeline()
	for i := 0; i < distinct; i++ {
		pipe.Set(ctx, e.NS.Prefix+"p"+strconv.Itoa(i)+":a", "x", time.Minute)
		pipe.Set(ctx, e.NS.Prefix+"p"+strconv.Itoa(i)+":b", "x", time.Minute)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	rep, err := (&keys.Registry{}).Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS, TopPrefixes: 2 * distinct})
	require.NoError(t, err)
	assert.EqualValues(t, 2*distinct, rep.Unmatched)
	require.Len(t, rep.UnmatchedPrefixes, 1000)
	var counted int64
	for _, p := range rep.UnmatchedPrefixes {
		assert.EqualValues(t, 2, p.Keys, "a prefix is counted from its first key: %s", p.Namespace.Prefix)
		counted += p.Keys
	}
	assert.Equal(t, rep.Unmatched, counted+rep.PrefixOverflow)
	assert.EqualValues(t, 2*(distinct-1000), rep.PrefixOverflow, "the keys of the 10 prefixes left out")
}
