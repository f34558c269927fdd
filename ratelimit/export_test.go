package ratelimit

// LiveInstances reports the live instance count l's degraded mode saw at
// its last heartbeat, so that tests wait for the heartbeat to happen
// instead of sleeping past it.
func LiveInstances(l *Limiter) int64 { return l.degr.count.Load() }
