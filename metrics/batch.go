package metrics

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed parts.lua
	partsSrc string
	//go:embed apply.lua
	applySrc string
	applyOp  = pkg.Declare("flush", applySrc, []*keys.Template{ledgerKey, counterKey}, call.Uses(partsSrc), call.Needs(call.Batched))
)

// batch is one flush: the operations of every slot it touches, each slot
// group applied once by the apply script under the batch's sequence
// number.
type batch struct {
	seq     int64
	leaving bool
	groups  []*group
}

// group is the apply call of one cluster slot (on a standalone server,
// one group holds everything).
type group struct {
	keys []string       // KEYS: the ledger first
	idx  map[string]int // key -> KEYS index (1-based, as Lua counts)
	args []any          // ARGV: the header, then operations
	done bool
}

func (g *group) key(k string) int {
	if i, ok := g.idx[k]; ok {
		return i
	}
	g.keys = append(g.keys, k)
	g.idx[k] = len(g.keys)
	return len(g.keys)
}

// builder collects operations into slot groups.
type builder struct {
	r      *Recorder
	groups map[int]*group
	order  []*group
}

func (b *builder) group(k string) *group {
	slot := 0
	if b.r.cluster {
		slot = keys.Slot(k)
	}
	g := b.groups[slot]
	if g == nil {
		lk, err := ledgerKey.Key(b.r.opt.ns, slotTag(slot))
		if err != nil {
			panic(err) // a slot tag is always a valid segment
		}
		g = &group{keys: []string{lk}, idx: map[string]int{lk: 1}}
		g.args = []any{b.r.instance, nil, ledgerPX, strconv.FormatInt(unit.MsFloor(b.r.opt.heartbeat), 10)}
		b.groups[slot] = g
		b.order = append(b.order, g)
	}
	return g
}

const noTTL = "0"

func (b *builder) incr(k string, delta int64, ttl string) {
	g := b.group(k)
	g.args = append(g.args, "i", g.key(k), delta, ttl)
}

func (b *builder) incrFloat(k string, delta float64, ttl string) {
	g := b.group(k)
	g.args = append(g.args, "f", g.key(k), strconv.FormatFloat(delta, 'f', -1, 64), ttl)
}

func (b *builder) hincr(k, field string, delta int64, ttl string) {
	g := b.group(k)
	g.args = append(g.args, "h", g.key(k), field, delta, ttl)
}

func (b *builder) hincrFloat(k, field string, delta float64, ttl string) {
	g := b.group(k)
	g.args = append(g.args, "g", g.key(k), field, strconv.FormatFloat(delta, 'f', -1, 64), ttl)
}

// gauge writes this instance's contribution to dim of the gauge whose
// value key is target into its parts key (in target's slot), then derives
// target: mode sum or last, or max with extra added to the sum.
func (b *builder) gauge(target, parts, dim string, value int64, leaving bool, mode string, extra int64, ttl string) {
	g := b.group(target)
	if b.r.cluster && keys.Slot(parts) != keys.Slot(target) {
		panic(fmt.Sprintf("metrics: %q and %q in different slots", parts, target))
	}
	pi := g.key(parts)
	v := strconv.FormatInt(value, 10)
	if leaving {
		v = ""
	}
	g.args = append(g.args, "p", pi, dim+"|"+b.r.instance, v)
	g.args = append(g.args, "s", g.key(target), pi, dim, mode, extra, ttl)
}

// sharedCount makes value this instance's contribution to the shared
// count target (WithSharedKeys), moving target by INCRBY of the change,
// with the contributions in parts (in target's slot, kept pttl).
func (b *builder) sharedCount(target, parts string, value int64, leaving bool, pttl string) {
	g := b.group(target)
	if b.r.cluster && keys.Slot(parts) != keys.Slot(target) {
		panic(fmt.Sprintf("metrics: %q and %q in different slots", parts, target))
	}
	v := strconv.FormatInt(value, 10)
	if leaving {
		v = ""
	}
	g.args = append(g.args, "x", g.key(target), g.key(parts), v, pttl)
}

// latest writes value, set at server time stamp (Unix ms), to dim of the
// Latest gauge whose value key is target, unless totals (in target's slot)
// holds a later Set of dim.
func (b *builder) latest(target, totals, dim string, value, stamp int64, ttl string) {
	g := b.group(target)
	if b.r.cluster && keys.Slot(totals) != keys.Slot(target) {
		panic(fmt.Sprintf("metrics: %q and %q in different slots", totals, target))
	}
	g.args = append(g.args, "l", g.key(target), g.key(totals), dim, value, stamp, ttl)
}

// companion returns the key of template t (metrics:parts or
// metrics:persec) that serves the key target: tagged to target's slot and
// named after it without the namespace prefix.
func (r *Recorder) companion(t *keys.Template, target string) string {
	k, err := t.Key(r.opt.ns, slotTag(keys.Slot(target)), target[len(r.opt.ns.Prefix):])
	if err != nil {
		panic(err) // target is a key of ours, shorter than a segment's bound
	}
	return k
}

func (r *Recorder) flush(ctx context.Context, leaving bool) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	if r.closed {
		return pkg.Fail("flush", "", ErrClosed, nil)
	}
	if r.pending == nil {
		b := r.collect(leaving)
		if len(b.groups) == 0 {
			if leaving {
				r.left = true
			}
			return nil
		}
		r.seq++
		b.seq = r.seq
		for _, g := range b.groups {
			g.args[1] = b.seq
		}
		r.pending = b
	}
	err := r.send(ctx, r.pending)
	if err != nil {
		r.failures.Add(1)
		return err
	}
	if r.pending.leaving {
		r.left = true
	}
	r.pending = nil
	r.flushes.Add(1)
	return nil
}

// send applies the groups of b not yet applied, in one pipeline.
func (r *Recorder) send(ctx context.Context, b *batch) error {
	calls := make([]call.Call, 0, len(b.groups))
	var which []*group
	for _, g := range b.groups {
		if !g.done {
			calls = append(calls, call.Call{Op: applyOp, Keys: g.keys, Args: g.args})
			which = append(which, g)
		}
	}
	t0 := r.opt.clock()
	reps, errs := r.run.RunMany(ctx, calls)
	t1 := r.opt.clock()
	learned := false
	var first error
	for i, g := range which {
		if errs[i] != nil {
			if first == nil {
				first = errs[i]
			}
			continue
		}
		g.done = true
		rep := reps[i]
		if !learned && rep.Len() > 2 {
			if srv := rep.Int(2); srv > 0 {
				r.learnOffset(srv, t0, t1)
				learned = true
			}
		}
		if s, ok := rep.OptStr(3); ok && s != "" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				r.shared.Store(n)
				r.sharedOK.Store(true)
			}
		}
		for _, k := range rep.Ints(1) {
			if k >= 1 && int(k) <= len(g.keys) {
				r.corrupt.Add(1)
				key := g.keys[k-1]
				r.report(pkg.Fail("flush", key, nil, keys.Corrupt(key, errors.New("holds data this package did not write; its delta was dropped"))))
			}
		}
		// One field of a hash of ours that the script skipped alone: the
		// report names it, the key's other fields were applied.
		if rep.Len() > 4 {
			fs := rep.Strs(4)
			for j := 0; j+2 < len(fs); j += 3 {
				k, err := strconv.Atoi(fs[j])
				if err != nil || k < 1 || k > len(g.keys) {
					continue
				}
				r.corrupt.Add(1)
				key := g.keys[k-1]
				r.report(pkg.Fail("flush", key, nil, keys.Corrupt(key, fmt.Errorf(
					"field %q: %s; its update was dropped, the key's other fields were applied",
					truncate(fs[j+1], 256), truncate(fs[j+2], 128)))))
			}
		}
		if err := rep.Err(); err != nil {
			r.report(err)
		}
	}
	return first
}

// truncate cuts s to at most n bytes, for an error message.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
