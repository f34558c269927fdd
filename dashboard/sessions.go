package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/session"
)

// sessionRow is one live session as the page shows it. Its ID (a digest
// that can revoke the session) is never sent: Ref is an opaque reference
// under a per-process key, which revoke maps back.
type sessionRow struct {
	Ref          string    `json:"ref"`
	Email        string    `json:"email,omitempty"`
	IPAddress    string    `json:"ip_address,omitempty"`
	UserAgent    string    `json:"user_agent,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	LastActivity time.Time `json:"last_activity"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// userRow is a user with a session index.
type userRow struct {
	ID       string `json:"id"`
	Sessions int64  `json:"sessions"`
}

type sessionsReply struct {
	Users    []userRow    `json:"users"`             // the users with the most sessions (session.Inspector.IndexedUsers)
	Corrupt  []string     `json:"corrupt,omitempty"` // indexes of another type, left out of users (see leftOut)
	User     string       `json:"user"`
	Record   any          `json:"record"` // the user:{user_id} hash as the session package decodes it; nil if none
	Status   string       `json:"status"`
	Sessions []sessionRow `json:"sessions"`
}

// userTemplate is the session package's user record pattern.
func userTemplate() *keys.Template { return sessionTemplate("user:{user_id}") }

// sessionTemplate returns session's template spelled s, or nil.
func sessionTemplate(s string) *keys.Template {
	for _, t := range session.Schema().Templates {
		if t.Pattern().Template == s {
			return t
		}
	}
	return nil
}

// userSessions answers the sessions page: the users with the most
// sessions (session.Inspector.IndexedUsers, a SCAN), and for ?user= the user's record and live sessions
// (session.Store.List, then each session hash), both read with the
// session package's decoders: no session is slid, no last_seen touched.
func (h *Handler) userSessions(r *http.Request) (any, error) {
	ctx := r.Context()
	indexed, err := h.sessInsp.IndexedUsers(ctx, maxListed)
	corrupt, err := leftOut(err)
	if err != nil {
		return nil, err
	}
	users := []userRow{}
	for _, u := range indexed {
		users = append(users, userRow{ID: u.ID, Sessions: u.Entries})
	}
	user := r.URL.Query().Get("user")
	if user == "" {
		return sessionsReply{Users: users, Corrupt: corrupt, Sessions: []sessionRow{}, Status: "none"}, nil
	}
	entries, err := h.sessions.List(ctx, user)
	if err != nil {
		if errors.Is(err, session.ErrInvalid) {
			return nil, badRequest("%v", err)
		}
		return nil, err
	}
	out := sessionsReply{Users: users, Corrupt: corrupt, User: user, Sessions: []sessionRow{}, Status: "none"}
	st := sessionTemplate("session:user:{user_id}:{session_id}")
	for _, e := range entries {
		key, err := st.Key(h.opt.ns, user, e.ID)
		if err != nil {
			return nil, err
		}
		in, err := h.reg.Inspect(ctx, h.cs.For(st.Pattern().Area), h.opt.ns, key, "")
		if errors.Is(err, keys.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s, ok := in.Value.(*session.Session)
		if !ok {
			return nil, fmt.Errorf("dashboard: session %q decoded as %T", key, in.Value)
		}
		out.Sessions = append(out.Sessions, sessionRow{Ref: h.ref(user, e.ID), Email: s.Email, IPAddress: s.IPAddress,
			UserAgent: s.UserAgent, CreatedAt: s.CreatedAt.UTC(), LastActivity: s.LastActivity.UTC(), ExpiresAt: s.ExpiresAt.UTC()})
	}
	if t := userTemplate(); t != nil {
		key, err := t.Key(h.opt.ns, user)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		in, err := h.reg.Inspect(ctx, h.cs.For(t.Pattern().Area), h.opt.ns, key, "")
		switch {
		case errors.Is(err, keys.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out.Record = in.Value
			if u, ok := in.Value.(*session.User); ok {
				out.Status = string(u.Status)
			} else if u, ok := in.Value.(session.User); ok {
				out.Status = string(u.Status)
			}
		}
	}
	return out, nil
}

// revoke ends the session whose reference is ref (session.Store.Revoke).
func (h *Handler) revoke(r *http.Request) (any, error) {
	user, ref := r.PostFormValue("user"), r.PostFormValue("ref")
	if user == "" || ref == "" {
		return nil, badRequest("user and ref are required")
	}
	entries, err := h.sessions.List(r.Context(), user)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if h.ref(user, e.ID) == ref {
			ok, err := h.sessions.Revoke(r.Context(), user, e.ID)
			if err != nil {
				return nil, err
			}
			return map[string]any{"revoked": ok}, nil
		}
	}
	return nil, notFound("no live session of %q with reference %q", user, ref)
}

// revokeAll ends every session of the user (session.Store.RevokeAll).
func (h *Handler) revokeAll(r *http.Request) (any, error) {
	user := r.PostFormValue("user")
	if user == "" {
		return nil, badRequest("user is required")
	}
	n, err := h.sessions.RevokeAll(r.Context(), user)
	if err != nil {
		return nil, err
	}
	return map[string]any{"revoked": n}, nil
}

// block blocks the user (session.Users.Block).
func (h *Handler) block(r *http.Request) (any, error) {
	user := r.PostFormValue("user")
	if user == "" {
		return nil, badRequest("user is required")
	}
	if err := h.users.Block(r.Context(), user); err != nil {
		return nil, err
	}
	return map[string]any{"blocked": user}, nil
}

// unblock lifts a block (session.Users.Unblock).
func (h *Handler) unblock(r *http.Request) (any, error) {
	user := r.PostFormValue("user")
	if user == "" {
		return nil, badRequest("user is required")
	}
	if err := h.users.Unblock(r.Context(), user); err != nil {
		return nil, err
	}
	return map[string]any{"unblocked": user}, nil
}
