package harness

import (
	"os"
	"strings"
	"testing"

	"github.com/redschema/redschema/keys"
)

// CheckDocTable fails the test unless the package's doc.go (in the test's
// working directory) lists every pattern owner registered, as
// Template.Display renders it with tags on, e.g. "presence:{{user_id}}".
func CheckDocTable(t testing.TB, owner string) {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	ts := keys.Default().Owned(owner)
	if len(ts) == 0 {
		t.Fatalf("harness: no patterns registered for %q", owner)
	}
	for _, tm := range ts {
		if want := tm.Display(keys.Namespace{}); !strings.Contains(string(src), want) {
			t.Errorf("doc.go key table lacks %s (%s)", want, tm.TTLText())
		}
	}
}
