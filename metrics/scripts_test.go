package metrics

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
	"github.com/redschema/redschema/keys"
)

// TestScriptsAreFiles: every script the package sends is its .lua files
// as written (the prelude, parts.lua, the script), and every
// .lua file compiles on its own after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }

// TestSlotTag: each companion-key tag hashes to its slot, and the table
// is the one stored keys were named with (the first decimal numbers are
// their slots' tags).
func TestSlotTag(t *testing.T) {
	for s := 0; s < keys.SlotCount; s++ {
		if keys.Slot(slotTag(s)) != s {
			t.Fatalf("slot %d: tag %q", s, slotTag(s))
		}
	}
	if slotTag(keys.Slot("0")) != "0" || slotTag(keys.Slot("10")) != "10" {
		t.Error("the first numbers counting up from 0 are their slots' tags")
	}
}
