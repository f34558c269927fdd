package aimemory

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: conversations decode to Message values,
// the summary hash to a Summary, the user hash to a UserContext (its
// token count as stored, for the day it names), the caches to their
// chunks or response text with the cache package's metadata.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	msg := keys.ListDecoder(func(_ keys.Ref, s string) (any, error) { return decodeMessage(s) })
	set(convKey, msg)
	set(evictedKey, msg)
	set(metaKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		var s Summary
		s.Text = m["summary"]
		for f, dst := range map[string]*int{"summary_tokens": &s.Tokens, "covered": &s.Covered, "lost": &s.Lost} {
			if v, ok := m[f]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("%s %.32q", f, v)
				}
				*dst = n
			}
		}
		return map[string]any{"summary": s, "version": m["version"]}, nil
	}))
	set(reqsKey, keys.ZSetDecoder(func(_ keys.Ref, m string, score float64) (any, error) {
		id, reply, ok := strings.Cut(m, "=")
		out := map[string]any{"request_id": id, "at": time.UnixMilli(int64(score)).UTC()}
		if ok {
			out["reply"] = reply // length,evicted,tokens of the day,pending
		}
		return out, nil
	}))
	set(indexKey, keys.ZSetDecoder(func(_ keys.Ref, m string, score float64) (any, error) {
		return map[string]any{"conversation_id": m, "expires_at": time.UnixMilli(int64(score)).UTC()}, nil
	}))
	set(userKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		u := UserContext{LastConversationID: m["last_conversation_id"], Day: m["tokens_day"]}
		if v, ok := m["recent_topics"]; ok {
			if err := json.Unmarshal([]byte(v), &u.RecentTopics); err != nil {
				return nil, fmt.Errorf("recent_topics: %v", err)
			}
		}
		if v, ok := m["preferences"]; ok {
			if !json.Valid([]byte(v)) {
				return nil, fmt.Errorf("preferences are not JSON")
			}
			u.Preferences = json.RawMessage(v)
		}
		if v, ok := m["total_tokens_today"]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("total_tokens_today %.32q", v)
			}
			u.TokensToday = n
		}
		return u, nil
	}))
	for _, l := range []cache.Layout{{Value: ragKey, Meta: ragMetaKey}, {Value: responseKey, Meta: responseMetaKey}} {
		for t, d := range l.Decoders() {
			set(t, d)
		}
	}
	set(ragKey, keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		var chunks []json.RawMessage
		if err := json.Unmarshal([]byte(v), &chunks); err != nil {
			return nil, fmt.Errorf("RAG chunks: %v", err)
		}
		return map[string]any{"chunks": chunks}, nil
	}))
	set(responseKey, keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		return map[string]any{"response": v}, nil
	}))
	return out
}
