package session

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
)

// Status is a user record's status: its status field combined with the
// home-automation backend's active flag when the record has one (see
// Users).
type Status string

// The statuses a user record holds.
const (
	// StatusLogin: full access.
	StatusLogin Status = "login"
	// StatusAnonymous: may read (view) but not write.
	StatusAnonymous Status = "anonymous"
	// StatusBlocked: no access, even with a valid session.
	StatusBlocked Status = "blocked"
)

// CanWrite reports whether the status allows writes: only StatusLogin.
func (s Status) CanWrite() bool { return s == StatusLogin }

// User is a user record (the user:{user_id} hash).
type User struct {
	ID        string
	DeviceID  string
	IPAddress string
	// LoginTime and LastSeen are stored as Unix milliseconds strings
	// ("1672531200000").
	LoginTime time.Time
	LastSeen  time.Time
	Status    Status
}

// CanWrite reports whether the user may write (create topics, chat):
// status login. Anonymous users may only read; blocked users nothing.
func (u *User) CanWrite() bool { return u != nil && u.Status.CanWrite() }

// decodeUser builds the User from the HGETALL reply at payload element i,
// recording corruption in rep.
func decodeUser(rep *call.Reply, i int, key, userID string) *User {
	flat := rep.Strs(i)
	if rep.Err() != nil {
		return nil
	}
	usr, err := parseUser(userID, flat)
	if err != nil {
		rep.Corruptf(key, "%v", err)
		return nil
	}
	return usr
}

// parseUser decodes HGETALL output of a user record.
func parseUser(userID string, flat []string) (*User, error) {
	if len(flat)%2 != 0 {
		return nil, fmt.Errorf("odd HGETALL reply")
	}
	usr := &User{ID: userID}
	active, hasActive := "", false
	for i := 0; i < len(flat); i += 2 {
		name, v := flat[i], flat[i+1]
		var err error
		switch name {
		case "device_id":
			usr.DeviceID = v
		case "ip_address":
			usr.IPAddress = v
		case "status":
			usr.Status = Status(v)
		case "active":
			active, hasActive = v, true
		case "login_time":
			usr.LoginTime, err = unixMilli(v)
		case "last_seen":
			usr.LastSeen, err = unixMilli(v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	switch usr.Status {
	case StatusLogin, StatusAnonymous, StatusBlocked:
	case "":
		if !hasActive {
			return nil, fmt.Errorf("no status or active field")
		}
		usr.Status = StatusLogin
	default:
		return nil, fmt.Errorf("status %q", usr.Status)
	}
	switch {
	case !hasActive || active == "true":
	case active == "false":
		usr.Status = StatusBlocked
	default:
		return nil, fmt.Errorf("active %q: want 'true' or 'false'", active)
	}
	return usr, nil
}

// maxUnixMilli is the last millisecond of year 9999.
const maxUnixMilli = 253402300799999

// unixMilli parses a Unix ms time within [1970, 9999].
func unixMilli(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	if n < 0 || n > maxUnixMilli {
		return time.Time{}, fmt.Errorf("%d is not a Unix ms time of years 1970 to 9999", n)
	}
	return time.UnixMilli(n), nil
}
