package lock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: each key decodes to the lease, fence,
// queue, permit or last run it records.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	// A lease is "owner:timestamp_ms:ttl_ms"; an interval guard's claim
	// record (lock:cron:{job_name}) adds ":previous_run_ms" (-1: none),
	// with a lease of 0 when the run holds none.
	lease := keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		bad := fmt.Errorf("lease %.64q is not owner:timestamp_ms:ttl_ms[:previous_run_ms]", v)
		parts := strings.Split(v, ":")
		if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
			return nil, bad
		}
		var n [3]int64
		for i, p := range parts[1:] {
			var err error
			if n[i], err = strconv.ParseInt(p, 10, 64); err != nil {
				return nil, bad
			}
		}
		if n[0] < 0 || n[1] < 0 || (len(parts) == 3 && n[1] == 0) || n[2] < -1 {
			return nil, bad
		}
		out := map[string]any{
			"owner_id":    parts[0],
			"acquired_at": time.UnixMilli(n[0]).UTC(),
			"lease":       (time.Duration(n[1]) * time.Millisecond).String(),
		}
		if len(parts) == 4 {
			out["interval_claim"] = true
			if n[2] >= 0 {
				out["previous_run"] = time.UnixMilli(n[2]).UTC()
			}
		}
		return out, nil
	})
	set(lockKey, lease)
	set(rwKey, lease)
	for _, t := range resourceDefaults {
		set(t, lease)
	}
	set(fenceKey, keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1<<53-1 {
			return nil, fmt.Errorf("fencing token %.32q", v)
		}
		return map[string]any{"last_fencing_token": n}, nil
	}))
	set(queueKey, keys.ListDecoder(func(_ keys.Ref, owner string) (any, error) {
		return map[string]any{"waiter": owner}, nil
	}))
	until := func(what string) keys.Decoder {
		return keys.ZSetDecoder(func(_ keys.Ref, owner string, score float64) (any, error) {
			return map[string]any{"owner_id": owner, what: time.UnixMilli(int64(score)).UTC()}, nil
		})
	}
	set(waitersKey, until("place_until"))
	set(semKey, until("permit_expires_at"))
	set(readersKey, until("read_lease_expires_at"))
	set(writersKey, until("place_until"))
	set(cronKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("last run %.32q is not Unix ms", v)
		}
		return map[string]any{"job": ref.Arg("job_name"), "last_run": time.UnixMilli(n).UTC()}, nil
	}))
	return out
}
