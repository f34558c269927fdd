package cache

import (
	"context"
	_ "embed"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/internal/call"
)

var (
	//go:embed hits.lua
	hitsSrc string
	hitsOp  = pkg.Declare("count hits", hitsSrc, entryKeys[1:])
)

// hitCounter counts hits in memory, per meta key, and adds them to the
// entries' "hits" fields in one pipeline per flush: a read never writes.
type hitCounter struct {
	s      *Store
	seed   maphash.Seed
	shards [16]struct {
		mu sync.Mutex
		m  map[string]int64
	}
	armed   atomic.Bool
	flushMu sync.Mutex
}

func newHitCounter(s *Store) *hitCounter {
	h := &hitCounter{s: s, seed: maphash.MakeSeed()}
	for i := range h.shards {
		h.shards[i].m = map[string]int64{}
	}
	return h
}

// add counts one hit of meta and arms a flush after the flush interval.
func (h *hitCounter) add(meta string) {
	sh := &h.shards[maphash.String(h.seed, meta)%16]
	sh.mu.Lock()
	sh.m[meta]++
	sh.mu.Unlock()
	if !h.armed.Load() && h.armed.CompareAndSwap(false, true) {
		time.AfterFunc(h.s.opt.hitFlush, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.flush(ctx); err != nil {
				h.s.report(ctx, "", err)
			}
		})
	}
}

// flushBatch bounds the calls of one flush pipeline.
const flushBatch = 1000

// flush sends the counted hits: one pipeline of hits scripts (split per
// node on a cluster; several of flushBatch calls each when many keys were
// hit). Each script adds to an existing entry only, and recognises a
// replay by the flush ID.
func (h *hitCounter) flush(ctx context.Context) error {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	h.armed.Store(false)
	var calls []call.Call
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		m := sh.m
		sh.m = map[string]int64{}
		sh.mu.Unlock()
		for k, n := range m {
			calls = append(calls, call.Call{Op: hitsOp, Keys: []string{k}, Args: []any{n, ""}})
		}
	}
	var errs []error
	for len(calls) > 0 {
		batch := calls[:min(len(calls), flushBatch)]
		calls = calls[len(batch):]
		id := h.s.newID()
		for i := range batch {
			batch[i].Args[1] = id
		}
		_, es := h.s.run.RunMany(ctx, batch)
		errs = append(errs, es...)
	}
	return errors.Join(errs...)
}
