package sensor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: series decode to Reading values as the
// queries return them, metadata and discovery to times, rollups to their
// buckets.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	set(motionKey, keys.ZSetDecoder(func(ref keys.Ref, m string, score float64) (any, error) {
		return decode(Motion, ref.Arg("location"), m, int64(score))
	}))
	set(envKey, keys.ZSetDecoder(func(ref keys.Ref, m string, score float64) (any, error) {
		r, err := decode(Temperature, ref.Arg("location"), m, int64(score))
		if err != nil {
			r, err = decode(Illuminance, ref.Arg("location"), m, int64(score))
		}
		return r, err
	}))
	set(genericKey, keys.ListDecoder(func(ref keys.Ref, m string) (any, error) {
		return decode(ref.Arg("sensor_type"), ref.Arg("location"), m, -1)
	}))
	meta := keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		out := map[string]any{}
		for f, v := range m {
			switch f {
			case "lastMotionTime", "last_update":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("%s %.32q is not Unix ms", f, v)
				}
				out[f] = time.UnixMilli(n).UTC()
			default:
				out[f] = v
			}
		}
		return out, nil
	})
	set(motionMetaKey, meta)
	set(genericMetaKey, meta)
	newest := func(what string) keys.Decoder {
		return keys.ZSetDecoder(func(_ keys.Ref, m string, score float64) (any, error) {
			return map[string]any{what: m, "newest_reading": time.UnixMilli(int64(score)).UTC()}, nil
		})
	}
	set(typesKey, newest("sensor_type"))
	set(locationsKey, newest("location"))
	rollup := keys.ZSetDecoder(func(_ keys.Ref, m string, _ float64) (any, error) {
		f := strings.Split(m, ":")
		var n [9]float64
		for i := 0; i < 9 && len(f) == 9; i++ {
			var err error
			if n[i], err = strconv.ParseFloat(f[i], 64); err != nil {
				f = nil
			}
		}
		if len(f) != 9 {
			return nil, fmt.Errorf("member %.64q is not a rollup", m)
		}
		return Bucket{Start: time.UnixMilli(int64(n[0])).UTC(), Count: int64(n[1]), Sum: n[2], Min: n[3], Max: n[4], First: n[5], Last: n[7]}, nil
	})
	set(minuteKey, rollup)
	set(hourKey, rollup)
	set(compactKey, keys.ZSetDecoder(func(ref keys.Ref, c string, _ float64) (any, error) {
		return decodeChunk(ref.Arg("sensor_type"), ref.Arg("location"), c)
	}))
	return out
}

// decodeChunk decodes a compact chunk, "start|unit|entity" then
// ";offset,value,rid" per reading (see lib.lua), into its readings.
func decodeChunk(typ, loc, c string) ([]Reading, error) {
	head, rest, _ := strings.Cut(c, ";")
	h := strings.Split(head, "|")
	if len(h) != 3 {
		return nil, fmt.Errorf("chunk %.64q has no start|unit|entity header", c)
	}
	start, err := strconv.ParseInt(h[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("chunk %.64q: bad start", c)
	}
	var out []Reading
	for _, e := range strings.Split(rest, ";") {
		if e == "" {
			continue
		}
		p := strings.Split(e, ",")
		off, err := strconv.ParseInt(p[0], 10, 64)
		if len(p) != 3 || err != nil {
			return nil, fmt.Errorf("chunk %.64q: bad entry %.32q", c, e)
		}
		r, err := decodeCompact(typ, loc, p[1]+"|"+h[1]+"|"+h[2]+"|"+p[2], start+off)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
