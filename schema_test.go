package redschema_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/docgen"
	"github.com/redschema/redschema/keys"
)

var update = flag.Bool("update", false, "rewrite SCHEMA.md from the registry")

const schemaHeader = `# redschema key schema

Every key pattern the library's packages register, generated from the
registry (` + "`go test -run TestSchema -update .`" + `; a test fails when this file is
stale). ` + "`{{name}}`" + ` marks the hash-tagged placeholder, written ` + "`{42}`" + ` in a key;
with ` + "`keys.Namespace{NoHashTags: true}`" + ` it is written bare, as in the reference
systems' layouts ([docs/README.md](docs/README.md)). DB is the AI platform's
allocation (` + "`keys.SeedLayout`" + `, [docs/ai-platform.md](docs/ai-platform.md)); on a
cluster everything is DB 0.
` + "`go run ./cmd/redschema audit -url redis://...`" + ` checks a live Redis against it.

`

// TestSchema keeps SCHEMA.md equal to the registry's table.
func TestSchema(t *testing.T) {
	want := schemaHeader + docgen.Library().Markdown(keys.TableOptions{Layout: keys.SeedLayout()})
	if *update {
		if err := os.WriteFile("SCHEMA.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("SCHEMA.md is stale: run go test -run TestSchema -update .")
	}
}

// TestNoOverlaps proves that no two registered patterns can spell the same
// key, with hash tags on or off, except the deliberate aliases listed.
func TestNoOverlaps(t *testing.T) {
	aliases := map[string]bool{
		// lock's named resource defaults are the generic lock key with a
		// fixed resource type.
		"lock:cache:{operation} ~ lock:{resource_type}:{resource_id}":      true,
		"lock:file:{file_id} ~ lock:{resource_type}:{resource_id}":         true,
		"lock:user-session:{user_id} ~ lock:{resource_type}:{resource_id}": true,
		"lock:workflow:{workflow_id} ~ lock:{resource_type}:{resource_id}": true,
		// Seed 003's own aliases: motion and environmental readings have
		// keys of their own, and the package refuses "environmental" as a
		// generic sensor type (and never writes a list under the motion or
		// environmental names).
		"meta:motion:{location} ~ meta:{sensor_type}:{location}":            true,
		"sensor:environmental:{location} ~ sensor:{sensor_type}:{location}": true,
		"sensor:motion:{location} ~ sensor:{sensor_type}:{location}":        true,
	}
	for _, ns := range []keys.Namespace{{}, {NoHashTags: true}} {
		for _, o := range docgen.Library().Overlaps(ns) {
			pair := o[0].String() + " ~ " + o[1].String()
			if !aliases[pair] && !reservedAway(o) {
				t.Errorf("NoHashTags=%v: %s can spell the same key", ns.NoHashTags, pair)
			}
		}
	}
}

// reservedAway accepts overlaps that a package rules out by refusing the
// literal as an ID: queue names "dlq" and "stats" are reserved, so
// queue:{queue_name}:jobs can never be queue:dlq:{queue_name}.
func reservedAway(o [2]*keys.Template) bool {
	for _, t := range o {
		s := t.String()
		if !strings.HasPrefix(s, "queue:dlq:") && !strings.HasPrefix(s, "queue:stats:") {
			continue
		}
		other := o[0]
		if other == t {
			other = o[1]
		}
		return strings.HasPrefix(other.String(), "queue:{queue_name}:")
	}
	return false
}
