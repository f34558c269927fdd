package cache

import (
	"context"
	"sync"
	"time"
)

// loadControl is what a loader tells its Store through its context
// (LoadTTL, NoStore).
type loadControl struct {
	mu      sync.Mutex
	maxTTL  time.Duration
	ttl     time.Duration // 0: the call's
	noStore bool
}

type loadControlKey struct{}

func controlOf(ctx context.Context) *loadControl {
	c, _ := ctx.Value(loadControlKey{}).(*loadControl)
	return c
}

// LoadTTL, called by a loader with the context it was given, sets the
// freshness of the value it returns, instead of the call's (its TTL
// option, or the policy's): go-redis/cache's Item.TTL set from its loader.
// For a FetchMany or GetMany loader it sets that of every value the load
// returns. The grace stays the call's. It fails with ErrInvalid, and
// changes nothing, for d outside [1ms, max TTL] or a context that is not
// a loader's.
func LoadTTL(ctx context.Context, d time.Duration) error {
	c := controlOf(ctx)
	if c == nil {
		return pkg.Invalidf("load TTL", "not a loader's context")
	}
	if d < time.Millisecond || d > c.maxTTL {
		return pkg.Invalidf("load TTL", "TTL %v outside [1ms, %v]", d, c.maxTTL)
	}
	c.mu.Lock()
	c.ttl = d
	c.mu.Unlock()
	return nil
}

// NoStore, called by a loader with the context it was given, hands the
// value it returns to the callers that share its load without storing it
// (in Redis or a local tier), as for an uncacheable HTTP response. The
// entry keeps nothing but, for one lease, a marker that sends other
// processes' callers to their own loaders instead of waiting. A FetchMany
// or GetMany loader stores none of its values. It fails with ErrInvalid
// for a context that is not a loader's.
func NoStore(ctx context.Context) error {
	c := controlOf(ctx)
	if c == nil {
		return pkg.Invalidf("no store", "not a loader's context")
	}
	c.mu.Lock()
	c.noStore = true
	c.mu.Unlock()
	return nil
}

// loaderContext gives a loader's context a control of its own.
func (s *Store) loaderContext(ctx context.Context) (context.Context, *loadControl) {
	c := &loadControl{maxTTL: s.opt.maxTTL}
	return context.WithValue(ctx, loadControlKey{}, c), c
}

// apply returns cfg with the loader's TTL, and whether to store.
func (c *loadControl) apply(cfg *fetchConfig, store bool) (*fetchConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl > 0 && c.ttl != cfg.ttl {
		own := *cfg
		own.ttl = c.ttl
		cfg = &own
	}
	return cfg, store && !c.noStore
}
