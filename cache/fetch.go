package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Loader loads the value of one entry of a Store on a miss. Its context
// ends after the load timeout (WithLoadTimeout), not with the callers'
// contexts. It returns ErrNotFound (wrapped or not) when the value does
// not exist; any other error is returned to the callers and never cached.
// A panic in a loader is returned as an error. A loader may set the
// freshness of what it returns with LoadTTL, or decline to store it with
// NoStore, called with the context it was given.
type Loader func(ctx context.Context) ([]byte, error)

// loadFn is a loader that may decline to store what it returns (an
// uncacheable HTTP response).
type loadFn func(ctx context.Context) (v []byte, store bool, err error)

// Status says how a Fetch got its value.
type Status uint8

// The statuses of a Result.
const (
	// Loaded: a loader ran for this call (Result.Collapsed: another
	// caller's load, in this process or another, gave the value).
	Loaded Status = iota
	// Hit: a fresh value from Redis or the local tier.
	Hit
	// Stale: a value past its freshness, within its grace, served while
	// one background refresh replaces it, or because the loader failed
	// (WithStaleOnError).
	Stale
	// NotFound: FetchMany's answer for an entry whose loader did not
	// return it (or a cached "not found").
	NotFound
)

// String returns "loaded", "hit" or "stale".
func (s Status) String() string {
	switch s {
	case Loaded:
		return "loaded"
	case Hit:
		return "hit"
	case Stale:
		return "stale"
	case NotFound:
		return "not found"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Result is what Fetch returns.
type Result struct {
	Value  []byte
	Status Status
	// TTL is the freshness left when the value was served (negative: it
	// was stale by that much), or the full TTL of a value just loaded.
	TTL time.Duration
	// Local is set when the value came from the local tier.
	Local bool
	// Collapsed is set when another caller's load gave the value.
	Collapsed bool
	// Stored is set when the value was written to Redis by this call's
	// load.
	Stored bool

	noStore bool // the loader declined to store it (uncacheable)
}

// FetchOption configures one Fetch, Get, GetMany or Set call.
type FetchOption func(*fetchConfig)

type fetchConfig struct {
	ttl, grace       time.Duration
	ttlSet, graceSet bool
	tags             []string
	revalidate       bool
	tagKeys          []tagPair // built by check
}

// WithTTL sets the freshness of what the call stores.
//
// Default: the policy's TTL for a Cache, 60s for a Store. Range: 1ms to the max TTL.
func WithTTL(d time.Duration) FetchOption {
	return func(c *fetchConfig) { c.ttl, c.ttlSet = d, true }
}

// WithStaleWhileRevalidate sets the stale-while-revalidate window (the
// grace) of what the call stores and serves. It bounds what the call
// serves whatever the stored entry's own grace: a value stale by d or more is not served while it is refreshed;
// the call loads it, as on a miss (and on a failed load
// WithStaleOnError still falls back to it within the entry's grace).
//
// Default: WithGrace, or the policy rule's Grace. Range: 0 to the max TTL.
func WithStaleWhileRevalidate(d time.Duration) FetchOption {
	return func(c *fetchConfig) { c.grace, c.graceSet = d, true }
}

// serves reports whether a stale value whose freshness is fresh (<= 0:
// stale by -fresh) is within the call's grace, which bounds what it
// serves while it is refreshed.
func (c *fetchConfig) serves(fresh time.Duration) bool {
	return -fresh < c.grace
}

// WithTags records what the call stores under these tags (at most 32), for
// InvalidateTag. A tag "user:{id}" is stored at cache:tag:user:{user_id},
// any other at cache:tag:{tag_name}.
//
// Default: none.
func WithTags(tags ...string) FetchOption {
	return func(c *fetchConfig) { c.tags = append(c.tags, tags...) }
}

// WithRevalidate skips the stored value and loads a new one (an HTTP
// request's "Cache-Control: no-cache"); callers that revalidate at once share one
// load, and a load already running in another process is waited for.
//
// Default: off.
func WithRevalidate() FetchOption { return func(c *fetchConfig) { c.revalidate = true } }

// config applies opts over the defaults ttl and grace and checks them.
func (s *Store) config(op string, ttl, grace time.Duration, opts []FetchOption) (*fetchConfig, error) {
	c := &fetchConfig{ttl: ttl, grace: grace}
	for _, f := range opts {
		if f != nil {
			f(c)
		}
	}
	switch {
	case c.ttl < time.Millisecond || c.ttl > s.opt.maxTTL:
		return nil, pkg.Invalidf(op, "TTL %v outside [1ms, %v]", c.ttl, s.opt.maxTTL)
	case c.grace < 0 || c.grace > s.opt.maxTTL:
		return nil, pkg.Invalidf(op, "grace %v outside [0, %v]", c.grace, s.opt.maxTTL)
	case len(c.tags) > maxTags:
		return nil, pkg.Invalidf(op, "%d tags, at most %d", len(c.tags), maxTags)
	}
	if len(c.tags) > 0 {
		c.tagKeys = make([]tagPair, len(c.tags))
		for i, t := range c.tags {
			p, err := s.tagKeys(op, t)
			if err != nil {
				return nil, err
			}
			c.tagKeys[i] = p
		}
	}
	return c, nil
}

// Fetch returns the entry ref, loading it with load on a miss. A fresh
// value costs one round trip (none from the local tier), and no write: its
// hit is counted in memory and flushed in batches. On a miss, the callers
// of this process share one load (singleflight), and across processes one
// lease decides who loads: the others wait for the value (woken by a
// message, polling at most every second) and read it when it lands; if the
// loading process dies, one of them takes over when its lease runs out.
// A fresh value may be refreshed early in the background (XFetch, see
// WithBeta); a stale value within its grace is served while one
// background refresh replaces it.
//
// Errors: ErrNotFound from the loader (or cached, WithNegativeTTL); the
// loader's other errors (never cached; WithStaleOnError serves a stale
// value instead); ErrInvalid for a bad option; ctx's error when the
// caller stops waiting (the load goes on for the others); Redis errors as
// they are. An entry holding data this package did not write is reported
// to the error hook and reloaded.
func (s *Store) Fetch(ctx context.Context, ref Ref, load Loader, opts ...FetchOption) (Result, error) {
	const op = "fetch"
	if err := s.checkOpen(op, ref.value); err != nil {
		return Result{}, err
	}
	if ref.value == "" || load == nil {
		return Result{}, pkg.Invalidf(op, "zero Ref or nil loader")
	}
	cfg, err := s.config(op, defaultTTL, s.opt.grace, opts)
	if err != nil {
		return Result{}, err
	}
	return s.fetch(ctx, op, ref, cfg, func(ctx context.Context) ([]byte, bool, error) {
		v, err := load(ctx)
		return v, true, err
	})
}

// fetch is Fetch's flow for every caller in the package: lookup, then
// resume when nothing was served.
func (s *Store) fetch(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn) (Result, error) {
	if cfg.revalidate {
		return s.resume(ctx, op, ref, cfg, load, readOut{state: "miss"}, true)
	}
	res, r, served, refresh, err := s.lookup(ctx, ref, cfg)
	if err != nil {
		return Result{}, err
	}
	if refresh {
		s.refreshAsync(ctx, ref, cfg, load)
	}
	if served {
		return res, nil
	}
	return s.resume(ctx, op, ref, cfg, load, r, false)
}

// lookup is a fetch's hit path, which needs no loader: the local tier,
// then one read. served says res is the answer (a fresh value, or a stale
// one within its grace); refresh, that a background refresh is due
// (XFetch, or the grace). Otherwise r is what the read found, for resume.
func (s *Store) lookup(ctx context.Context, ref Ref, cfg *fetchConfig) (res Result, r readOut, served, refresh bool, err error) {
	if s.local != nil {
		if v, ttl, ok := s.local.get(ref.value); ok {
			s.stats.localHits.Add(1)
			s.countHit(ref)
			return Result{Value: v, Status: Hit, TTL: ttl, Local: true}, r, true, false, nil
		}
	}
	if r, err = s.read(ctx, ref); err != nil {
		return Result{}, r, false, false, err
	}
	switch {
	case r.state == "fresh":
		s.stats.hits.Add(1)
		s.countHit(ref)
		if s.local != nil {
			s.local.put(ref.value, r.value, r.fresh, cfg.tags)
		}
		return Result{Value: r.value, Status: Hit, TTL: r.fresh}, r, true, s.early(r.fresh, r.delta), nil
	case r.state == "stale" && cfg.serves(r.fresh):
		s.stats.stale.Add(1)
		s.countHit(ref)
		return Result{Value: r.value, Status: Stale, TTL: r.fresh}, r, true, true, nil
	}
	return Result{}, r, false, false, nil
}

// resume goes on from what lookup found when it served nothing (or from
// nothing, for a forced load): a cached "not found", a marker, data to
// heal, or a miss, which loads once across processes.
func (s *Store) resume(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn, r readOut, force bool) (Result, error) {
	var stale *Result
	switch r.state {
	case "stale":
		stale = &Result{Value: r.value, Status: Stale, TTL: r.fresh}
	case "neg":
		s.stats.negative.Add(1)
		return Result{}, pkg.Fail(op, ref.value, ErrNotFound, nil)
	case "pass":
		return s.loadUnstored(ctx, op, ref, load)
	case "bad":
		s.corrupt(ctx, r.badKey(ref), errors.New(r.why))
		force = true
	}
	s.stats.misses.Add(1)
	key := ref.value
	if force {
		key = "\x00" + key // a forced load never hands out a value read before it
	}
	me := new(byte)
	ch := s.flights.DoChan(key, func() (any, error) {
		// The flight goes on when its callers stop waiting: Close waits
		// for it.
		if !s.background() {
			return flightOut{err: pkg.Fail(op, ref.value, ErrClosed, nil), leader: me}, nil
		}
		defer s.bg.Done()
		out := s.flight(ctx, op, ref, cfg, load, force, stale)
		out.leader = me
		return out, nil
	})
	select {
	case <-ctx.Done():
		return Result{}, pkg.Fail(op, ref.value, nil, ctx.Err())
	case r := <-ch:
		out := r.Val.(flightOut)
		if out.leader != me {
			out.res.Collapsed = true
			out.res.Stored = false
			s.stats.collapsed.Add(1)
		}
		return out.res, out.err
	}
}

// corrupt reports data this package did not write at key.
func (s *Store) corrupt(ctx context.Context, key string, why error) {
	s.stats.corrupt.Add(1)
	if s.local != nil {
		s.local.del(key)
	}
	s.report(ctx, key, pkg.Fail("get", key, nil, keys.Corrupt(key, why)))
}

// early decides XFetch's early recomputation: refresh when
// delta·β·(-ln U) reaches the freshness left, U uniform in (0, 1].
func (s *Store) early(fresh, delta time.Duration) bool {
	if s.opt.beta == 0 || delta <= 0 {
		return false
	}
	return float64(delta)*s.opt.beta*-math.Log(1-rand.Float64()) >= float64(fresh)
}

// countHit counts a hit of ref for the next flush.
func (s *Store) countHit(ref Ref) {
	if s.hits != nil {
		s.hits.add(ref.meta)
	}
}

// callLoader calls load, turning a panic into an error.
func callLoader(ctx context.Context, load loadFn) (v []byte, store bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, store, err = nil, false, fmt.Errorf("loader panicked: %v", p)
		}
	}()
	return load(ctx)
}

// tagPair is a tag's keys.
type tagPair struct{ set, gen, dying string }

// tagKeys returns the keys of tag: cache:tag:user:{user_id}, its
// generation and its dying set for "user:{id}", cache:tag:{tag_name} and
// its companions otherwise.
func (s *Store) tagKeys(op, tag string) (tagPair, error) {
	set, gen, dying := tagKey, tagGenKey, tagDyingKey
	arg := tag
	if id, ok := strings.CutPrefix(tag, "user:"); ok && id != "" {
		set, gen, dying, arg = userTagKey, userTagGenKey, userTagDyingKey, id
	}
	sk, err := pkg.Key(op, set, s.opt.ns, arg)
	if err != nil {
		return tagPair{}, err
	}
	gk, err := pkg.Key(op, gen, s.opt.ns, arg)
	if err != nil {
		return tagPair{}, err
	}
	dk, err := pkg.Key(op, dying, s.opt.ns, arg)
	if err != nil {
		return tagPair{}, err
	}
	return tagPair{set: sk, gen: gk, dying: dk}, nil
}
