package docgen_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/docgen"
)

// SurfaceBudget is the most exported top-level names a package may have;
// queue, the largest concept, has QueueBudget (90, and one more for the
// bridge to the AI platform's Node consumers: WithSeedConsumers with
// Queue.Handoff).
const (
	SurfaceBudget = 60
	QueueBudget   = 91
)

// bound matches the names of bounds, which are unexported: a package
// states its ranges and defaults in its options' docs.
var bound = regexp.MustCompile(`^(Max|Min|Default)[A-Z0-9]`)

// TestSurfaceBudget fails when a package exports more than its budget of
// names, or exports a bound.
func TestSurfaceBudget(t *testing.T) {
	for _, p := range packages(t) {
		if p.DocOnly || p.Dir == "" {
			continue
		}
		names, err := docgen.Surface(filepath.Join(root, p.Dir))
		if err != nil {
			t.Fatal(err)
		}
		budget := SurfaceBudget
		if p.Dir == "queue" {
			budget = QueueBudget
		}
		if len(names) > budget {
			t.Errorf("%s exports %d names, over its budget of %d", p.Dir, len(names), budget)
		}
		for _, n := range names {
			if bound.MatchString(n) {
				t.Errorf("%s exports the bound %s: unexport it and state it in the option's doc", p.Dir, n)
			}
		}
	}
}

// optionName is the one naming rule of options, of a constructor or of
// one call alike.
var optionName = regexp.MustCompile(`^With(out)?[A-Z]`)

// TestOptionsStateDefaults fails when an option constructor's doc does
// not end with its "Default: ... Range: ..." line, or its name breaks the
// naming rule.
func TestOptionsStateDefaults(t *testing.T) {
	for _, p := range packages(t) {
		if p.DocOnly {
			continue
		}
		opts, err := docgen.Options(filepath.Join(root, p.Dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range opts {
			if o.Default == "" {
				t.Errorf("%s.%s: its doc does not end with a \"Default: ... Range: ...\" line", p.Dir, o.Call)
			}
			if !optionName.MatchString(o.Call) {
				t.Errorf("%s.%s: an option is named WithX, or WithoutX when it turns a default off", p.Dir, o.Call)
			}
		}
	}
}

// TestOptionTablesCurrent fails when a docs page's option table is
// stale: run "go generate ./..." at the module root.
func TestOptionTablesCurrent(t *testing.T) {
	pages, err := docgen.OptionPages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("option tables for %d pages, want every package's", len(pages))
	}
	for page, opts := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if docgen.RewriteOptions(string(src), opts) != string(src) {
			t.Errorf("%s: the option table is stale; run go generate ./...", page)
		}
	}
}

func TestDefaultLine(t *testing.T) {
	for doc, want := range map[string][2]string{
		"WithX sets x.\n\nDefault: 30s. Range: 1ms to 24h.\n": {"30s", "1ms to 24h"},
		"WithY.\n\nDefault: off.\n":                           {"off", ""},
		"WithZ.\nDefault: no blank line before.\n":            {"", ""},
		"WithW.\n\nDefault: 1,\nwrapped. Range: 1 to\n8.\n":   {"1, wrapped", "1 to 8"},
	} {
		o, err := optionFrom(t, doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]string{o.Default, o.Range}; got != want {
			t.Errorf("%q: got %q, want %q", doc, got, want)
		}
	}
}

// optionFrom parses a one-option package whose option has doc.
func optionFrom(t *testing.T, doc string) (docgen.OptionDoc, error) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package p\n\ntype Option func()\n\n")
	for _, l := range strings.Split(strings.TrimSuffix(doc, "\n"), "\n") {
		b.WriteString("// " + l + "\n")
	}
	b.WriteString("func WithX() Option { return nil }\n")
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644); err != nil {
		return docgen.OptionDoc{}, err
	}
	opts, err := docgen.Options(dir)
	if err != nil || len(opts) != 1 {
		t.Fatalf("Options: %v, %d options", err, len(opts))
	}
	return opts[0], nil
}
