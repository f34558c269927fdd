package cache

import "sync/atomic"

// Stats counts what a Store did since it was created.
type Stats struct {
	Hits      int64 // fresh values read from Redis
	LocalHits int64 // fresh values from the local tier
	Stale     int64 // stale values served (grace, or a failed loader)
	Misses    int64 // fetches that went to a flight (no fresh value)
	Loads     int64 // loader calls by this process
	LoadErr   int64 // loader calls that failed (ErrNotFound included)
	Collapsed int64 // fetches answered by another caller's load
	Negative  int64 // cached "not found" answers
	Refreshes int64 // background refreshes started (early or stale)
	Corrupt   int64 // entries found holding foreign data (reloaded)
	LocalSize int   // values in the local tier now
}

type counters struct {
	hits, localHits, stale, misses, loads, loadErrors, collapsed, negative, refreshes, corrupt atomic.Int64
}

// Stats returns the Store's counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	st := Stats{
		Hits: c.hits.Load(), LocalHits: c.localHits.Load(), Stale: c.stale.Load(), Misses: c.misses.Load(),
		Loads: c.loads.Load(), LoadErr: c.loadErrors.Load(), Collapsed: c.collapsed.Load(),
		Negative: c.negative.Load(), Refreshes: c.refreshes.Load(), Corrupt: c.corrupt.Load(),
	}
	if s.local != nil {
		st.LocalSize = s.local.len()
	}
	return st
}
