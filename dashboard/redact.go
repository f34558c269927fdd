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
// digits). Keys matching no pattern are shown as they are.
func (h *Handler) shownKey(key string) string {
	t, args, ok := h.reg.Match(h.opt.ns, key)
	if !ok {
		return key
	}
	return h.shownArgs(t, args, key)
}

// shownArgs rebuilds key from t and args with every secret argument
// replaced by its reference; args is not changed.
func (h *Handler) shownArgs(t *keys.Template, args []string, key string) string {
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
	shown, err := t.Key(h.opt.ns, out...)
	if err != nil {
		return "(a " + t.Display(h.opt.ns) + " key)"
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

// redact replaces what the page must not see in a decoded value: the
// session IDs of a session index (digests that can revoke a session)
// become the opaque references the sessions page uses.
func (h *Handler) redact(ref keys.Ref, v any) any {
	entry := func(e session.Entry) any {
		return map[string]any{"ref": h.ref(ref.Arg("user_id"), e.ID), "expires_at": e.ExpiresAt}
	}
	switch x := v.(type) {
	case session.Entry:
		return entry(x)
	case *session.Entry:
		return entry(*x)
	case keys.Collection:
		return keys.Collection{Len: x.Len, Items: h.redactAll(ref, x.Items)}
	case *keys.Collection:
		return &keys.Collection{Len: x.Len, Items: h.redactAll(ref, x.Items)}
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
