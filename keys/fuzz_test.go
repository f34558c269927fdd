package keys_test

import (
	"testing"
	"unicode/utf8"

	"github.com/redschema/redschema/keys"
)

var fuzzTemplate = func() *keys.Template {
	t, err := keys.Compile(keys.Pattern{Template: "f:{a}:mid:{b}", Tag: "a", Type: keys.Hash, TTL: 1, Owner: "fuzz"})
	if err != nil {
		panic(err)
	}
	return t
}()

var fuzzSibling = func() *keys.Template {
	t, err := keys.Compile(keys.Pattern{Template: "g:{a}", Tag: "a", Type: keys.Set, TTL: 1, Owner: "fuzz"})
	if err != nil {
		panic(err)
	}
	return t
}()

// FuzzKey proves, for arbitrary IDs: a key parses back to exactly its
// arguments (so no two argument tuples share a key), the key never carries a
// hash tag other than the one the template places, its slot is decided by
// the tag value alone (siblings co-locate), and the tags-off form round-trips
// too.
func FuzzKey(f *testing.F) {
	f.Add("42", "sess")
	f.Add("a:b", "c")
	f.Add("a", "b:c")
	f.Add("{x}", "}{")
	f.Add("%3A", "%")
	f.Add("2001:db8::1", "GET /x")
	f.Add("*", "?[]\\")
	f.Add("é", "\x00\x7f")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, ns := range []keys.Namespace{{}, {Prefix: "p:"}, {Prefix: "p:", NoHashTags: true}} {
			k, err := fuzzTemplate.Key(ns, a, b)
			if err != nil {
				if keys.Escape(a) != "" && keys.Escape(b) != "" && len(a) <= keys.MaxSegmentLen && len(b) <= keys.MaxSegmentLen && validUTF8(a) && validUTF8(b) {
					t.Fatalf("Key(%q, %q) rejected valid input: %v", a, b, err)
				}
				return
			}
			got, err := fuzzTemplate.Parse(ns, k)
			if err != nil {
				t.Fatalf("Parse(%q): %v", k, err)
			}
			if got[0] != a || got[1] != b {
				t.Fatalf("round trip %q %q -> %q -> %q", a, b, k, got)
			}
			if ns.NoHashTags {
				continue
			}
			want := "{" + keys.Escape(a) + "}"
			if keys.HashPart(k) != want[1:len(want)-1] {
				t.Fatalf("key %q hashes %q, want the tag %q", k, keys.HashPart(k), want)
			}
			s, err := fuzzSibling.Key(ns, a)
			if err != nil {
				t.Fatal(err)
			}
			if keys.Slot(s) != keys.Slot(k) {
				t.Fatalf("%q and %q are in different slots", s, k)
			}
		}
	})
}

// FuzzUnescape proves that every accepted encoding is canonical: decoding
// then encoding gives the same bytes back.
func FuzzUnescape(f *testing.F) {
	f.Add("a%3Ab")
	f.Add("%7B%7D")
	f.Add("plain")
	f.Add("%41")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := keys.Unescape(s)
		if err != nil {
			return
		}
		if keys.Escape(v) != s {
			t.Fatalf("Unescape(%q) = %q, which escapes to %q", s, v, keys.Escape(v))
		}
	})
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
