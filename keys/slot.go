package keys

import (
	"strings"
	"sync"

	"github.com/redschema/redschema/internal/slottag"
)

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

// hashPart returns the part of key that Redis Cluster hashes: the content of
// the first non-empty {...} tag, or the whole key.
func hashPart(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Slot returns the Redis Cluster hash slot of key, computed as the server
// does (miniredis's CLUSTER KEYSLOT is not a real one), so tests can assert
// that the keys of one operation share a slot on any backend.
func Slot(key string) int { return int(crc16(hashPart(key)) % SlotCount) }

// SameSlot reports whether all keys hash to one cluster slot.
func SameSlot(keys ...string) bool {
	for i := 1; i < len(keys); i++ {
		if Slot(keys[i]) != Slot(keys[0]) {
			return false
		}
	}
	return true
}

// slotTags is the table of SlotTag, built on first use.
var slotTags = sync.OnceValue(func() []string { return slottag.Table(SlotCount, 36, Slot) })

// SlotTag returns the shortest base-36 string whose CRC16 falls in slot
// (0 to SlotCount-1): a key tagged {SlotTag(s)} lives in slot s, so one
// key per slot can keep what concerns that slot's keys (an index, a
// schedule, an events stream) in their scripts' own slot.
func SlotTag(slot int) string { return slotTags()[slot] }
