// Package slottag builds the tables of hash tags that name one key per
// Redis Cluster slot: keys' base-36 tags (keys.SlotTag) and the decimal
// ones metrics' keys have always carried.
package slottag

import "strconv"

// Table returns n tags, one per slot: for each slot, the first string,
// counting up from 0 in base, that slot maps to it. A table is a pure
// function of the slot function and the base, the same in every process
// and version, so keys tagged with it keep their names across releases.
func Table(n, base int, slot func(string) int) []string {
	tags := make([]string, n)
	for i, left := int64(0), n; left > 0; i++ {
		s := strconv.FormatInt(i, base)
		if k := slot(s); tags[k] == "" {
			tags[k] = s
			left--
		}
	}
	return tags
}
