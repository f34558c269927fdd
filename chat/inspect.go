package chat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: queues decode to conversations with
// their priority and time, the state hash to each conversation's band,
// waiting time and admin, messages to Message values, a request memo to
// its request IDs with their time and (hex-encoded) first reply.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	set(assignmentsKey, keys.SetMembersDecoder(func(_ keys.Ref, id string) (any, error) {
		return map[string]any{"conversation_id": id}, nil
	}))
	set(activeKey, keys.ZSetDecoder(func(_ keys.Ref, id string, score float64) (any, error) {
		return map[string]any{"conversation_id": id, "last_activity": time.UnixMilli(int64(score)).UTC()}, nil
	}))
	queued := keys.ZSetDecoder(func(_ keys.Ref, id string, score float64) (any, error) {
		p, at, ok := decodeScore(score)
		if !ok {
			return nil, fmt.Errorf("conversation %q has score %v, which this package never writes", id, score)
		}
		return map[string]any{"conversation_id": id, "priority": p, "since": at.UTC()}, nil
	})
	set(unreadKey, queued)
	set(backlogKey, queued)
	set(stateKey, keys.FieldsDecoder(func(_ keys.Ref, id, v string) (any, error) {
		st, ok := parseState(v, time.Now().UnixMilli())
		if !ok {
			return nil, fmt.Errorf("conversation %q state %.64q is not \"band stamp waiting admin\"", id, v)
		}
		out := map[string]any{"conversation_id": id, "priority": bands[st.band], "stamp": st.stamp, "admin_id": st.admin}
		if st.waiting > 0 {
			out["awaiting_reply_since"] = time.UnixMilli(st.waiting).UTC()
		}
		return out, nil
	}))
	set(rosterKey, keys.FieldsDecoder(func(_ keys.Ref, admin, v string) (any, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("admin %q capacity %.32q", admin, v)
		}
		return map[string]any{"admin_id": admin, "capacity": n}, nil
	}))
	set(cursorKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		out := map[string]any{}
		if s, ok := m["stamp"]; ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("stamp %.32q", s)
			}
			out["last_stamp"] = n
		}
		if a, ok := m["last"]; ok {
			out["last_assigned_admin"] = a
		}
		return out, nil
	}))
	set(messagesKey, keys.ListDecoder(func(_ keys.Ref, s string) (any, error) {
		return decodeMessage(s)
	}))
	set(requestsKey, keys.ZSetDecoder(func(_ keys.Ref, m string, score float64) (any, error) {
		id, reply, ok := strings.Cut(m, "=")
		out := map[string]any{"request_id": id, "at": time.UnixMilli(int64(score)).UTC()}
		if ok {
			out["reply"] = reply
		}
		return out, nil
	}))
	numbers := keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		out := map[string]any{}
		for f, v := range m {
			if f == "day" {
				out[f] = v
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, errors.New("field " + f + " is not a number")
			}
			if f == "computed_at" {
				out[f] = time.UnixMilli(int64(n)).UTC()
				continue
			}
			out[f] = n
		}
		return out, nil
	})
	set(dashboardKey, numbers)
	set(statsKey, numbers)
	return out
}
