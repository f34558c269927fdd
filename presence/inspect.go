package presence

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: each key decodes to what the Tracker,
// Typing and Availability APIs read from it. A request memo decodes to its
// request IDs with their time and first reply (as the memo stores it).
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	set(presenceKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		return decode(ref.Key, ref.Arg("user_id"), []byte(v), 0, nil)
	}))
	set(connsKey, keys.FieldsDecoder(func(ref keys.Ref, id, v string) (any, error) {
		return decodeConn(ref.Key, id, v)
	}))
	set(onlineKey, keys.ZSetDecoder(func(_ keys.Ref, user string, score float64) (any, error) {
		exp := math.Floor(math.Abs(score))
		return map[string]any{
			"user_id":           user,
			"presence_expiry":   fromMs(int64(exp)),
			"announced_offline": score < 0,
		}, nil
	}))
	memo := keys.ZSetDecoder(func(_ keys.Ref, m string, score float64) (any, error) {
		id, reply, ok := strings.Cut(m, "=")
		out := map[string]any{"request_id": id, "at": fromMs(int64(score)).UTC()}
		if ok {
			out["reply"] = reply
		}
		return out, nil
	})
	set(requestsKey, memo)
	set(sweepsKey, memo)
	set(typingRequestsKey, memo)
	set(otherTypingRequestsKey, memo)
	set(chanRequestsKey, memo)
	set(chanMembersKey, keys.FieldsDecoder(func(ref keys.Ref, user, v string) (any, error) {
		var m Member[json.RawMessage]
		if err := decodeMember(&m, ref.Key, user, v); err != nil {
			return nil, err
		}
		return map[string]any{"user_id": m.UserID, "devices": m.Devices, "data": m.Data}, nil
	}))
	set(chanDevicesKey, keys.ZSetDecoder(func(ref keys.Ref, dev string, score float64) (any, error) {
		user, conn, err := decodeDevice(dev)
		if err != nil {
			return nil, keys.Corrupt(ref.Key, err)
		}
		return map[string]any{"user_id": user, "conn_id": conn, "expires_at": fromMs(int64(score))}, nil
	}))
	set(chanOccKey, keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		at, n, ok := strings.Cut(v, ":")
		t, err1 := strconv.ParseInt(at, 10, 64)
		c, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || t < 0 || c < 0 {
			return nil, fmt.Errorf("occupancy record %q is not \"<at ms>:<count>\"", v)
		}
		return map[string]any{"published_at": fromMs(t), "count": c}, nil
	}))
	set(chanDueKey, keys.ZSetDecoder(func(_ keys.Ref, ch string, score float64) (any, error) {
		return map[string]any{"channel": ch, "sweep_due": fromMs(int64(score))}, nil
	}))
	avail := keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		s := Status(v)
		if !s.valid() || s == Invisible {
			return nil, fmt.Errorf("availability %q", v)
		}
		return map[string]any{"admin_id": ref.Arg("admin_id"), "status": s}, nil
	})
	set(adminKey, avail)
	set(availTaggedKey, avail)
	set(typingKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		return decodeTyper(ref.Key, v)
	}))
	set(typersKey, keys.ZSetDecoder(func(ref keys.Ref, v string, score float64) (any, error) {
		ty, err := decodeTyper(ref.Key, v)
		if err != nil {
			return nil, err
		}
		return map[string]any{"typer": ty, "expires_at": fromMs(int64(score))}, nil
	}))
	set(throttleKey, keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		if v == "" {
			return nil, errors.New("empty throttle value")
		}
		return map[string]any{"accepted_request_id": v}, nil
	}))
	out[otherThrottleKey] = out[throttleKey]
	return out
}
