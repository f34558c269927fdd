package presence

import (
	"errors"
	"strings"
	"testing"

	"github.com/redschema/redschema/keys"
)

// FuzzDecoders feeds arbitrary bytes to every decoder of stored data: each
// returns a value or an error matching keys.ErrCorrupt that names the key,
// and never panics.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{
		`{"status":"online","lastSeen":1698000000000,"activeConnections":2,"metadata":{"device":"web","lastActivity":"active"}}`,
		`{"userId":"user-123","status":"online","lastSeen":1704067200000}`,
		`{"connectedAt":1698000000000,"lastSeen":1698000000000,"metadata":{"device":"web"}}`,
		`{"userId":"user-123","username":"john_doe","timestamp":1704067200000}`,
		`{"userId":"u","status":"away","previous":"online","at":1}`,
		`{"status":"online","lastSeen":1,"activeConnections":2,"metadata":{"device":"web"},"connections":{"a":[1,1,{}],"b":[1,1,{"device":"web"}]}}`,
		`{"status":"online","metadata":{"x":1,"connections":2},"lastSeen":1}`,
		`{"status":"online","lastSeen":1,"connections":`,
		`{"status":null}`, `[]`, `"x"`, ``, `{"lastSeen":1e400}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(tt *testing.T, s string) {
		check := func(err error) {
			if err != nil && (!errors.Is(err, keys.ErrCorrupt) || !strings.Contains(err.Error(), "KEY")) {
				tt.Fatalf("error %v does not match ErrCorrupt with the key", err)
			}
		}
		p, err := decode("KEY", "u", []byte(s), 1700000000000, nil)
		check(err)
		if err == nil && !p.Status.valid() {
			tt.Fatalf("decoded an invalid status %q", p.Status)
		}
		_, err = decodeTyper("KEY", s)
		check(err)
		if _, err := decodeEvent(s); err != nil {
			check(keys.Corrupt("KEY", err)) // as the subscription reports it
		}
		_, err = decodeConn("KEY", "c", s)
		check(err)
	})
}
