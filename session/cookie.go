package session

import (
	"net/http"
	"time"
)

// Cookie returns a cookie named name ("session" when empty)
// carrying handle (Tokens.Handle from Create), with safe defaults:
// HttpOnly, Secure, SameSite=Lax, Path "/", and Max-Age until sess's
// absolute expiry, its own for a session created with
// Info.MaxLifetime ("remember me"); the server enforces the idle
// timeout. Set it with
// http.SetCookie. A nil sess or an empty handle gives nil, which
// http.SetCookie ignores.
func Cookie(name, handle string, sess *Session) *http.Cookie {
	if sess == nil || handle == "" {
		return nil
	}
	if name == "" {
		name = defaultCookieName
	}
	age := int(time.Until(sess.AbsoluteExpiry) / time.Second)
	if age < 1 {
		age = 1
	}
	return &http.Cookie{
		Name: name, Value: handle, Path: "/", MaxAge: age,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	}
}

// ClearCookie returns a cookie that deletes the session cookie (Max-Age
// -1), with the same attributes as Cookie. An empty name means
// "session".
func ClearCookie(name string) *http.Cookie {
	if name == "" {
		name = defaultCookieName
	}
	return &http.Cookie{
		Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	}
}
