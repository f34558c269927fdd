package ratelimit

import (
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestDocTable(t *testing.T) { harness.CheckDocTable(t, Schema()) }

func TestTemplatesRegistered(t *testing.T) {
	owned := harness.Registry(t, Schema()).Owned("ratelimit")
	if len(owned) != len(allTemplates) {
		t.Fatalf("registered %d templates, allTemplates lists %d", len(owned), len(allTemplates))
	}
}

// No two templates can produce the same key, with hash tags on or off:
// segment values never contain ':', so two templates of the same length
// must differ in a literal segment at some position.
func TestTemplatesDistinctInShape(t *testing.T) {
	split := func(tm *keys.Template) []string { return strings.Split(tm.String(), ":") }
	lit := func(s string) bool { return !strings.HasPrefix(s, "{") }
	for i, a := range allTemplates {
		for _, b := range allTemplates[i+1:] {
			sa, sb := split(a), split(b)
			if len(sa) != len(sb) {
				continue
			}
			differ := false
			for j := range sa {
				if lit(sa[j]) && lit(sb[j]) && sa[j] != sb[j] {
					differ = true
				}
			}
			if !differ {
				t.Errorf("%s and %s can build the same key", a, b)
			}
		}
	}
	// And by parsing: a key of one template matches no other.
	for _, ns := range []keys.Namespace{{Prefix: "p:"}, {Prefix: "p:", NoHashTags: true}} {
		for _, a := range allTemplates {
			args := make([]string, len(a.Params()))
			for i := range args {
				args[i] = "v:" + a.Params()[i]
			}
			k, err := a.Key(ns, args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range allTemplates {
				if b == a {
					continue
				}
				if _, err := b.Parse(ns, k); err == nil {
					t.Errorf("%q (from %s) parses as %s", k, a, b)
				}
			}
		}
	}
}

// Every key of one identifier hashes to one slot, whatever its template.
func TestOneSlotPerIdentifier(t *testing.T) {
	for _, id := range []string{"42", "user:1", "2001:db8::1", "{x}"} {
		var ks []string
		for _, tm := range allTemplates {
			if tm.IsChannel() || len(tm.Params()) == 0 { // namespace-wide: no identifier
				continue
			}
			args := []string{id}
			for range tm.Params()[1:] {
				args = append(args, "GET /a")
			}
			k, err := tm.Key(keys.Namespace{Prefix: "ha:"}, args...)
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
		if !keys.SameSlot(ks...) {
			t.Errorf("keys of %q span slots: %v", id, ks)
		}
	}
}
