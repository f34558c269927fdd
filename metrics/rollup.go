package metrics

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed rollup_drain.lua
	drainSrc string
	//go:embed rollup_commit.lua
	commitSrc string

	drainOp = pkg.Declare("rollup drain", drainSrc,
		[]*keys.Template{pendingKey, rollupStateKey, rollupOpenKey, rollupTierKeys[Minute], rollupTierKeys[Hour], rollupTierKeys[Day]},
		call.Needs(call.Batched, call.ToNum), call.On(call.Conflict, ErrNotLeader))
	commitOp = pkg.Declare("rollup commit", commitSrc, []*keys.Template{rollupStateKey}, call.On(call.Conflict, ErrNotLeader))
)

// Default retention of the rollup tiers in Redis (Sidekiq's: minutes 8h,
// hours 7d, days 90d), the bound of WithRetention, and the default of
// WithLease.
const (
	defaultMinuteRetention = 8 * time.Hour
	defaultHourRetention   = 7 * 24 * time.Hour
	defaultDayRetention    = 90 * 24 * time.Hour
	maxRetention           = 400 * 24 * time.Hour
	defaultLease           = 30 * time.Second
)

// Bucket is one closed rollup bucket of one metric, handed to a Sink.
type Bucket struct {
	Metric string
	Tier   Tier
	Start  time.Time // UTC; the bucket covers [Start, Start + Tier.Duration())
	// Values maps each series to what was added in the bucket: a
	// counter's dimension (label values joined as in SplitDimension) to
	// its count, a histogram's "dimension|bucket" (a bound, "+Inf", "sum"
	// or "count") to its non-cumulative count or sum.
	Values map[string]float64
}

// ID names the bucket uniquely ("api_requests_total/minute/1767225600000"):
// a sink that upserts by ID stays exact even when a bucket is delivered
// twice (see Rollup).
func (b Bucket) ID() string {
	return b.Metric + "/" + b.Tier.String() + "/" + strconv.FormatInt(b.Start.UnixMilli(), 10)
}

// Sink receives closed buckets, oldest first per metric and tier. An error
// stops the run for that metric; the bucket is offered again next time.
type Sink func(ctx context.Context, b Bucket) error

// Rollup drains the TTL'd series of counters and histograms (written by
// recorders created WithRollup) into minute, hour and day buckets kept in
// Redis for their retention, and hands each closed bucket to a Sink once
// across instances: a lease per metric lets one instance at a time drain
// it, and a watermark per tier, advanced only by the lease holder after the
// sink took a bucket, says what was delivered. Recorder.Rollup makes one;
// run it on every instance, and one of them does the work.
//
// Exactly once: a bucket is closed once (the minute's drain is one
// script, and a resent drain finds it closed), and handed on until its
// watermark moves. The one window left is a holder that dies (or loses its
// lease) after the sink took a bucket and before the watermark moved: the
// next holder hands the same bucket again, with the same ID; a sink that
// upserts by Bucket.ID is exact across it.
type Rollup struct {
	run     *call.Runner
	ns      keys.Namespace
	names   []string
	sink    Sink
	owner   string
	lease   time.Duration
	retain  [nTiers]time.Duration
	perCall int
}

// Rollup returns a Rollup of the metrics names (counters and histograms
// of recorders created WithRollup, this one or others) into sink, under
// the recorder's namespace, with the lease and retentions of its options
// (WithLease, WithRetention). Each call returns another rollup instance,
// which competes for the metrics' leases with every other. A process that
// only runs the rollup can take it from a recorder built WithoutFlusher.
// It fails with ErrInvalid on a nil sink or a bad name; it does not
// contact Redis.
func (rec *Recorder) Rollup(names []string, sink Sink) (*Rollup, error) {
	const op = "rollup"
	var b [8]byte
	_, _ = rand.Read(b[:])
	o := rec.opt
	r := &Rollup{run: call.NewRunner(rec.run.Client(), 0), ns: o.ns, names: append([]string(nil), names...), sink: sink,
		owner: hex.EncodeToString(b[:]), lease: o.lease, retain: o.retain, perCall: 1000}
	switch {
	case sink == nil:
		return nil, pkg.Invalidf(op, "nil sink")
	case len(names) == 0:
		return nil, pkg.Invalidf(op, "no metric names")
	}
	for _, n := range names {
		if !validName(n) {
			return nil, pkg.Invalidf(op, "metric name %q", n)
		}
	}
	return r, nil
}

// RunOnce drains every metric whose lease it gets and hands the closed
// buckets to the sink. It returns how many buckets the sink took, and
// ErrNotLeader when another instance held every lease. Each metric costs
// one round trip for the drain and one per bucket delivered.
func (r *Rollup) RunOnce(ctx context.Context) (int, error) {
	delivered, led := 0, 0
	var errs []error
	for _, name := range r.names {
		n, err := r.drain(ctx, name)
		delivered += n
		switch {
		case errors.Is(err, ErrNotLeader) && n == 0:
		case err != nil:
			led++
			errs = append(errs, err)
		default:
			led++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return delivered, err
	}
	if led == 0 {
		return 0, pkg.Fail("rollup", "", ErrNotLeader, nil)
	}
	return delivered, nil
}

// Run calls RunOnce every interval (at most a minute; 0 means 15s) until
// ctx ends, reporting errors other than ErrNotLeader to onError (may be
// nil).
func (r *Rollup) Run(ctx context.Context, interval time.Duration, onError func(error)) error {
	if interval <= 0 {
		interval = 15 * time.Second
	}
	if interval > time.Minute {
		return pkg.Invalidf("rollup", "interval %v above 1m", interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := r.RunOnce(ctx); err != nil && !errors.Is(err, ErrNotLeader) && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Rollup) drain(ctx context.Context, name string) (int, error) {
	const op = "rollup"
	ks := make([]string, 0, 6)
	for _, t := range []*keys.Template{pendingKey, rollupStateKey, rollupOpenKey, rollupTierKeys[Minute], rollupTierKeys[Hour], rollupTierKeys[Day]} {
		k, err := pkg.Key(op, t, r.ns, name)
		if err != nil {
			return 0, err
		}
		ks = append(ks, k)
	}
	rep, err := r.run.Run(ctx, drainOp, ks, r.owner, unit.MsCeil(r.lease),
		unit.MsFloor(r.retain[Minute]), unit.MsFloor(r.retain[Hour]), unit.MsFloor(r.retain[Day]), r.perCall)
	if err != nil {
		return 0, err
	}
	var tiers [nTiers][]Bucket
	for t := range nTiers {
		tiers[t], err = buckets(name, t, ks[3+t], rep.List(int(t)), r.perCall)
		if err != nil {
			return 0, pkg.Fail(op, ks[3+t], nil, err)
		}
	}
	if err := rep.Err(); err != nil {
		return 0, err
	}
	n := 0
	for t := range nTiers {
		for _, b := range tiers[t] {
			if err := r.sink(ctx, b); err != nil {
				return n, pkg.Fail(op, ks[3+t], nil, fmt.Errorf("sink %s: %w", b.ID(), err))
			}
			if _, err := r.run.Run(ctx, commitOp, ks[1:2], r.owner, t.String(), b.Start.UnixMilli()); err != nil {
				return n + 1, err
			}
			n++
		}
	}
	return n, nil
}

// buckets groups stream entries (XRANGE's reply) into buckets by the ms
// part of their IDs; when the reply was cut at limit, the last bucket may
// be incomplete and waits for the next call.
func buckets(name string, t Tier, key string, entries []any, limit int) ([]Bucket, error) {
	var out []Bucket
	for _, e := range entries {
		pair, err := reply.Slice(e, 2)
		if err != nil {
			return nil, err
		}
		id, err := reply.String(pair[0])
		if err != nil {
			return nil, err
		}
		msPart, _, _ := strings.Cut(id, "-")
		start, err := strconv.ParseInt(msPart, 10, 64)
		if err != nil {
			return nil, keys.Corrupt(key, fmt.Errorf("entry ID %q", id))
		}
		fields, err := reply.Strings(pair[1])
		if err != nil || len(fields)%2 != 0 {
			return nil, keys.Corrupt(key, fmt.Errorf("entry %s: fields", id))
		}
		if len(out) == 0 || out[len(out)-1].Start.UnixMilli() != start {
			out = append(out, Bucket{Metric: name, Tier: t, Start: time.UnixMilli(start).UTC(), Values: map[string]float64{}})
		}
		b := &out[len(out)-1]
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i+1], 64)
			if err != nil {
				return nil, keys.Corrupt(key, fmt.Errorf("entry %s: field %.64q is not a number", id, fields[i]))
			}
			b.Values[fields[i]] += v
		}
	}
	if len(entries) >= limit && len(out) > 1 {
		out = out[:len(out)-1]
	}
	return out, nil
}
