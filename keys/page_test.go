package keys_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Inspect walks a collection of every type page by page: each page
// holds at most InspectLimit elements, Next is empty on the last one
// only, and the pages together hold every element once (nothing is
// written between them).
func TestInspectPages(t *testing.T) {
	e := harness.New(t)
	ctx, c := e.Ctx(), e.Client
	r := &keys.Registry{}
	reg := func(template string, typ keys.Type) *keys.Template {
		return r.MustRegister(keys.Pattern{Template: template, Type: typ, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: template})
	}
	same := func(_ keys.Ref, s string) (any, error) { return s, nil }
	jobs, members, log, board, events := reg("jobs:{id}", keys.Hash), reg("members:{id}", keys.Set), reg("log:{id}", keys.List), reg("board:{id}", keys.ZSet), reg("events:{id}", keys.Stream)
	r.SetDecoder(jobs, keys.FieldsDecoder(func(_ keys.Ref, f, v string) (any, error) { return f + "=" + v, nil }))
	r.SetDecoder(members, keys.SetMembersDecoder(same))
	r.SetDecoder(log, keys.ListDecoder(same))
	r.SetDecoder(board, keys.ZSetDecoder(func(_ keys.Ref, m string, _ float64) (any, error) { return m, nil }))
	r.SetDecoder(events, keys.StreamDecoder(func(_ keys.Ref, _ string, f map[string]any) (any, error) { return f["n"], nil }))

	const n = 250 // more than a small hash or set's compact encoding
	want := map[*keys.Template][]any{}
	key := func(tp *keys.Template) string {
		k, err := tp.Key(e.NS, "1")
		require.NoError(t, err)
		return k
	}
	pipe := c.Pipeline()
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("e%03d", i)
		pipe.HSet(ctx, key(jobs), s, "v")
		pipe.SAdd(ctx, key(members), s)
		pipe.RPush(ctx, key(log), s)
		pipe.ZAdd(ctx, key(board), redis.Z{Score: float64(i), Member: s})
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: key(events), Values: []any{"n", s}})
		want[jobs] = append(want[jobs], s+"=v")
		for _, tp := range []*keys.Template{members, log, board, events} {
			want[tp] = append(want[tp], s)
		}
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	for _, tp := range []*keys.Template{jobs, members, log, board, events} {
		var got []any
		cursor, pages := "", 0
		for {
			in, err := r.Inspect(ctx, c, e.NS, key(tp), cursor)
			require.NoError(t, err, tp.String())
			require.NoError(t, in.DecodeErr, tp.String())
			assert.Equal(t, cursor, in.Cursor)
			col := in.Value.(keys.Collection)
			assert.EqualValues(t, n, col.Len, tp.String())
			assert.LessOrEqual(t, len(col.Items), keys.InspectLimit, tp.String())
			got = append(got, col.Items...)
			pages++
			require.Less(t, pages, 50, "%s: pages never end", tp)
			if col.Next == "" {
				break
			}
			cursor = col.Next
		}
		switch tp {
		case jobs, members:
			assert.ElementsMatch(t, want[tp], got, "%s: every element once, in scan order", tp)
		default:
			assert.Equal(t, want[tp], got, "%s: every element once, in order", tp)
			assert.Equal(t, 3, pages, tp.String())
		}
	}

	// Inspect is the first page.
	in, err := r.Inspect(ctx, c, e.NS, key(log), "")
	require.NoError(t, err)
	col := in.Value.(keys.Collection)
	assert.Equal(t, want[log][:keys.InspectLimit], col.Items)
	assert.Equal(t, fmt.Sprint(keys.InspectLimit), col.Next)
	in, err = r.Inspect(ctx, c, e.NS, key(log), "200")
	require.NoError(t, err)
	assert.Equal(t, want[log][200:], in.Value.(keys.Collection).Items)
	assert.Empty(t, in.Value.(keys.Collection).Next, "the last page")
}

// A cursor that the key's type does not page by is refused before the
// value is read, naming the key; so is a decoder handed one directly.
func TestInspectPageBadCursor(t *testing.T) {
	e := harness.New(t)
	ctx, c := e.Ctx(), e.Client
	r := &keys.Registry{}
	reg := func(template string, typ keys.Type) *keys.Template {
		return r.MustRegister(keys.Pattern{Template: template, Type: typ, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: template})
	}
	never := func(keys.Ref, string) (any, error) { panic("decoded with a bad cursor") }
	cases := []struct {
		tp     *keys.Template
		write  func(k string) error
		d      keys.Decoder
		bad    []string
		direct bool // the decoder checks the cursor too
	}{
		{reg("hits:{id}", keys.String), func(k string) error { return c.Set(ctx, k, "1", time.Minute).Err() }, keys.StringDecoder(never), []string{"0", "x"}, false},
		{reg("jobs:{id}", keys.Hash), func(k string) error { return c.HSet(ctx, k, "f", "v").Err() },
			keys.FieldsDecoder(func(keys.Ref, string, string) (any, error) { panic("decoded") }), []string{"x", "-1", "1+", "+1", "1+x", "1+99999999", "1 "}, true},
		{reg("members:{id}", keys.Set), func(k string) error { return c.SAdd(ctx, k, "m").Err() }, keys.SetMembersDecoder(never), []string{"a", "1-2"}, true},
		{reg("log:{id}", keys.List), func(k string) error { return c.RPush(ctx, k, "e").Err() }, keys.ListDecoder(never), []string{"-1", "1+1", "9223372036854775807", "x"}, true},
		{reg("board:{id}", keys.ZSet), func(k string) error { return c.ZAdd(ctx, k, redis.Z{Member: "m"}).Err() },
			keys.ZSetDecoder(func(keys.Ref, string, float64) (any, error) { panic("decoded") }), []string{"+1", "1.5"}, true},
		{reg("events:{id}", keys.Stream), func(k string) error { return c.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"f", "v"}}).Err() },
			keys.StreamDecoder(func(keys.Ref, string, map[string]any) (any, error) { panic("decoded") }), []string{"1", "1-", "-", "+", "1-2-3"}, true},
	}
	for _, tc := range cases {
		r.SetDecoder(tc.tp, tc.d)
		k, err := tc.tp.Key(e.NS, "1")
		require.NoError(t, err)
		require.NoError(t, tc.write(k))
		for _, cur := range tc.bad {
			_, err := r.Inspect(ctx, c, e.NS, k, cur)
			assert.ErrorIs(t, err, keys.ErrInvalid, "%s %q", tc.tp, cur)
			assert.ErrorContains(t, err, k)
			if tc.direct {
				_, err = tc.d(ctx, c, keys.Ref{Key: k, Cursor: cur})
				assert.ErrorIs(t, err, keys.ErrInvalid, "%s %q", tc.tp, cur)
			}
		}
	}
}

// A hash that is one record is read whole only up to 1,024
// fields: a bigger one is refused, naming the key, before HGETALL.
func TestHashDecoderRefusesHugeRecord(t *testing.T) {
	e := harness.New(t)
	ctx, c := e.Ctx(), e.Client
	r := &keys.Registry{}
	rec := r.MustRegister(keys.Pattern{Template: "record:{id}", Type: keys.Hash, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: "record"})
	r.SetDecoder(rec, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) { return len(m), nil }))
	k, err := rec.Key(e.NS, "1")
	require.NoError(t, err)
	fill := func(from, to int) {
		args := []any{}
		for i := from; i < to; i++ {
			args = append(args, fmt.Sprint("f", i), "v")
		}
		require.NoError(t, c.HSet(ctx, k, args...).Err())
	}
	fill(0, keys.RecordFields)
	in, err := r.Inspect(ctx, c, e.NS, k, "")
	require.NoError(t, err)
	require.NoError(t, in.DecodeErr)
	assert.Equal(t, keys.RecordFields, in.Value)

	fill(keys.RecordFields, keys.RecordFields+1)
	in, err = r.Inspect(ctx, c, e.NS, k, "")
	require.NoError(t, err)
	assert.ErrorIs(t, in.DecodeErr, keys.ErrCorrupt)
	assert.ErrorContains(t, in.DecodeErr, k)
	assert.ErrorContains(t, in.DecodeErr, fmt.Sprint(keys.RecordFields+1))
	assert.Nil(t, in.Value)

	assert.ErrorIs(t, keys.RecordSize(k, 0), keys.ErrNotFound)
	assert.NoError(t, keys.RecordSize(k, 1))
}
