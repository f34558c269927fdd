package keys

import "testing"

// TestSlotTags checks that each tag of a slot-tag table hashes to its
// slot, and that the tables are the ones stored keys were named with.
func TestSlotTags(t *testing.T) {
	for s := 0; s < SlotCount; s++ {
		if Slot("{"+SlotTag(s)+"}") != s || Slot(DecimalSlotTag(s)) != s {
			t.Fatalf("slot %d: tags %q and %q", s, SlotTag(s), DecimalSlotTag(s))
		}
	}
	if SlotTag(Slot("0")) != "0" || DecimalSlotTag(Slot("10")) != "10" {
		t.Error("the first strings counting up from 0 are their slots' tags")
	}
}
