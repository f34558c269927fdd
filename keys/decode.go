package keys

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// inspectLimit is how many elements of a collection the decoders built by
// ListDecoder, ZSetDecoder, SetMembersDecoder, FieldsDecoder and
// StreamDecoder return (the first 100); Collection.Len says how many
// there are.
const inspectLimit = 100

// Collection is the decoded value of a list, set, sorted set, stream or
// per-field hash: its length and its first 100 elements in the
// collection's order (sets and hashes: sorted).
type Collection struct {
	Len   int64 `json:"len"`
	Items []any `json:"items"`
}

// The decoder constructors below read a key of one Redis type in one round
// trip and hand each stored string to the owning package's parse function,
// which returns what the package's API would return for it. An error from
// parse is reported as corruption of the key (ErrCorrupt); a missing key as
// ErrNotFound.

// StringDecoder decodes a string key: GET, then parse.
func StringDecoder(parse func(ref Ref, v string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		v, err := c.Get(ctx, ref.Key).Result()
		if err != nil {
			return nil, readErr(ref, err)
		}
		return parsed(ref, func() (any, error) { return parse(ref, v) })
	}
}

// HashDecoder decodes a hash that is one record: HGETALL, then parse of
// the whole field map.
func HashDecoder(parse func(ref Ref, fields map[string]string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		m, err := c.HGetAll(ctx, ref.Key).Result()
		if err != nil {
			return nil, readErr(ref, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%w: %q", ErrNotFound, ref.Key)
		}
		return parsed(ref, func() (any, error) { return parse(ref, m) })
	}
}

// FieldsDecoder decodes a hash that is a map of entries (job ID -> job):
// HGETALL, then parse of each field, sorted by field name.
func FieldsDecoder(parse func(ref Ref, field, value string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		m, err := c.HGetAll(ctx, ref.Key).Result()
		if err != nil {
			return nil, readErr(ref, err)
		}
		names := make([]string, 0, len(m))
		for f := range m {
			names = append(names, f)
		}
		sort.Strings(names)
		out := Collection{Len: int64(len(names)), Items: []any{}}
		for _, f := range names[:min(len(names), inspectLimit)] {
			v, err := parsed(ref, func() (any, error) { return parse(ref, f, m[f]) })
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	}
}

// ListDecoder decodes a list: its first 100 elements, head first.
func ListDecoder(parse func(ref Ref, elem string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		pipe := c.Pipeline()
		n := pipe.LLen(ctx, ref.Key)
		els := pipe.LRange(ctx, ref.Key, 0, inspectLimit-1)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, readErr(ref, err)
		}
		return collect(ref, n.Val(), els.Val(), func(s string) (any, error) { return parse(ref, s) })
	}
}

// SetMembersDecoder decodes a set: its members, sorted, at most
// 100 of them.
func SetMembersDecoder(parse func(ref Ref, member string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		ms, err := c.SMembers(ctx, ref.Key).Result()
		if err != nil {
			return nil, readErr(ref, err)
		}
		sort.Strings(ms)
		return collect(ref, int64(len(ms)), ms[:min(len(ms), inspectLimit)], func(s string) (any, error) { return parse(ref, s) })
	}
}

// ZSetDecoder decodes a sorted set: its first 100 members by
// ascending score, each with its score.
func ZSetDecoder(parse func(ref Ref, member string, score float64) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		pipe := c.Pipeline()
		n := pipe.ZCard(ctx, ref.Key)
		zs := pipe.ZRangeWithScores(ctx, ref.Key, 0, inspectLimit-1)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, readErr(ref, err)
		}
		out := Collection{Len: n.Val(), Items: []any{}}
		for _, z := range zs.Val() {
			m, _ := z.Member.(string)
			v, err := parsed(ref, func() (any, error) { return parse(ref, m, z.Score) })
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	}
}

// StreamDecoder decodes a stream: its first 100 entries, oldest
// first.
func StreamDecoder(parse func(ref Ref, id string, fields map[string]any) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		pipe := c.Pipeline()
		n := pipe.XLen(ctx, ref.Key)
		xs := pipe.XRangeN(ctx, ref.Key, "-", "+", inspectLimit)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, readErr(ref, err)
		}
		out := Collection{Len: n.Val(), Items: []any{}}
		for _, x := range xs.Val() {
			v, err := parsed(ref, func() (any, error) { return parse(ref, x.ID, x.Values) })
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	}
}

func collect(ref Ref, n int64, els []string, parse func(string) (any, error)) (any, error) {
	out := Collection{Len: n, Items: []any{}}
	for _, s := range els {
		v, err := parsed(ref, func() (any, error) { return parse(s) })
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, v)
	}
	return out, nil
}

func parsed(ref Ref, parse func() (any, error)) (any, error) {
	v, err := parse()
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		return nil, Corrupt(ref.Key, err)
	}
	return v, nil
}

func readErr(ref Ref, err error) error {
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %q", ErrNotFound, ref.Key)
	}
	return fmt.Errorf("keys: read %q: %w", ref.Key, err)
}
