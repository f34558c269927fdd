package session

import "unicode/utf8"

// Limits on what a session stores, checked before anything is written.
const (
	// maxFieldLen is the longest value, in bytes, of any session field.
	maxFieldLen = 4096
	// maxExtraFields is the most caller-defined fields a session holds.
	maxExtraFields = 32
	// maxFieldNameLen is the longest caller-defined field name, in bytes.
	maxFieldNameLen = 64
)

// Hash field names. The first eight are the seed layout's; absolute_expiry,
// refresh_token_used and idle_timeout (a session's own idle timeout, Unix
// ms, written only when Info.IdleTimeout is set) are this package's.
const (
	fUserID       = "user_id"
	fEmail        = "email"
	fCreatedAt    = "created_at"
	fLastActivity = "last_activity"
	fIPAddress    = "ip_address"
	fUserAgent    = "user_agent"
	fDevice       = "device_fingerprint"
	fRefreshHash  = "refresh_token_hash"
	fAbsoluteExp  = "absolute_expiry"
	fRefreshUsed  = "refresh_token_used"
	fIdleTimeout  = "idle_timeout"
)

// reserved are the field names that extras may not use.
var reserved = map[string]bool{
	fUserID: true, fEmail: true, fCreatedAt: true, fLastActivity: true,
	fIPAddress: true, fUserAgent: true, fDevice: true, fRefreshHash: true,
	fAbsoluteExp: true, fRefreshUsed: true, fIdleTimeout: true,
}

// updatable are the seed fields that Update may change.
var updatable = map[string]bool{fEmail: true, fIPAddress: true, fUserAgent: true, fDevice: true}

func checkValue(op, name, v string) error {
	if len(v) > maxFieldLen {
		return pkg.Invalidf(op, "field %q is %d bytes, more than %d", name, len(v), maxFieldLen)
	}
	if !utf8.ValidString(v) {
		return pkg.Invalidf(op, "field %q is not valid UTF-8", name)
	}
	return nil
}

func checkExtraName(op, name string) error {
	switch {
	case name == "":
		return pkg.Invalidf(op, "empty extra field name")
	case len(name) > maxFieldNameLen:
		return pkg.Invalidf(op, "extra field name %.16q... is longer than %d bytes", name, maxFieldNameLen)
	case !utf8.ValidString(name):
		return pkg.Invalidf(op, "extra field name %q is not valid UTF-8", name)
	case reserved[name]:
		return pkg.Invalidf(op, "extra field name %q is reserved", name)
	}
	return nil
}
