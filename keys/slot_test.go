package keys

import "testing"

// TestSlotTags checks that each tag of the slot-tag table hashes to its
// slot, and that the table is the one stored keys were named with.
func TestSlotTags(t *testing.T) {
	for s := 0; s < SlotCount; s++ {
		if Slot("{"+SlotTag(s)+"}") != s {
			t.Fatalf("slot %d: tag %q", s, SlotTag(s))
		}
	}
	if SlotTag(Slot("0")) != "0" || SlotTag(Slot("z")) != "z" {
		t.Error("the first strings counting up from 0 are their slots' tags")
	}
}
