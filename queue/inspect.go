package queue

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect. A job decodes to its envelope (ID,
// priority, created_at, retries) with the payload as stored: JSON as it
// is, payload_bytes (a non-JSON codec's bytes) base64 in JSON output,
// since the payload type is the application's.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	set(wakeKey, keys.ListDecoder(func(ref keys.Ref, s string) (any, error) {
		if s == "1" {
			return map[string]any{"wake_up_token": true}, nil
		}
		return inspectJob(ref.Key, s) // a seed-format job waiting to be adopted
	}))
	set(inboxKey, keys.ListDecoder(func(ref keys.Ref, s string) (any, error) {
		if s == "1" {
			return map[string]any{"wake_up_token": true}, nil
		}
		return inspectJob(ref.Key, s)
	}))
	set(replyKey, keys.StringDecoder(func(_ keys.Ref, s string) (any, error) {
		switch s {
		case "ok", "live", "window": // an enqueue's: accepted, the ID is live, a duplicate in the unique window
			return map[string]any{"first_outcome": s}, nil
		}
		var v []any // other writes: the script's reply as JSON, ["ok", ...]
		if err := json.Unmarshal([]byte(s), &v); err != nil || len(v) == 0 {
			return nil, fmt.Errorf("reply memo %.64q is not a reply", s)
		}
		if _, ok := v[0].(string); !ok {
			return nil, fmt.Errorf("reply memo %.64q is not a reply", s)
		}
		return map[string]any{"first_outcome": v}, nil
	}))
	set(priorityKey, keys.ZSetDecoder(func(ref keys.Ref, id string, score float64) (any, error) {
		if _, ok := parseLevel(ref.Arg("level")); !ok {
			return nil, fmt.Errorf("unknown priority level %q", ref.Arg("level"))
		}
		// The score is the ready time in ms × 1000 plus a FIFO sequence.
		return map[string]any{"job_id": id, "ready_at": msTime(int64(score) / 1000).UTC()}, nil
	}))
	set(jobsKey, keys.FieldsDecoder(func(ref keys.Ref, id, s string) (any, error) {
		return inspectJob(ref.Key, s)
	}))
	set(errorsKey, keys.FieldsDecoder(func(ref keys.Ref, id, s string) (any, error) {
		es, err := parseErrors(id, s)
		if err != nil {
			return nil, err
		}
		return es, nil
	}))
	set(stateKey, keys.FieldsDecoder(func(ref keys.Ref, id, s string) (any, error) {
		dlv, retry, retries, p, lastErr, err := parseState(ref.Key, s)
		if err != nil {
			return nil, err
		}
		return map[string]any{"job_id": id, "delivery": dlv, "retry_count": retry, "max_retries": retries,
			"priority": p.String(), "last_error": lastErr}, nil
	}))
	set(activeKey, keys.ZSetDecoder(func(_ keys.Ref, id string, score float64) (any, error) {
		return map[string]any{"job_id": id, "lease_deadline": msTime(int64(score)).UTC()}, nil
	}))
	set(uniqueKey, keys.StringDecoder(func(ref keys.Ref, s string) (any, error) {
		return map[string]any{"job_id": ref.Arg("job_id"), "unique_until": "the key's TTL", "value": s}, nil
	}))
	set(statsKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		out := map[string]any{}
		for f, v := range m {
			switch f {
			case "avg_process_time_ms":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || !(x >= 0 && x <= float64(maxDelay/time.Millisecond)) { // NaN too
					return nil, fmt.Errorf("field %s is %.64q", f, v)
				}
				out["avg_process_time"] = time.Duration(x * float64(time.Millisecond)).String()
			case "last_processed_at", "paused": // paused: the server time of Pause
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("field %s is %.64q", f, v)
				}
				out[f] = msTime(n).UTC()
			case "group_rr": // the group dequeues served last (round-robin)
				out[f] = v
			case "group_seen": // "ms|groups" the last whole read of the ready jobs found
				out[f] = v
			default:
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("field %s is %.64q", f, v)
				}
				out[f] = n
			}
		}
		return out, nil
	}))
	set(dailyKey, keys.HashDecoder(func(ref keys.Ref, m map[string]string) (any, error) {
		if _, err := time.Parse(time.DateOnly, ref.Arg("day")); err != nil {
			return nil, fmt.Errorf("day %.64q is not yyyy-mm-dd", ref.Arg("day"))
		}
		out := map[string]any{"day": ref.Arg("day")}
		for f, v := range m {
			n, err := strconv.ParseInt(v, 10, 64)
			if (f != "processed" && f != "failed") || err != nil || n < 0 {
				return nil, fmt.Errorf("field %.64q is %.64q, want processed or failed, a count", f, v)
			}
			out[f] = n
		}
		return out, nil
	}))
	set(scheduleKey, keys.FieldsDecoder(func(ref keys.Ref, name, s string) (any, error) {
		var d schedDef
		if err := json.Unmarshal([]byte(s), &d); err != nil || d.Due < 0 {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("schedule %q: definition %.64q does not decode", name, s))
		}
		out := map[string]any{"name": name, "spec": d.Spec, "missed": d.Missed, "payload_bytes": d.Payload}
		if json.Valid(d.Payload) {
			out["payload"] = json.RawMessage(d.Payload)
			delete(out, "payload_bytes")
		}
		if d.TZ != "" {
			out["time_zone"] = d.TZ
		}
		if d.Due > 0 {
			out["next_tick"] = msTime(d.Due).UTC()
		}
		return out, nil
	}))
	set(progressKey, keys.FieldsDecoder(func(ref keys.Ref, id, s string) (any, error) {
		d, js, ok := strings.Cut(s, ",")
		dlv, err := strconv.ParseInt(d, 10, 64)
		if !ok || err != nil || dlv < 0 || !json.Valid([]byte(js)) {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("job %q: progress %.64q is not delivery,JSON", id, s))
		}
		return map[string]any{"job_id": id, "delivery": dlv, "progress": json.RawMessage(js)}, nil
	}))
	set(doneKey, keys.FieldsDecoder(func(ref keys.Ref, id, s string) (any, error) {
		var e doneEntry
		if err := json.Unmarshal([]byte(s), &e); err != nil || e.ID == "" || !State(e.State).valid() {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("job %q: entry %.64q does not decode", id, s))
		}
		out := map[string]any{"id": e.ID, "state": e.State, "finished_at": msTime(e.FinishedAt).UTC(),
			"retry_count": e.RetryCount, "delivery": e.Delivery, "result": raw(e.Result), "progress": raw(e.Progress)}
		if raw(e.Job) != nil {
			if j, err := inspectJob(ref.Key, string(e.Job)); err == nil {
				out["job"] = j
			} else {
				out["job_raw"] = string(e.Job)
			}
		}
		return out, nil
	}))
	set(eventsKey, keys.StreamDecoder(func(_ keys.Ref, id string, f map[string]any) (any, error) {
		return parseEvent(id, f)
	}))
	set(cancelKey, keys.FieldsDecoder(func(ref keys.Ref, id, s string) (any, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("job %q: cancel time %.64q", id, s))
		}
		return map[string]any{"job_id": id, "cancelled_at": msTime(n).UTC()}, nil
	}))
	set(doneAtKey, keys.ZSetDecoder(func(_ keys.Ref, id string, score float64) (any, error) {
		return map[string]any{"job_id": id, "expires_at": msTime(int64(score)).UTC()}, nil
	}))
	set(flowsKey, keys.FieldsDecoder(func(ref keys.Ref, f, s string) (any, error) {
		if id, ok := strings.CutPrefix(f, "c:"); ok {
			return map[string]any{"child": id, "parent": s}, nil
		}
		id, ok := strings.CutPrefix(f, "p:")
		parts := strings.Split(s, ",")
		if !ok || len(parts) != 3 {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("flow field %.64q: %.64q is not a parent's children left,policy,level", f, s))
		}
		left, err := strconv.ParseInt(parts[0], 10, 64)
		p, okl := parseLevel(parts[2])
		if err != nil || left < 0 || !okl || (parts[1] != "fail" && parts[1] != "ignore") {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("flow parent %q: %.64q is not children left,policy,level", id, s))
		}
		return map[string]any{"parent": id, "children_left": left, "dead_child": parts[1], "priority": p.String()}, nil
	}))
	window := func(ref keys.Ref, s string) (any, error) {
		w, c, ok := strings.Cut(s, ",")
		wn, err1 := strconv.ParseInt(w, 10, 64)
		cn, err2 := strconv.ParseInt(c, 10, 64)
		if !ok || err1 != nil || err2 != nil || wn < 0 || cn < 0 {
			return nil, keys.Corrupt(ref.Key, fmt.Errorf("rate window %.64q is not window,count", s))
		}
		return map[string]any{"window": wn, "leased": cn, "window_ends": "the key's TTL"}, nil
	}
	set(rateKey, keys.StringDecoder(window))
	set(groupRateKey, keys.StringDecoder(window))
	set(groupActiveKey, keys.ZSetDecoder(func(ref keys.Ref, id string, score float64) (any, error) {
		return map[string]any{"group": ref.Arg("group"), "job_id": id, "lease_deadline": msTime(int64(score)).UTC()}, nil
	}))
	set(deadKey, keys.ListDecoder(func(ref keys.Ref, s string) (any, error) {
		var e deadEntry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, err
		}
		p, ok := parseLevel(e.Level)
		if !ok {
			return nil, fmt.Errorf("bad level %q", e.Level)
		}
		out := map[string]any{"id": e.ID, "error": e.Error, "failed_at": msTime(e.FailedAt).UTC(),
			"retry_count": e.RetryCount, "max_retries": e.MaxRetries, "priority": p.String()}
		if len(e.Job) > 0 && string(e.Job) != "null" {
			j, err := inspectJob(ref.Key, string(e.Job))
			if err != nil {
				out["job_raw"] = string(e.Job)
			} else {
				out["job"] = j
			}
		}
		return out, nil
	}))
	return out
}

// inspectJob decodes a stored job envelope, leaving the payload as stored.
func inspectJob(key, s string) (any, error) {
	var w wireJob
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, keys.Corrupt(key, err)
	}
	if w.ID == "" || !Priority(w.Priority).valid() {
		return nil, keys.Corrupt(key, fmt.Errorf("job %.64q has no id or a bad priority", strings.TrimSpace(s)))
	}
	out := map[string]any{"id": w.ID, "priority": Priority(w.Priority).String(), "created_at": w.CreatedAt,
		"retry_count": w.RetryCount, "max_retries": w.MaxRetries}
	if w.Headers != nil {
		out["headers"] = w.Headers
	}
	if w.TimeoutMS > 0 {
		out["timeout"] = (time.Duration(w.TimeoutMS) * time.Millisecond).String()
	}
	if w.Group != "" {
		out["group"] = w.Group
	}
	if w.PayloadBytes != nil {
		out["payload_bytes"] = w.PayloadBytes
	} else {
		out["payload"] = w.Payload
	}
	return out, nil
}
