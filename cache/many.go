package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// manyLoader is the loader of a FetchMany (see FetchMany).
type manyLoader = func(ctx context.Context, missing []Ref) (map[Ref][]byte, error)

// FetchMany is Fetch for many entries at once, cluster-aware: one
// pipeline reads them all (go-redis splits it per node, never a
// cross-slot MGET), one pipeline takes the leases of the missing ones,
// load runs once for those this call leased, and one pipeline writes them
// back; entries leased by other processes are waited for as Fetch does,
// and taken over if their loader dies. Results are in the order of refs;
// an entry that does not exist has Status NotFound. A loader error fails
// the call (the leases are given up). Stale values within their grace are
// served and refreshed in the background, one entry per load call.
//
// load loads the missing entries in one call; an entry it leaves out of
// the map does not exist (NotFound, cached with WithNegativeTTL). Its
// context ends after the load timeout, and it may use LoadTTL and NoStore
// as a Loader does.
func (s *Store) FetchMany(ctx context.Context, refs []Ref, load func(ctx context.Context, missing []Ref) (map[Ref][]byte, error), opts ...FetchOption) ([]Result, error) {
	const op = "fetch many"
	if err := s.checkOpen(op, ""); err != nil {
		return nil, err
	}
	if load == nil {
		return nil, pkg.Invalidf(op, "nil loader")
	}
	for _, r := range refs {
		if r.value == "" {
			return nil, pkg.Invalidf(op, "zero Ref")
		}
	}
	cfg, err := s.config(op, defaultTTL, s.opt.grace, opts)
	if err != nil {
		return nil, err
	}
	return s.fetchMany(ctx, op, refs, cfg, load)
}

func (s *Store) fetchMany(ctx context.Context, op string, refs []Ref, cfg *fetchConfig, load manyLoader) ([]Result, error) {
	out := make([]Result, len(refs))
	var todo []int
	force := map[int]bool{}
	var reads []Ref
	var readIdx []int
	for i, r := range refs {
		if s.local != nil && !cfg.revalidate {
			if v, ttl, ok := s.local.get(r.value); ok {
				s.stats.localHits.Add(1)
				s.countHit(r)
				out[i] = Result{Value: v, Status: Hit, TTL: ttl, Local: true}
				continue
			}
		}
		if cfg.revalidate {
			todo = append(todo, i)
			force[i] = true
			continue
		}
		reads = append(reads, r)
		readIdx = append(readIdx, i)
	}
	if len(reads) > 0 {
		found, err := s.readMany(ctx, reads)
		if err != nil {
			return nil, err
		}
		for j, r := range found {
			i := readIdx[j]
			switch r.state {
			case "fresh":
				s.stats.hits.Add(1)
				s.countHit(refs[i])
				if s.local != nil {
					s.local.put(refs[i].value, r.value, r.fresh, cfg.tags)
				}
				if s.early(r.fresh, r.delta) {
					s.refreshAsync(ctx, refs[i], cfg, oneOf(load, refs[i]))
				}
				out[i] = Result{Value: r.value, Status: Hit, TTL: r.fresh}
			case "stale":
				if cfg.serves(r.fresh) {
					s.stats.stale.Add(1)
					s.countHit(refs[i])
					s.refreshAsync(ctx, refs[i], cfg, oneOf(load, refs[i]))
					out[i] = Result{Value: r.value, Status: Stale, TTL: r.fresh}
					continue
				}
				todo = append(todo, i)
			case "neg":
				s.stats.negative.Add(1)
				out[i] = Result{Status: NotFound}
			case "bad":
				s.corrupt(ctx, r.badKey(refs[i]), errors.New(r.why))
				force[i] = true
				todo = append(todo, i)
			default: // miss, pass
				todo = append(todo, i)
			}
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	s.stats.misses.Add(int64(len(todo)))
	return out, s.manyFlight(ctx, op, refs, todo, force, cfg, load, out)
}

// manyFlight leases, loads and writes back the entries todo of refs, and
// waits for those other processes hold.
func (s *Store) manyFlight(ctx context.Context, op string, refs []Ref, todo []int, force map[int]bool, cfg *fetchConfig, load manyLoader, out []Result) error {
	owner := s.newID()
	var w *waiter
	defer func() {
		if w != nil {
			w.done()
		}
	}()
	backoff := 5 * time.Millisecond
	for len(todo) > 0 {
		calls := make([]call.Call, 0, len(todo)+len(cfg.tagKeys))
		for _, i := range todo {
			calls = append(calls, call.Call{Op: leaseOp, Keys: []string{refs[i].value, refs[i].meta},
				Args: []any{owner, s.leaseArg, flag(force[i]), "1", s.maxArg}})
		}
		for _, t := range cfg.tagKeys {
			calls = append(calls, call.Call{Op: tagGenOp, Keys: []string{t.gen}})
		}
		reps, errs := s.run.RunMany(ctx, calls)
		gens := tagGens(reps[len(todo):], errs[len(todo):])
		leased := make([]Ref, len(todo))
		for j, i := range todo {
			leased[j] = refs[i]
		}
		if err := errors.Join(errs...); err != nil {
			s.releaseGranted(ctx, leased, reps, errs, owner)
			return err
		}
		var mine, held []int
		var remaining time.Duration
		for j, i := range todo {
			st, err := s.leaseReply(reps[j], refs[i])
			if err != nil {
				s.releaseGranted(ctx, leased, reps, errs, owner)
				return err
			}
			switch st.state {
			case "hit":
				out[i] = Result{Value: st.value, Status: Loaded, TTL: st.fresh, Collapsed: true}
				s.stats.collapsed.Add(1)
			case "neg":
				out[i] = Result{Status: NotFound}
			case "held":
				held = append(held, i)
				remaining = max(remaining, st.remaining)
				force[i] = false
			default: // lease, pass
				mine = append(mine, i)
			}
		}
		if len(mine) > 0 {
			if err := s.loadMany(ctx, op, refs, mine, cfg, load, owner, gens, out); err != nil {
				return err
			}
		}
		todo = held
		if len(held) == 0 {
			break
		}
		if w == nil {
			keys := make([]string, len(held))
			for j, i := range held {
				keys[j] = refs[i].value
			}
			w = s.events.wait(ctx, keys...)
			continue
		}
		t := time.NewTimer(min(remaining+time.Millisecond, backoff))
		backoff = min(2*backoff, w.maxPoll)
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return pkg.Fail(op, refs[held[0]].value, nil, ctx.Err())
		}
		t.Stop()
	}
	return nil
}

// loadMany runs load for the entries mine (leased by owner) and writes
// them back in one pipeline.
func (s *Store) loadMany(ctx context.Context, op string, refs []Ref, mine []int, cfg *fetchConfig, load manyLoader, owner string, gens []string, out []Result) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.loadTimeout)
	defer cancel()
	missing := make([]Ref, len(mine))
	for j, i := range mine {
		missing[j] = refs[i]
	}
	var stops []func()
	for _, r := range missing {
		stops = append(stops, s.heartbeat(lctx, r, owner))
	}
	start := time.Now()
	s.stats.loads.Add(1)
	cctx, ctl := s.loaderContext(lctx)
	vals, err := callManyLoader(cctx, load, missing)
	delta := time.Since(start)
	for _, stop := range stops {
		stop()
	}
	cfg, store := ctl.apply(cfg, true)
	if err == nil && !store {
		// The loader declined storage: give the leases up (waiters load
		// for themselves) and hand the values out.
		for j, r := range missing {
			s.release(lctx, r, owner)
			if v, ok := vals[r]; ok {
				out[mine[j]] = Result{Value: v, Status: Loaded, TTL: cfg.ttl}
			} else {
				out[mine[j]] = Result{Status: NotFound}
			}
		}
		return nil
	}
	if err != nil {
		s.stats.loadErrors.Add(1)
		var wg sync.WaitGroup
		for _, r := range missing {
			wg.Add(1)
			go func() { defer wg.Done(); s.release(lctx, r, owner) }()
		}
		wg.Wait()
		return pkg.Fail(op, missing[0].value, nil, err)
	}
	var calls []call.Call
	var owners []int // index into mine of each write call
	neg := *cfg
	neg.ttl, neg.grace = s.opt.negTTL, 0
	for j, r := range missing {
		i := mine[j]
		v, ok := vals[r]
		c := cfg
		mode := "load"
		switch {
		case !ok && s.opt.negTTL > 0:
			out[i] = Result{Status: NotFound}
			c, mode = &neg, "neg"
		case !ok:
			out[i] = Result{Status: NotFound}
			s.release(lctx, r, owner)
			continue
		case len(v) > s.opt.maxValue:
			out[i] = Result{Value: v, Status: Loaded, TTL: cfg.ttl}
			s.release(lctx, r, owner)
			continue
		default:
			out[i] = Result{Value: v, Status: Loaded, TTL: cfg.ttl, Stored: true}
		}
		life := unit.MsFloor(c.ttl + c.grace)
		for k, t := range c.tagKeys {
			calls = append(calls, call.Call{Op: tagAddOp, Keys: []string{t.set, t.gen}, Args: []any{r.value, gens[k], life, 2 * s.maxArg}})
			owners = append(owners, j)
		}
		calls = append(calls, call.Call{Op: writeOp, Keys: []string{r.value, r.meta}, Args: s.writeArgs(owner, v, c, delta, mode)})
		owners = append(owners, j)
	}
	if len(calls) == 0 {
		return nil
	}
	_, errs := s.run.RunMany(lctx, calls)
	bad := map[int]error{} // entries whose tag or write failed
	for k, err := range errs {
		if err != nil {
			bad[owners[k]] = err
		}
	}
	for j, err := range bad {
		i := mine[j]
		out[i].Stored = false
		if errors.Is(err, errLost) {
			continue
		}
		if _, uerr := s.run.Run(lctx, unsetOp, []string{refs[i].value, refs[i].meta}, owner); uerr != nil || !errors.Is(err, errInvalidated) {
			s.report(ctx, refs[i].value, errors.Join(err, uerr))
		}
	}
	if s.local != nil {
		for _, i := range mine {
			if out[i].Stored {
				s.local.put(refs[i].value, out[i].Value, cfg.ttl, cfg.tags)
			}
		}
	}
	return nil
}

func callManyLoader(ctx context.Context, load manyLoader, missing []Ref) (m map[Ref][]byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, errors.New("loader panicked")
		}
	}()
	return load(ctx, missing)
}

// oneOf turns a FetchMany loader into the loader of one entry, for background
// refreshes.
func oneOf(load manyLoader, ref Ref) loadFn {
	return func(ctx context.Context) ([]byte, bool, error) {
		m, err := load(ctx, []Ref{ref})
		if err != nil {
			return nil, false, err
		}
		v, ok := m[ref]
		if !ok {
			return nil, false, ErrNotFound
		}
		return v, true, nil
	}
}
