package keys

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// inspectLimit is the page size of the collection decoders built by
// ListDecoder, ZSetDecoder, SetMembersDecoder, FieldsDecoder and
// StreamDecoder: a page holds at most 100 elements, and no command they
// send asks for more (HSCAN and SSCAN with COUNT 100, LRANGE and ZRANGE
// of 100 indexes, XRANGE COUNT 101); Collection.Len says how many there
// are.
const inspectLimit = 100

// maxScanCalls bounds the HSCAN or SSCAN calls one page takes: a sparse
// hash table can answer a call with no element, and a page stops there
// with its Next cursor rather than loop.
const maxScanCalls = 8

// maxRecordFields is the most fields a hash that is one record may have
// for HashDecoder to read it: it counts them (HLEN) before reading them
// (HGETALL), and reports a bigger hash as corrupt (no record has that
// many fields), so that an inspect never reads an unbounded hash whole.
const maxRecordFields = 1024

// Collection is one page of the decoded value of a list, set, sorted set,
// stream or per-field hash: the collection's length and at most 100 of
// its elements. Lists are read head first, sorted sets by ascending
// score, streams oldest first; hashes and sets in HSCAN and SSCAN order
// (each batch the server returns sorted, so a hash or set small enough to
// come in one batch is sorted whole), and a page may then hold fewer than
// 100 elements, even none, while Next is set. Next is the cursor of the
// following page (Registry.Inspect), empty on the last one.
type Collection struct {
	Len   int64  `json:"len"`
	Items []any  `json:"items"`
	Next  string `json:"next,omitempty"`
}

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

// HashDecoder decodes a hash that is one record: HLEN, then HGETALL of
// at most 1,024 fields (a bigger hash is not a record: it is reported
// corrupt, naming the key and its size, without being read), then parse
// of the whole field map. It takes two round trips.
func HashDecoder(parse func(ref Ref, fields map[string]string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		n, err := c.HLen(ctx, ref.Key).Result()
		if err != nil {
			return nil, readErr(ref, err)
		}
		if err := recordSize(ref.Key, n); err != nil {
			return nil, err
		}
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

// recordSize checks the field count n of the record hash at key (its
// HLEN) before HashDecoder reads it whole: an error wrapping ErrNotFound
// for 0, a corruption for more than maxRecordFields, else nil.
func recordSize(key string, n int64) error {
	switch {
	case n == 0:
		return fmt.Errorf("%w: %q", ErrNotFound, key)
	case n > maxRecordFields:
		return Corrupt(key, fmt.Errorf("a hash of %d fields, more than the %d a record may have", n, maxRecordFields))
	}
	return nil
}

// FieldsDecoder decodes a hash that is a map of entries (job ID -> job):
// one page of HSCAN from ref.Cursor (see Collection for the order), its
// length (HLEN, in the first call's round trip), then parse of each field.
func FieldsDecoder(parse func(ref Ref, field, value string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		n, page, next, err := scanPage(ctx, c, ref, true)
		if err != nil {
			return nil, err
		}
		out := Collection{Len: n, Items: []any{}, Next: next}
		for _, fv := range page {
			v, err := parsed(ref, func() (any, error) { return parse(ref, fv[0], fv[1]) })
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	}
}

// ListDecoder decodes a list: one page of 100 elements, head first, from
// the index in ref.Cursor (LLEN and LRANGE in one round trip).
func ListDecoder(parse func(ref Ref, elem string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		off, err := offsetCursor(ref)
		if err != nil {
			return nil, err
		}
		pipe := c.Pipeline()
		n := pipe.LLen(ctx, ref.Key)
		els := pipe.LRange(ctx, ref.Key, off, off+inspectLimit-1)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, readErr(ref, err)
		}
		out, err := collect(ref, n.Val(), els.Val(), func(s string) (any, error) { return parse(ref, s) })
		if err != nil {
			return nil, err
		}
		out.Next = nextOffset(off, len(els.Val()), n.Val())
		return out, nil
	}
}

// SetMembersDecoder decodes a set: one page of SSCAN from ref.Cursor (see
// Collection for the order), and its length (SCARD, in the first call's
// round trip).
func SetMembersDecoder(parse func(ref Ref, member string) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		n, page, next, err := scanPage(ctx, c, ref, false)
		if err != nil {
			return nil, err
		}
		ms := make([]string, len(page))
		for i, m := range page {
			ms[i] = m[0]
		}
		out, err := collect(ref, n, ms, func(s string) (any, error) { return parse(ref, s) })
		if err != nil {
			return nil, err
		}
		out.Next = next
		return out, nil
	}
}

// ZSetDecoder decodes a sorted set: one page of 100 members by ascending
// score, each with its score, from the rank in ref.Cursor (ZCARD and
// ZRANGE in one round trip).
func ZSetDecoder(parse func(ref Ref, member string, score float64) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		off, err := offsetCursor(ref)
		if err != nil {
			return nil, err
		}
		pipe := c.Pipeline()
		n := pipe.ZCard(ctx, ref.Key)
		zs := pipe.ZRangeWithScores(ctx, ref.Key, off, off+inspectLimit-1)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, readErr(ref, err)
		}
		out := Collection{Len: n.Val(), Items: []any{}, Next: nextOffset(off, len(zs.Val()), n.Val())}
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

// StreamDecoder decodes a stream: one page of 100 entries, oldest first,
// after the entry ID in ref.Cursor (XLEN and XRANGE in one round trip).
func StreamDecoder(parse func(ref Ref, id string, fields map[string]any) (any, error)) Decoder {
	return func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error) {
		start := "-"
		if ref.Cursor != "" {
			if !isStreamID(ref.Cursor) {
				return nil, cursorErr(ref, "a stream entry ID")
			}
			start = ref.Cursor
		}
		pipe := c.Pipeline()
		n := pipe.XLen(ctx, ref.Key)
		// The cursor's own entry comes first when it still exists: one
		// more than a page tells whether another follows.
		xs := pipe.XRangeN(ctx, ref.Key, start, "+", inspectLimit+2)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, readErr(ref, err)
		}
		page := xs.Val()
		if len(page) > 0 && page[0].ID == ref.Cursor {
			page = page[1:]
		}
		out := Collection{Len: n.Val(), Items: []any{}}
		if len(page) > inspectLimit {
			page = page[:inspectLimit]
			out.Next = page[len(page)-1].ID
		}
		for _, x := range page {
			v, err := parsed(ref, func() (any, error) { return parse(ref, x.ID, x.Values) })
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	}
}

// scanPage reads one page of a hash (HSCAN, hash true: field-value pairs)
// or a set (SSCAN: members, in [0]) from ref.Cursor, and the collection's
// length. A cursor is the server's scan cursor, "+" and how many elements
// of that call's (sorted) batch earlier pages took when a page ended
// inside a batch: an HSCAN may return more than COUNT elements (a small
// hash comes whole), and a page never holds more than inspectLimit.
func scanPage(ctx context.Context, c redis.Cmdable, ref Ref, hash bool) (int64, [][2]string, string, error) {
	cur, skip, ok := parseScanCursor(ref.Cursor)
	if !ok {
		return 0, nil, "", cursorErr(ref, "a scan cursor")
	}
	scan := func(pipe redis.Cmdable, cur uint64) *redis.ScanCmd {
		if hash {
			return pipe.HScan(ctx, ref.Key, cur, "", inspectLimit)
		}
		return pipe.SScan(ctx, ref.Key, cur, "", inspectLimit)
	}
	pipe := c.Pipeline()
	var n *redis.IntCmd
	if hash {
		n = pipe.HLen(ctx, ref.Key)
	} else {
		n = pipe.SCard(ctx, ref.Key)
	}
	first := scan(pipe, cur)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, nil, "", readErr(ref, err)
	}
	page := [][2]string{}
	for call := 0; ; call++ {
		var raw []string
		var next uint64
		var err error
		if call == 0 {
			raw, next = first.Val()
		} else if raw, next, err = scan(c, cur).Result(); err != nil {
			return 0, nil, "", readErr(ref, err)
		}
		batch := make([][2]string, 0, len(raw))
		if hash {
			for i := 0; i+1 < len(raw); i += 2 {
				batch = append(batch, [2]string{raw[i], raw[i+1]})
			}
		} else {
			for _, m := range raw {
				batch = append(batch, [2]string{m})
			}
		}
		sort.Slice(batch, func(i, j int) bool { return batch[i][0] < batch[j][0] })
		batch = batch[min(skip, len(batch)):]
		if room := inspectLimit - len(page); len(batch) > room {
			page = append(page, batch[:room]...)
			return n.Val(), page, strconv.FormatUint(cur, 10) + "+" + strconv.Itoa(skip+room), nil
		}
		page = append(page, batch...)
		if next == 0 {
			return n.Val(), page, "", nil
		}
		cur, skip = next, 0
		if len(page) == inspectLimit || call+1 == maxScanCalls {
			return n.Val(), page, strconv.FormatUint(cur, 10), nil
		}
	}
}

// maxCursorSkip bounds the skip part of a scan cursor: a server's batch
// is about COUNT elements, or a whole small hash or set.
const maxCursorSkip = 1 << 20

// parseScanCursor splits a scan cursor ("", "N" or "N+SKIP").
func parseScanCursor(s string) (cur uint64, skip int, ok bool) {
	if s == "" {
		return 0, 0, true
	}
	c, k, hasSkip := strings.Cut(s, "+")
	cur, err := strconv.ParseUint(c, 10, 64)
	if err != nil || !digits(c) {
		return 0, 0, false
	}
	if hasSkip {
		if skip, err = strconv.Atoi(k); err != nil || !digits(k) || skip > maxCursorSkip {
			return 0, 0, false
		}
	}
	return cur, skip, true
}

// offsetCursor reads an index cursor of a list or sorted set: "" is 0.
func offsetCursor(ref Ref) (int64, error) {
	if ref.Cursor == "" {
		return 0, nil
	}
	off, err := strconv.ParseInt(ref.Cursor, 10, 64)
	if err != nil || !digits(ref.Cursor) || off > math.MaxInt64-inspectLimit {
		return 0, cursorErr(ref, "an index")
	}
	return off, nil
}

// nextOffset is the cursor of the page after the got elements read at
// off, of a collection of n: empty when they were the last.
func nextOffset(off int64, got int, n int64) string {
	if got == 0 || off+int64(got) >= n {
		return ""
	}
	return strconv.FormatInt(off+int64(got), 10)
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isStreamID reports whether s is a complete stream entry ID ("ms-seq").
func isStreamID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok || !digits(ms) || !digits(seq) {
		return false
	}
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	return err1 == nil && err2 == nil
}

// cursorErr reports a cursor that is not of the form the key's decoder
// pages by.
func cursorErr(ref Ref, want string) error {
	return fmt.Errorf("%w cursor %.40q for %q: not %s", ErrInvalid, ref.Cursor, ref.Key, want)
}

func collect(ref Ref, n int64, els []string, parse func(string) (any, error)) (Collection, error) {
	out := Collection{Len: n, Items: []any{}}
	for _, s := range els {
		v, err := parsed(ref, func() (any, error) { return parse(s) })
		if err != nil {
			return Collection{}, err
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
