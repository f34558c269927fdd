package queue

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed stats.lua
	statsSrc string

	statsOp = pkg.Declare("stats", statsSrc, []*keys.Template{priorityKey, priorityKey, priorityKey, activeKey, statsKey, deadKey})
)

// Stats is a queue's stats hash (queue:stats:{queue_name}) and the depth
// of each state, read at one instant by one script.
type Stats struct {
	TotalEnqueued  int64 // jobs accepted by Enqueue and EnqueueBatch, or adopted from the wake-up list (the AI platform's format)
	TotalProcessed int64 // jobs acked
	// TotalFailed counts failed attempts: handler errors, panics, Nack,
	// expired leases.
	TotalFailed int64
	TotalDead   int64 // jobs moved to the dead-letter list
	// TotalDeadTrimmed counts dead letters dropped from the tail of the
	// dead-letter list because it was at its cap (WithDeadLetterCap).
	TotalDeadTrimmed int64
	// TotalCancelled counts jobs Cancel stopped: removed while waiting,
	// or whose handler stopped after it.
	TotalCancelled  int64
	AvgProcessTime  time.Duration // mean handler time of acked jobs
	LastProcessedAt time.Time     // server time of the last ack; zero if none
	// Paused reports a queue paused by Pause (nothing is delivered);
	// PausedAt is the server time of that Pause, zero when running.
	Paused   bool
	PausedAt time.Time

	Ready    map[Priority]int64 // ready now, per priority
	Delayed  map[Priority]int64 // waiting for a delay or a retry backoff
	InFlight int64              // leased to a consumer
	Dead     int64              // entries in the dead-letter list
	// OldestReady is the latency of the queue: how long the job ready
	// longest (ready now, any priority; not delayed) has been ready, by
	// the server clock. Zero when nothing is ready.
	OldestReady time.Duration
}

// Pending returns the ready jobs of all priorities.
func (s Stats) Pending() int64 { return s.Ready[High] + s.Ready[Normal] + s.Ready[Low] }

// Stats reads the stats hash and counts every state in one script (one
// round trip), with the age of the oldest ready job (a ZRANGE of the
// first member of each priority that has a ready job). A stats field that is not a number is an error matching
// keys.ErrCorrupt that names the stats hash.
func (q *Queue[T]) Stats(ctx context.Context) (Stats, error) {
	c := q.statsCall()
	rep, err := q.run.Run(ctx, c.Op, c.Keys, c.Args...)
	if err != nil {
		return Stats{}, err
	}
	return q.decodeStats(&rep)
}

// statsCall is Stats's script call.
func (q *Queue[T]) statsCall() call.Call {
	return call.Call{Op: statsOp, Keys: []string{q.levels[0], q.levels[1], q.levels[2], q.active, q.stats, q.dead}}
}

// decodeStats decodes the stats script's reply.
func (q *Queue[T]) decodeStats(rep *call.Reply) (Stats, error) {
	const op = "stats"
	h := rep.Strs(0)
	n := rep.Ints(1)
	if err := rep.Err(); err != nil {
		return Stats{}, err
	}
	if len(h)%2 != 0 || len(n) != 9 {
		return Stats{}, pkg.Fail(op, q.stats, nil, fmt.Errorf("unexpected reply: %d hash values, %d counts", len(h), len(n)))
	}
	s := Stats{
		Ready:    map[Priority]int64{High: n[0], Normal: n[2], Low: n[4]},
		Delayed:  map[Priority]int64{High: n[1], Normal: n[3], Low: n[5]},
		InFlight: n[6], Dead: n[7], OldestReady: time.Duration(n[8]) * time.Millisecond,
	}
	var seq, skipped int64 // enq_seq - enq_skipped: jobs enqueued (see enqueue.lua)
	corrupt := func(f, v string) error {
		return pkg.Fail(op, q.stats, nil, keys.Corrupt(q.stats, fmt.Errorf("field %s is %.64q", f, v)))
	}
	for i := 0; i < len(h); i += 2 {
		f, val := h[i], h[i+1]
		var dst *int64
		switch f {
		case "total_enqueued": // written by earlier versions instead of enq_seq
			dst = &s.TotalEnqueued
		case "enq_seq":
			dst = &seq
		case "enq_skipped":
			dst = &skipped
		case "total_processed":
			dst = &s.TotalProcessed
		case "total_failed":
			dst = &s.TotalFailed
		case "total_dead":
			dst = &s.TotalDead
		case "total_dead_trimmed":
			dst = &s.TotalDeadTrimmed
		case "total_cancelled":
			dst = &s.TotalCancelled
		case "last_processed_at":
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil || v < 0 {
				return Stats{}, corrupt(f, val)
			}
			s.LastProcessedAt = msTime(v)
			continue
		case "paused":
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil || v < 0 {
				return Stats{}, corrupt(f, val)
			}
			s.Paused, s.PausedAt = true, msTime(v)
			continue
		case "avg_process_time_ms":
			x, err := strconv.ParseFloat(val, 64)
			if err != nil || !(x >= 0 && x <= float64(maxDelay/time.Millisecond)) { // NaN too
				return Stats{}, corrupt(f, val)
			}
			s.AvgProcessTime = time.Duration(x * float64(time.Millisecond))
			continue
		default:
			continue
		}
		x, err := strconv.ParseInt(val, 10, 64)
		if err != nil || x < 0 {
			return Stats{}, corrupt(f, val)
		}
		*dst = x
	}
	if seq < skipped {
		return Stats{}, corrupt("enq_skipped", strconv.FormatInt(skipped, 10))
	}
	s.TotalEnqueued += seq - skipped
	return s, nil
}
