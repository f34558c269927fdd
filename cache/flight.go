package cache

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed tag_add.lua
	tagAddSrc string
	//go:embed tag_gen.lua
	tagGenSrc string

	tagKeyPair = []*keys.Template{tagKey, tagGenKey}
	tagAddOp   = pkg.Declare("tag", tagAddSrc, tagKeyPair, call.Needs(call.ExpireAt, call.ToNum), call.On(call.Conflict, errInvalidated))
	tagGenOp   = pkg.Declare("tag generation", tagGenSrc, tagKeyPair[1:])
)

// flightOut is one flight's outcome, shared by the callers that joined it.
type flightOut struct {
	res    Result
	err    error
	leader *byte // the caller whose flight it was
}

// leaseOut is the lease script's answer.
type leaseOut struct {
	state     string
	value     []byte
	fresh     time.Duration
	remaining time.Duration
}

// lease runs the lease script for owner, with the generations of cfg's
// tags read in the same round trip (a pipeline; on a cluster it fans out
// to the tags' nodes in parallel).
func (s *Store) lease(ctx context.Context, ref Ref, owner string, force, wait bool, cfg *fetchConfig) (leaseOut, []string, error) {
	args := []any{owner, s.leaseArg, flag(force), flag(wait), s.maxArg}
	ks := []string{ref.value, ref.meta}
	var rep call.Reply
	var gens []string
	if len(cfg.tagKeys) == 0 {
		var err error
		if rep, err = s.run.Run(ctx, leaseOp, ks, args...); err != nil {
			return leaseOut{}, nil, err
		}
	} else {
		calls := make([]call.Call, 0, 1+len(cfg.tagKeys))
		calls = append(calls, call.Call{Op: leaseOp, Keys: ks, Args: args})
		for _, t := range cfg.tagKeys {
			calls = append(calls, call.Call{Op: tagGenOp, Keys: []string{t.gen}})
		}
		reps, errs := s.run.RunMany(ctx, calls)
		gens = tagGens(reps[1:], errs[1:])
		if err := errors.Join(errs...); err != nil {
			s.releaseGranted(ctx, []Ref{ref}, reps, errs, owner)
			return leaseOut{}, nil, err
		}
		rep = reps[0]
	}
	out, err := s.leaseReply(rep, ref)
	return out, gens, err
}

// leaseReply decodes the lease script's reply.
func (s *Store) leaseReply(rep call.Reply, ref Ref) (leaseOut, error) {
	out := leaseOut{state: rep.Str(0)}
	switch out.state {
	case "hit":
		out.value = []byte(rep.Str(1))
		out.fresh = time.Duration(rep.Int(2)) * time.Millisecond
	case "neg", "pass":
		out.fresh = time.Duration(rep.Int(2)) * time.Millisecond
	case "held":
		out.remaining = time.Duration(rep.Int(1)) * time.Millisecond
	case "lease":
	default:
		rep.Corruptf(ref.meta, "unknown lease state %q", out.state)
	}
	return out, rep.Err()
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// flight gets ref for the callers of this process: it takes the lease and
// loads, or waits for the process that holds it.
func (s *Store) flight(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn, force bool, stale *Result) flightOut {
	owner := s.newID()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.loadTimeout+s.opt.lease)
	defer cancel()
	var w *waiter
	defer func() {
		if w != nil {
			w.done()
		}
	}()
	backoff := 5 * time.Millisecond
	for {
		st, gens, err := s.lease(wctx, ref, owner, force, true, cfg)
		if err != nil {
			return flightOut{err: err}
		}
		switch st.state {
		case "hit":
			if s.local != nil {
				s.local.put(ref.value, st.value, st.fresh, cfg.tags)
			}
			return flightOut{res: Result{Value: st.value, Status: Loaded, TTL: st.fresh, Collapsed: true}}
		case "neg":
			s.stats.negative.Add(1)
			return flightOut{err: pkg.Fail(op, ref.value, ErrNotFound, nil)}
		case "pass":
			res, err := s.loadUnstored(ctx, op, ref, load)
			return flightOut{res: res, err: err}
		case "lease":
			return s.loadAndStore(ctx, op, ref, cfg, load, owner, gens, stale)
		}
		// Held by another process: wait for its value.
		force = false
		if w == nil {
			w = s.events.wait(wctx, ref.value)
			continue // look again now that a wake-up cannot be missed
		}
		d := min(st.remaining+time.Millisecond, backoff)
		backoff = min(2*backoff, w.maxPoll)
		t := time.NewTimer(d)
		select {
		case <-w.ch:
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			return flightOut{err: pkg.Fail(op, ref.value, nil, wctx.Err())}
		}
		t.Stop()
	}
}

// loadUnstored runs load for an entry whose values are not stored (a
// "pass" marker: its last load declined with NoStore), under the load
// timeout and not the caller's context, as every load runs.
func (s *Store) loadUnstored(ctx context.Context, op string, ref Ref, load loadFn) (Result, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.loadTimeout)
	defer cancel()
	cctx, _ := s.loaderContext(lctx)
	v, _, err := callLoader(cctx, load)
	if err != nil {
		return Result{}, pkg.Fail(op, ref.value, nil, err)
	}
	return Result{Value: v, Status: Loaded, noStore: true}, nil
}

// loadAndStore runs the loader while owner holds ref's lease, then writes
// the value back (or a marker), or gives the lease up.
func (s *Store) loadAndStore(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn, owner string, gens []string, stale *Result) flightOut {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.loadTimeout)
	defer cancel()
	stop := s.heartbeat(lctx, ref, owner)
	start := time.Now()
	s.stats.loads.Add(1)
	cctx, ctl := s.loaderContext(lctx)
	v, store, err := callLoader(cctx, load)
	delta := time.Since(start)
	stop()
	cfg, store = ctl.apply(cfg, store)
	if err != nil {
		s.stats.loadErrors.Add(1)
		if errors.Is(err, ErrNotFound) {
			if s.opt.negTTL > 0 {
				neg := *cfg
				neg.ttl, neg.grace = s.opt.negTTL, 0
				if _, werr := s.writeBack(lctx, ref, owner, nil, &neg, 0, gens, "neg"); werr != nil {
					s.report(ctx, ref.value, werr)
				}
			} else {
				s.release(lctx, ref, owner)
			}
			if err == ErrNotFound {
				return flightOut{err: pkg.Fail(op, ref.value, ErrNotFound, nil)}
			}
			return flightOut{err: pkg.Fail(op, ref.value, nil, err)}
		}
		s.release(lctx, ref, owner)
		if stale != nil && s.opt.staleOnError {
			s.report(ctx, ref.value, pkg.Fail(op, ref.value, nil, err))
			s.stats.stale.Add(1)
			return flightOut{res: *stale}
		}
		return flightOut{err: pkg.Fail(op, ref.value, nil, err)}
	}
	res := Result{Value: v, Status: Loaded, TTL: cfg.ttl}
	switch {
	case !store:
		pass := *cfg
		pass.ttl, pass.grace, pass.tagKeys = s.opt.lease, 0, nil
		if _, werr := s.writeBack(lctx, ref, owner, nil, &pass, 0, nil, "pass"); werr != nil {
			s.report(ctx, ref.value, werr)
		}
		res.noStore = true
	case len(v) > s.opt.maxValue:
		s.release(lctx, ref, owner)
		s.report(ctx, ref.value, pkg.Invalidf(op, "loaded value of %d bytes above the max %d: not stored", len(v), s.opt.maxValue))
	default:
		stored, werr := s.writeBack(lctx, ref, owner, v, cfg, delta, gens, "load")
		if werr != nil {
			s.report(ctx, ref.value, werr)
		}
		res.Stored = stored
		if stored && s.local != nil {
			s.local.put(ref.value, v, cfg.ttl, cfg.tags)
		}
	}
	return flightOut{res: res}
}

// writeBack writes value (or a marker, per mode) with its tags, in one
// pipeline: the tags first, then the entry. gens are the tags'
// generations when the load started (nil: a Set, which does not check).
// A write whose lease was lost stores nothing and reports false, nil; a
// tag that could not be recorded takes the write back (an entry its tag
// does not list would survive the tag's invalidation).
func (s *Store) writeBack(ctx context.Context, ref Ref, id string, value []byte, cfg *fetchConfig, delta time.Duration, gens []string, mode string) (bool, error) {
	life := unit.MsFloor(cfg.ttl + cfg.grace)
	calls := make([]call.Call, 0, len(cfg.tagKeys)+1)
	for i, t := range cfg.tagKeys {
		gen := "*"
		if gens != nil {
			gen = gens[i]
		}
		calls = append(calls, call.Call{Op: tagAddOp, Keys: []string{t.set, t.gen}, Args: []any{ref.value, gen, life, 2 * s.maxArg}})
	}
	calls = append(calls, call.Call{Op: writeOp, Keys: []string{ref.value, ref.meta}, Args: s.writeArgs(id, value, cfg, delta, mode)})
	var errs []error
	if len(calls) == 1 {
		_, err := s.run.Run(ctx, writeOp, calls[0].Keys, calls[0].Args...)
		errs = []error{err}
	} else {
		_, errs = s.run.RunMany(ctx, calls)
	}
	werr := errs[len(errs)-1]
	if errors.Is(werr, errLost) {
		return false, nil
	}
	if werr != nil {
		return false, werr
	}
	for _, terr := range errs[:len(errs)-1] {
		if terr == nil {
			continue
		}
		_, uerr := s.run.Run(ctx, unsetOp, []string{ref.value, ref.meta}, id)
		if errors.Is(terr, errInvalidated) && uerr == nil {
			return false, nil
		}
		return false, errors.Join(terr, uerr)
	}
	return true, nil
}

// writeArgs are the write script's arguments: value stored by id with
// cfg's freshness and grace (for a marker, its freshness), after a load
// of delta. The life is the sum of the freshness and the grace in whole
// milliseconds, so that a hit's PTTL less the hint's grace never exceeds
// the freshness. created_at is this process's clock: no decision reads
// it.
func (s *Store) writeArgs(id string, value []byte, cfg *fetchConfig, delta time.Duration, mode string) []any {
	hint := mode
	if mode == "load" || mode == "set" {
		hint = strconv.FormatInt(unit.MsFloor(cfg.grace), 10) + ":" + strconv.FormatInt(unit.MsCeil(delta), 10)
	}
	return []any{id, value, unit.MsFloor(cfg.ttl) + unit.MsFloor(cfg.grace), hint, mode, s.channel, s.origin,
		time.Now().UTC().Format(time.RFC3339), len(value)}
}

// tagGens returns the generations that tag_gen calls read, and sets the
// error of each call whose reply holds one.
func tagGens(reps []call.Reply, errs []error) []string {
	gens := make([]string, len(reps))
	for i, rep := range reps {
		if errs[i] == nil {
			gens[i], _ = rep.OptStr(0)
			errs[i] = rep.Err()
		}
	}
	return gens
}

// releaseGranted gives back, in one pipeline, the leases that the lease
// calls for refs (the first replies of a round) granted in a round that
// failed: nobody will load them, and every other process would wait
// each one out.
func (s *Store) releaseGranted(ctx context.Context, refs []Ref, reps []call.Reply, errs []error, owner string) {
	var calls []call.Call
	var keys []string
	for j, ref := range refs {
		if errs[j] == nil && reps[j].Str(0) == "lease" {
			calls = append(calls, call.Call{Op: releaseOp, Keys: []string{ref.meta}, Args: []any{owner, s.channel, s.origin, ref.value}})
			keys = append(keys, ref.value)
		}
	}
	if len(calls) == 0 {
		return
	}
	_, rerrs := s.run.RunMany(ctx, calls)
	for j, err := range rerrs {
		if err != nil {
			s.report(ctx, keys[j], err)
		}
	}
}

// release gives up owner's lease on ref, waking the waiters to take over.
func (s *Store) release(ctx context.Context, ref Ref, owner string) {
	if _, err := s.run.Run(ctx, releaseOp, []string{ref.meta}, owner, s.channel, s.origin, ref.value); err != nil {
		s.report(ctx, ref.value, err)
	}
}

// heartbeat renews owner's lease every third of the lease until the
// returned function is called (which waits for a renewal in flight), the
// lease is lost, or ctx ends. A timer, not a goroutine: a load shorter
// than a third of the lease renews nothing and starts nothing.
func (s *Store) heartbeat(ctx context.Context, ref Ref, owner string) (stop func()) {
	every := s.opt.lease / 3
	var (
		mu      sync.Mutex
		stopped bool
		running sync.WaitGroup
		t       *time.Timer
	)
	renew := func() {
		mu.Lock()
		if stopped || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		if _, err := s.run.Run(ctx, extendOp, []string{ref.meta}, owner, s.leaseArg); errors.Is(err, errLost) {
			return
		}
		mu.Lock()
		if !stopped {
			t.Reset(every)
		}
		mu.Unlock()
	}
	mu.Lock()
	t = time.AfterFunc(every, renew)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		running.Wait()
	}
}

// refreshAsync refreshes ref in the background, once per process at a
// time and, through the lease, once across processes: early (XFetch) or
// within the grace (stale-while-revalidate).
func (s *Store) refreshAsync(ctx context.Context, ref Ref, cfg *fetchConfig, load loadFn) {
	if !s.background() {
		return // closing
	}
	if _, busy := s.refreshing.LoadOrStore(ref.value, struct{}{}); busy {
		s.bg.Done()
		return
	}
	s.stats.refreshes.Add(1)
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer s.bg.Done()
		defer s.refreshing.Delete(ref.value)
		owner := s.newID()
		lctx, cancel := context.WithTimeout(ctx, s.opt.loadTimeout)
		defer cancel()
		st, gens, err := s.lease(lctx, ref, owner, true, false, cfg)
		if err != nil {
			s.report(ctx, ref.value, err)
			return
		}
		if st.state != "lease" {
			return // another process refreshes it
		}
		if out := s.loadAndStore(ctx, "refresh", ref, cfg, load, owner, gens, nil); out.err != nil && !errors.Is(out.err, ErrNotFound) {
			s.report(ctx, ref.value, out.err)
		}
	}()
}
