package harness

import (
	"os"
	"strings"
	"testing"

	"github.com/redschema/redschema/keys"
)

// CheckDocTable fails the test unless the package's doc.go (in the test's
// working directory) lists every key and channel pattern of its Schema s,
// as Template.Display renders it with tags on, e.g. "presence:{{user_id}}".
func CheckDocTable(t testing.TB, s keys.Schema) {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	ts := s.Templates
	if len(ts) == 0 {
		t.Fatalf("harness: the schema has no patterns")
	}
	for _, tm := range ts {
		if want := tm.Display(keys.Namespace{}); !strings.Contains(string(src), want) {
			t.Errorf("doc.go key table lacks %s (%s)", want, tm.TTLText())
		}
	}
}

// Registry returns the registry composed of schemas (keys.Compose),
// failing t when they collide.
func Registry(t testing.TB, schemas ...keys.Schema) *keys.Registry {
	t.Helper()
	r, err := keys.Compose(schemas...)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return r
}
