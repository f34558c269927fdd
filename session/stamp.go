package session

import (
	"strconv"
	"sync/atomic"
	"time"
)

// secondStamp is one Unix second as TIME spells it and as the seed's
// timestamps do ("2026-01-16T10:00:00Z"), boxed once for script
// arguments.
type secondStamp struct {
	unix       int64
	sec, stamp any
}

var lastStamp atomic.Pointer[secondStamp]

// stampHint returns this process's current second and its timestamp,
// the guess that Get and Create pass so that their scripts need not
// compute the stamp of the server's second (get_fast.lua and
// create_fast.lua use it only when TIME names that very second; any
// other second, a skewed clock's, costs the script the computation and
// nothing else). One value per second is built, then shared.
func stampHint() (sec, stamp any) {
	now := time.Now().Unix()
	if h := lastStamp.Load(); h != nil && h.unix == now {
		return h.sec, h.stamp
	}
	h := &secondStamp{unix: now, sec: strconv.FormatInt(now, 10), stamp: time.Unix(now, 0).UTC().Format(time.RFC3339)}
	lastStamp.Store(h)
	return h.sec, h.stamp
}
