package queue

import "fmt"

// Priority orders ready jobs: every High job is delivered before any Normal
// one, every Normal before any Low; FIFO within one priority. The integer
// is the stored job's "priority" field.
type Priority int

// The three priorities, one sorted set each
// (queue:{queue_name}:priority:{high|normal|low}).
const (
	Low    Priority = -1
	Normal Priority = 0
	High   Priority = 1
)

// String returns the level name used in keys: "high", "normal" or "low".
func (p Priority) String() string {
	switch p {
	case High:
		return "high"
	case Normal:
		return "normal"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

func parseLevel(s string) (Priority, bool) {
	switch s {
	case "high":
		return High, true
	case "normal":
		return Normal, true
	case "low":
		return Low, true
	}
	return 0, false
}

func (p Priority) valid() bool { return p >= Low && p <= High }
