package metrics

import (
	"strconv"
	"sync"

	"github.com/redschema/redschema/keys"
)

// slotTags[s] is the shortest decimal string (the first, counting up from
// 0) whose CRC16 puts a key tagged with it in cluster slot s. A companion
// key tagged {slotTag(s)} lands in the slot of a seed key that has no tag
// of its own (requests:total), so one script can update both on a
// cluster. The table is a pure function of the CRC, the same in every
// process and version.
var (
	slotTagsOnce sync.Once
	slotTags     [keys.SlotCount]string
)

func slotTag(slot int) string {
	slotTagsOnce.Do(func() {
		left := keys.SlotCount
		for i := 0; left > 0; i++ {
			s := strconv.Itoa(i)
			if n := keys.Slot(s); slotTags[n] == "" {
				slotTags[n] = s
				left--
			}
		}
	})
	return slotTags[slot]
}
