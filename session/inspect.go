package session

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: each key decodes to what the Store and
// Users APIs return for it. Refresh-token digests (refresh_token_hash,
// refresh_token_used) are never shown, although they grant nothing: Get
// does not return them either. Session IDs are shown: they are digests
// that can revoke a session but not authenticate it (see Session.ID).
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	set(sessionKey, decodeSessionKey)
	set(indexKey, keys.ZSetDecoder(func(_ keys.Ref, id string, score float64) (any, error) {
		return Entry{ID: id, ExpiresAt: time.UnixMilli(int64(score)).UTC()}, nil
	}))
	set(blacklistKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		if v != "1" {
			return nil, fmt.Errorf("revocation marker is %q, want \"1\"", v)
		}
		return map[string]any{"jti": ref.Arg("token_jti"), "revoked": true}, nil
	}))
	set(requestKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, err
		}
		return map[string]any{"request_id": ref.Arg("request_id"), "first_outcome": n}, nil
	}))
	set(rotationKey, keys.StringDecoder(func(ref keys.Ref, v string) (any, error) {
		f := strings.Fields(v)
		if len(f) != 3 || !isHexDigest(f[0]) || !isHexDigest(f[1]) || f[2] == "" {
			return nil, fmt.Errorf("rotation record is not \"<old digest> <new digest> <sealed token>\"")
		}
		// The digests and the sealed token stay hidden, as Get hides
		// the refresh-token digests: the record only says a retry of the
		// session's last rotation can still be answered.
		return map[string]any{"session_id": ref.Arg("session_id"), "retry_answerable": true}, nil
	}))
	set(eventsKey, keys.StreamDecoder(func(_ keys.Ref, id string, f map[string]any) (any, error) {
		return parseEvent(id, f)
	}))
	set(dueKey, keys.ZSetDecoder(func(_ keys.Ref, user string, score float64) (any, error) {
		return map[string]any{"user_id": user, "sweep_at": time.UnixMilli(int64(score)).UTC()}, nil
	}))
	set(userKey, keys.HashDecoder(func(ref keys.Ref, m map[string]string) (any, error) {
		return parseUser(ref.Arg("user_id"), flatten(m))
	}))
	return out
}

// decodeSessionKey reads a session as Get does, without sliding it: as
// keys.HashDecoder reads a record (HLEN, then HGETALL of at most 1,024
// fields: a session has about 20), then PTTL; ExpiresAt is the key's
// expiry by this machine's clock.
func decodeSessionKey(ctx context.Context, c redis.Cmdable, ref keys.Ref) (any, error) {
	read := keys.HashDecoder(func(ref keys.Ref, m map[string]string) (any, error) {
		return parseSession(ref.Arg("user_id"), ref.Arg("session_id"), flatten(m))
	})
	v, err := read(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	sess := v.(*Session)
	ttl, err := c.PTTL(ctx, ref.Key).Result()
	if err != nil {
		return nil, fmt.Errorf("session: inspect %q: %w", ref.Key, err)
	}
	if ttl > 0 {
		sess.ExpiresAt = time.Now().Add(ttl).Truncate(time.Millisecond).UTC()
	}
	return sess, nil
}

// flatten turns a field map into HGETALL's flat form, sorted by field.
func flatten(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for f := range m {
		names = append(names, f)
	}
	sort.Strings(names)
	flat := make([]string, 0, 2*len(m))
	for _, f := range names {
		flat = append(flat, f, m[f])
	}
	return flat
}
