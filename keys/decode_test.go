package keys_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Each decoder constructor reads its type and hands every stored string
// to the package's parse function: a record hash as one map, a map hash,
// a set, a sorted set and a stream as collections of at most InspectLimit
// items, in a stable order (a small hash or set comes sorted).
func TestDecoders(t *testing.T) {
	e := harness.New(t)
	ctx, c := e.Ctx(), e.Client
	r := &keys.Registry{}
	reg := func(template string, typ keys.Type) *keys.Template {
		return r.MustRegister(keys.Pattern{Template: template, Type: typ, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: template})
	}
	record := reg("record:{id}", keys.Hash)
	jobs := reg("jobs:{id}", keys.Hash)
	members := reg("members:{id}", keys.Set)
	board := reg("board:{id}", keys.ZSet)
	events := reg("events:{id}", keys.Stream)
	r.SetDecoder(record, keys.HashDecoder(func(ref keys.Ref, f map[string]string) (any, error) {
		n, err := strconv.Atoi(f["age"])
		return map[string]any{"id": ref.Arg("id"), "name": f["name"], "age": n}, err
	}))
	r.SetDecoder(jobs, keys.FieldsDecoder(func(_ keys.Ref, field, value string) (any, error) {
		if value == "bad" {
			return nil, errors.New("not a job")
		}
		return field + "=" + value, nil
	}))
	r.SetDecoder(members, keys.SetMembersDecoder(func(_ keys.Ref, m string) (any, error) { return "m:" + m, nil }))
	r.SetDecoder(board, keys.ZSetDecoder(func(_ keys.Ref, m string, score float64) (any, error) {
		return fmt.Sprintf("%s@%g", m, score), nil
	}))
	r.SetDecoder(events, keys.StreamDecoder(func(_ keys.Ref, id string, f map[string]any) (any, error) {
		if f["kind"] == nil {
			return nil, keys.Corrupt("elsewhere", errors.New("no kind")) // already an ErrCorrupt: kept as it is
		}
		return f["kind"], nil
	}))
	key := func(tp *keys.Template) string {
		k, err := tp.Key(e.NS, "1")
		require.NoError(t, err)
		return k
	}
	inspect := func(tp *keys.Template) *keys.Inspection {
		in, err := r.Inspect(ctx, c, e.NS, key(tp), "")
		require.NoError(t, err, tp.String())
		return in
	}

	require.NoError(t, c.HSet(ctx, key(record), "name", "ann", "age", "41").Err())
	in := inspect(record)
	require.NoError(t, in.DecodeErr)
	assert.Equal(t, map[string]any{"id": "1", "name": "ann", "age": 41}, in.Value)
	require.NoError(t, c.HSet(ctx, key(record), "age", "old").Err())
	in = inspect(record)
	assert.ErrorIs(t, in.DecodeErr, keys.ErrCorrupt)
	assert.ErrorContains(t, in.DecodeErr, key(record))

	for i := range keys.InspectLimit + 2 {
		require.NoError(t, c.HSet(ctx, key(jobs), fmt.Sprintf("j%03d", i), "ok").Err())
	}
	in = inspect(jobs)
	require.NoError(t, in.DecodeErr)
	col := in.Value.(keys.Collection)
	assert.EqualValues(t, keys.InspectLimit+2, col.Len)
	require.Len(t, col.Items, keys.InspectLimit)
	assert.Equal(t, "j000=ok", col.Items[0], "sorted by field")
	assert.Equal(t, "j099=ok", col.Items[keys.InspectLimit-1])
	require.NoError(t, c.HSet(ctx, key(jobs), "j000", "bad").Err())
	assert.ErrorIs(t, inspect(jobs).DecodeErr, keys.ErrCorrupt)

	require.NoError(t, c.SAdd(ctx, key(members), "c", "a", "b").Err())
	in = inspect(members)
	require.NoError(t, in.DecodeErr)
	assert.Equal(t, keys.Collection{Len: 3, Items: []any{"m:a", "m:b", "m:c"}}, in.Value)

	require.NoError(t, c.ZAdd(ctx, key(board), redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"}).Err())
	in = inspect(board)
	require.NoError(t, in.DecodeErr)
	assert.Equal(t, keys.Collection{Len: 2, Items: []any{"a@1", "b@2"}}, in.Value, "ascending score")

	for _, kind := range []string{"created", "done"} {
		require.NoError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: key(events), Values: []any{"kind", kind}}).Err())
	}
	in = inspect(events)
	require.NoError(t, in.DecodeErr)
	assert.Equal(t, keys.Collection{Len: 2, Items: []any{"created", "done"}}, in.Value, "oldest first")
	require.NoError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: key(events), Values: []any{"other", "x"}}).Err())
	in = inspect(events)
	var ce *keys.CorruptError
	require.ErrorAs(t, in.DecodeErr, &ce)
	assert.Equal(t, "elsewhere", ce.Key, "a parse error that is already ErrCorrupt is not wrapped again")
}

// A decoder reports a key that vanished as ErrNotFound and a failed read
// as an error naming the key, never as a value.
func TestDecoderReadErrors(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ref := keys.Ref{Key: e.NS.Prefix + "gone"}
	never := func(keys.Ref, string) (any, error) { panic("parse of a missing key") }
	for name, d := range map[string]keys.Decoder{
		"string": keys.StringDecoder(never),
		"hash":   keys.HashDecoder(func(keys.Ref, map[string]string) (any, error) { panic("parse of a missing key") }),
	} {
		_, err := d(ctx, e.Client, ref)
		assert.ErrorIs(t, err, keys.ErrNotFound, name)
		assert.ErrorContains(t, err, ref.Key, name)
	}
	for name, d := range map[string]keys.Decoder{
		"fields": keys.FieldsDecoder(func(keys.Ref, string, string) (any, error) { panic("no fields") }),
		"set":    keys.SetMembersDecoder(never),
		"list":   keys.ListDecoder(never),
	} {
		v, err := d(ctx, e.Client, ref)
		require.NoError(t, err, name)
		assert.Equal(t, keys.Collection{Items: []any{}}, v, "%s: a missing collection is empty", name)
	}

	closed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	require.NoError(t, closed.Close())
	for name, d := range map[string]keys.Decoder{
		"string": keys.StringDecoder(never),
		"hash":   keys.HashDecoder(func(keys.Ref, map[string]string) (any, error) { panic("unreachable") }),
		"fields": keys.FieldsDecoder(func(keys.Ref, string, string) (any, error) { panic("unreachable") }),
		"list":   keys.ListDecoder(never),
		"set":    keys.SetMembersDecoder(never),
		"zset":   keys.ZSetDecoder(func(keys.Ref, string, float64) (any, error) { panic("unreachable") }),
		"stream": keys.StreamDecoder(func(keys.Ref, string, map[string]any) (any, error) { panic("unreachable") }),
	} {
		_, err := d(context.Background(), closed, ref)
		assert.ErrorIs(t, err, redis.ErrClosed, name)
		assert.ErrorContains(t, err, `keys: read "`+ref.Key+`"`, name)
		assert.NotErrorIs(t, err, keys.ErrNotFound, name)
	}
}
