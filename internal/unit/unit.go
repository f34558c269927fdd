// Package unit converts durations to the whole milliseconds the scripts
// take. There are two helpers, and the name says which way each rounds:
//
//   - MsCeil for time granted to a holder or waited for: a lease, a
//     visibility timeout, a block or a ban, a wait or a sleep. Rounding up
//     means the holder never gets less than it asked for (a lock of 1.5 ms
//     is held 2 ms, not 1), and a wait never ends early.
//   - MsFloor for a TTL that bounds how long data is kept, or an expiry
//     that must not run past what was asked (a session's idle timeout):
//     the data never outlives the bound.
//
// When in doubt, round up: a lease cut short breaks mutual exclusion, a
// retention kept a millisecond longer breaks nothing.
package unit

import "time"

// MsCeil returns d (not negative) in whole milliseconds, rounded up
// (1.5 ms is 2). Use it for leases, visibility timeouts, blocks, bans and
// waits.
func MsCeil(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// MsFloor returns d in whole milliseconds, truncated (1.5 ms is 1). Use it
// for a TTL that bounds data retention or an expiry that must not be
// exceeded.
func MsFloor(d time.Duration) int64 {
	return int64(d / time.Millisecond)
}
