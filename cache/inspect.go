package cache

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redschema/redschema/keys"
)

// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them: APILayout's
// (see Layout.Decoders) and the tag keys'.
func decoders() map[*keys.Template]keys.Decoder {
	out := APILayout().Decoders()
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	tag := keys.ZSetDecoder(func(_ keys.Ref, entry string, score float64) (any, error) {
		return map[string]any{"entry": entry, "expires_at": time.UnixMilli(int64(score)).UTC()}, nil
	})
	for _, t := range []*keys.Template{tagKey, userTagKey, tagDyingKey, userTagDyingKey} {
		set(t, tag)
	}
	gen := keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		return map[string]any{"generation": v}, nil
	})
	set(tagGenKey, gen)
	set(userTagGenKey, gen)
	return out
}

// Decoders returns the decoders that redschema inspect uses for the keys
// of a Layout: the value as stored (an entry's value is the codec's
// bytes: shown as JSON when it is JSON (the default codec), as text when
// it is UTF-8, base64 otherwise; an empty value is a marker, not found or
// uncacheable, which the metadata's hint tells apart) and the metadata
// hash (created_at, hits, size_bytes, grace, load time or marker kind,
// load lease). A package that stores entries under its own Layout puts
// them in its Schema, and may replace the value's decoder with one that
// knows the value's type.
func (l Layout) Decoders() map[*keys.Template]keys.Decoder {
	return map[*keys.Template]keys.Decoder{
		l.Value: keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
			return storedValue(v), nil
		}),
		l.Meta: keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
			return inspectMeta(m)
		}),
	}
}

// storedValue shows a value as the codec stored it.
func storedValue(v string) map[string]any {
	switch {
	case v == "":
		return map[string]any{"marker": true}
	case json.Valid([]byte(v)):
		return map[string]any{"json": json.RawMessage(v), "bytes": len(v)}
	case utf8.ValidString(v):
		return map[string]any{"text": v, "bytes": len(v)}
	}
	return map[string]any{"raw": []byte(v), "bytes": len(v)}
}

// inspectMeta decodes an entry's metadata hash (see write.lua, lease.lua).
func inspectMeta(m map[string]string) (any, error) {
	out := map[string]any{}
	for f, v := range m {
		switch f {
		case "created_at":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, fmt.Errorf("created_at %.40q", v)
			}
			out[f] = t
		case "hits", "size_bytes", "waiters":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %.40q", f, v)
			}
			out[f] = n
		case "hint":
			g, d, ok := strings.Cut(v, ":")
			if !ok {
				out["marker"] = v // "neg": not found, "pass": uncacheable
				continue
			}
			grace, err1 := strconv.ParseInt(g, 10, 64)
			delta, err2 := strconv.ParseInt(d, 10, 64)
			if err1 != nil || err2 != nil || grace < 0 || delta < 0 || delta > maxDelta {
				return nil, fmt.Errorf("hint %.40q is not grace_ms:delta_ms", v)
			}
			out["grace"] = (time.Duration(grace) * time.Millisecond).String()
			out["load_time"] = (time.Duration(delta) * time.Millisecond).String()
		case "lease":
			owner, until, _ := strings.Cut(v, ":")
			n, err := strconv.ParseInt(until, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("lease %.40q is not owner:until_ms", v)
			}
			out["lease"] = map[string]any{"owner": owner, "until": time.UnixMilli(n).UTC()}
		default:
			out[f] = v
		}
	}
	return out, nil
}
