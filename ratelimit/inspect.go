package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: each key decodes to the limiter state it
// holds, with the checks the scripts apply to it.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	log := keys.ZSetDecoder(func(_ keys.Ref, member string, score float64) (any, error) {
		return map[string]any{"request": member, "admitted_at": time.UnixMilli(int64(score)).UTC()}, nil
	})
	for _, t := range []*keys.Template{rateLimitKey, slidingLimitKey, slidingWindowKey, slidingEndpointKey, slidingEndpointWindowKey} {
		set(t, log)
	}
	counter := keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("fixed window count %.32q is not a count", v)
		}
		return map[string]any{"window": ref.Arg("window"), "count": n}, nil
	})
	set(apiKey, counter)
	set(ipKey, counter)
	set(configKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		var out [4]int
		for i, f := range configFields {
			v, ok := m[f]
			if !ok {
				continue
			}
			n, err := strconv.Atoi(v)
			if !isCount(v) || err != nil || n < 1 || n > maxRate {
				return nil, fmt.Errorf("field %s = %.32q is not an integer in 1..2^40", f, v)
			}
			out[i] = n
		}
		return Config{PerMinute: out[0], PerHour: out[1], PerDay: out[2], Burst: out[3]}, nil
	}))
	swc := keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		parts := strings.Split(v, ":")
		var n [3]int64
		for i := 0; i < 3 && len(parts) == 3; i++ {
			var err error
			if n[i], err = strconv.ParseInt(parts[i], 10, 64); err != nil || n[i] < 0 {
				parts = nil
			}
		}
		if len(parts) != 3 {
			return nil, fmt.Errorf("%.50q is not bucket:count:previous", v)
		}
		return map[string]any{"window": ref.Arg("window"), "bucket": n[0], "count": n[1], "previous_count": n[2]}, nil
	})
	set(swcKey, swc)
	set(swcEndpointKey, swc)
	gcra := keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("theoretical arrival time %.32q is not µs since the epoch", v)
		}
		return map[string]any{"window": ref.Arg("window"), "theoretical_arrival": time.UnixMicro(n).UTC()}, nil
	})
	set(gcraKey, gcra)
	set(gcraEndpointKey, gcra)
	count := func(what string) keys.Decoder {
		return keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s %.32q is not a count", what, v)
			}
			return map[string]any{"identifier": ref.Arg("identifier"), what: n}, nil
		})
	}
	set(instancesKey, keys.ZSetDecoder(func(_ keys.Ref, member string, score float64) (any, error) {
		return map[string]any{"instance": member, "last_heartbeat": time.UnixMilli(int64(score)).UTC()}, nil
	}))
	set(refusalsKey, count("refusals"))
	set(adjustKey, count("cost"))
	set(blockKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		return map[string]any{"identifier": ref.Arg("identifier"), "blocked": true, "request_id": v}, nil
	}))
	return out
}
