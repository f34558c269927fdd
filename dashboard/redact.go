package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/session"
)

// ref is the opaque reference the page gets for a value it must not see
// (a session ID): an HMAC under a per-process key.
func (h *Handler) ref(parts ...string) string {
	m := hmac.New(sha256.New, h.refKey)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil)[:12])
}

// secretParam reports whether a key parameter is a value the page must
// not see: a session ID is the digest that can revoke its session.
func secretParam(name string) bool { return name == "session_id" }

// shownKey is key as the page may see it: a session ID in it replaced by
// the opaque reference the sessions page uses ("ref-" and 24 hex
// digits), also in a stray key that would match under another prefix
// (keys.Registry.Guess). Other keys are shown as they are.
func (h *Handler) shownKey(key string) string {
	ns := h.opt.ns
	t, args, ok := h.reg.Match(ns, key)
	if !ok {
		if ns, ok = h.reg.Guess(h.opt.ns, key); ok {
			t, args, ok = h.reg.Match(ns, key)
		}
	}
	if !ok {
		return key
	}
	return h.shownArgs(ns, t, args, key)
}

// shownArgs rebuilds key (under ns) from t and args with every secret
// argument replaced by its reference; args is not changed.
func (h *Handler) shownArgs(ns keys.Namespace, t *keys.Template, args []string, key string) string {
	params := t.Params()
	var out []string
	for i, p := range params {
		if !secretParam(p) {
			continue
		}
		if out == nil {
			out = append([]string(nil), args...)
		}
		out[i] = "ref-" + h.ref(argNamed(params, args, "user_id"), args[i])
	}
	if out == nil {
		return key
	}
	shown, err := t.Key(ns, out...)
	if err != nil {
		return "(a " + t.Display(ns) + " key)"
	}
	return shown
}

// argNamed is the argument of the parameter called name, or "".
func argNamed(params, args []string, name string) string {
	for i, p := range params {
		if p == name && i < len(args) {
			return args[i]
		}
	}
	return ""
}

// redact replaces what the page must not see in a decoded value: every
// session ID (a digest that can revoke its session) in a session, an
// index entry, an event or a rotation record becomes the opaque
// reference the sessions page uses.
func (h *Handler) redact(ref keys.Ref, v any) any {
	user := ref.Arg("user_id")
	switch x := v.(type) {
	case session.Entry:
		return map[string]any{"ref": h.ref(user, x.ID), "expires_at": x.ExpiresAt}
	case *session.Entry:
		return h.redact(ref, *x)
	case session.Session:
		x.ID = "ref-" + h.ref(x.UserID, x.ID)
		return x
	case *session.Session:
		return h.redact(ref, *x)
	case session.Event:
		x.SessionID = "ref-" + h.ref(x.UserID, x.SessionID)
		return x
	case *session.Event:
		return h.redact(ref, *x)
	case map[string]any:
		if id, ok := x["session_id"].(string); ok {
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = e
			}
			out["session_id"] = "ref-" + h.ref(user, id)
			return out
		}
	case keys.Collection:
		return keys.Collection{Len: x.Len, Items: h.redactAll(ref, x.Items), Next: x.Next}
	case *keys.Collection:
		return h.redact(ref, *x)
	}
	return v
}

func (h *Handler) redactAll(ref keys.Ref, items []any) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = h.redact(ref, it)
	}
	return out
}
