package presence

import "github.com/redis/go-redis/v9"

// NewTyping returns the Typing of a Tracker built with opts: New(rdb,
// opts...) then Tracker.Typing, and fails as New does.
//
// Deprecated: use New(rdb, opts...) and Tracker.Typing. Kept until chat
// builds its Typing that way; it goes then.
func NewTyping(rdb redis.UniversalClient, opts ...Option) (*Typing, error) {
	t, err := newTracker("new typing", rdb, opts)
	if err != nil {
		return nil, err
	}
	return t.typing, nil
}

// NewAvailability returns the Availability of a Tracker built with opts:
// New(rdb, opts...) then Tracker.Availability, and fails as New does.
//
// Deprecated: use New(rdb, opts...) and Tracker.Availability. Kept until
// chat builds its Availability that way; it goes then.
func NewAvailability(rdb redis.UniversalClient, opts ...Option) (*Availability, error) {
	t, err := newTracker("new availability", rdb, opts)
	if err != nil {
		return nil, err
	}
	return t.avail, nil
}
