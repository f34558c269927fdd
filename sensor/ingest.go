package sensor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// DuplicatePolicy says what a write does when a reading of the same
// sensor (type, location and entity ID) with the same timestamp (to the
// millisecond) is stored already. WithCompactEncoding keeps no entity ID
// per reading, so there a duplicate is any reading of the type and
// location at that millisecond.
type DuplicatePolicy uint8

const (
	// KeepBoth stores both readings, as two members (the default). The
	// sensor collector's layout collapsed two identical readings into one
	// member; the reading ID keeps them apart.
	KeepBoth DuplicatePolicy = iota
	// LastWins replaces the stored readings with the new one. The rollups
	// count it once and sum the new value; their min and max may still
	// include the replaced value.
	LastWins
	// FirstWins keeps the stored reading and drops the new one (Outcome
	// Duplicate).
	FirstWins
)

func (p DuplicatePolicy) arg() string {
	switch p {
	case LastWins:
		return "last"
	case FirstWins:
		return "first"
	}
	return "keep"
}

// Outcome is what a write did with a reading.
type Outcome uint8

const (
	// Stored: the reading is stored (under LastWins, in place of the
	// sensor's reading at that time).
	Stored Outcome = iota + 1
	// Duplicate: FirstWins found the sensor's reading at that time; the
	// new one was dropped.
	Duplicate
	// Late: the reading is older than the retention; it was dropped (raw,
	// rollups and indexes untouched).
	Late
)

// String returns "stored", "duplicate" or "late".
func (o Outcome) String() string {
	switch o {
	case Stored:
		return "stored"
	case Duplicate:
		return "duplicate"
	case Late:
		return "late"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Result is the outcome of one write.
type Result struct {
	// ID is the reading's ID (drawn by Ingest when the reading had none):
	// sending the same reading again with this ID is recognised and not
	// stored twice.
	ID      string
	Outcome Outcome
}

// Ingest stores one reading in one round trip: one script that checks
// the timestamp against the server clock, applies the duplicate policy,
// stores the reading in the sensor collector's layout (or the compact
// one), trims every key it touches to its retention (the generic list
// also to its cap), sets the TTLs, updates meta:motion lastMotionTime on
// an "on" event, the types index, and the minute and hour rollups;
// pipelined with a second script that makes sure the locations index
// holds the reading's location (so Locations lists it at once, also
// after the index was lost).
//
// A reading older than the retention is dropped (Outcome Late). A bad
// reading is ErrInvalid before anything is sent (see Reading and
// ErrInvalid); a timestamp further ahead of the server clock than
// WithMaxFuture is ErrInvalid from the script, with nothing written.
// Foreign data at one of the reading's keys is keys.ErrCorrupt naming
// that key, with nothing of the reading written (the locations index's
// script, in the same round trip, still lists the location, which
// Locations then shows for the retention). A failure of the locations
// index alone
// (foreign data at its key) does not fail the write: the next write of
// the location records it again.
//
// Idempotent under retry: go-redis resends a write whose reply was lost,
// and the script then finds the reading's ID and reports Stored without
// storing or counting it again. To retry a failed Ingest yourself, send
// the reading with Result.ID (or set Reading.ID up front).
func (c *Client) Ingest(ctx context.Context, r Reading) (Result, error) {
	const op = "ingest"
	w, err := c.write(op, r, c.now())
	if err != nil {
		return Result{}, err
	}
	reps, errs := c.run.RunMany(ctx, []call.Call{w.call, c.touch(w.t.loc, w.ts)})
	if errs[0] != nil {
		return Result{ID: w.id}, errs[0]
	}
	o, err := outcome(&reps[0], w.t.raw)
	return Result{ID: w.id, Outcome: o}, err
}

// maxBatch bounds one IngestBatch call.
const maxBatch = 10000

// BatchError reports the readings of IngestBatch that failed. Its field
// Errs []error has one entry per reading, nil for those that were written. It matches
// every reading's error with errors.Is. Its Error summarises the failed
// readings (the first three, and a count). It is the library's one batch
// error, also queue.BatchError.
type BatchError = call.BatchError

// IngestBatch stores up to 10,000 readings in one pipeline (one round
// trip; on a cluster go-redis sends each node its part, and every
// reading's keys are in its location's slot). Each reading is written as
// Ingest writes it, atomically on its own; the batch is not atomic:
// readings that fail validation are not sent, the others are. It returns
// one Result per reading (Outcome 0 for those not written) and a
// *BatchError naming the failed readings, or nil. More than 10,000
// readings is ErrInvalid, and nothing is sent. A resent pipeline is
// recognised reading by reading, as with Ingest (a generic sensor's
// list is searched as deep as the batch writes into it, so this holds
// while a batch carries at most the list's cap of one sensor's readings).
func (c *Client) IngestBatch(ctx context.Context, rs []Reading) ([]Result, error) {
	const op = "ingest batch"
	if len(rs) > maxBatch {
		return nil, pkg.Invalidf(op, "%d readings, at most %d per batch", len(rs), maxBatch)
	}
	now := c.now()
	res := make([]Result, len(rs))
	errs := make([]error, len(rs))
	ws := make([]write, len(rs))
	calls := make([]call.Call, 0, len(rs)+1)
	idx := make([]int, 0, len(rs))
	failed := false
	newest := map[string]int64{}
	for i, r := range rs {
		w, err := c.write(op, r, now)
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		ws[i], res[i].ID = w, w.id
		calls = append(calls, w.call)
		idx = append(idx, i)
		if w.ts > newest[w.t.loc] {
			newest[w.t.loc] = w.ts
		}
	}
	// A resent pipeline meets its own earlier writes among the newest
	// entries of each list: search as many as the batch writes there.
	perList := map[string]int{}
	for _, i := range idx {
		if ws[i].scan >= 0 {
			perList[ws[i].t.raw]++
		}
	}
	for j, i := range idx {
		if w := ws[i]; w.scan >= 0 {
			calls[j].Args[w.scan] = dupScan + perList[w.t.raw]
		}
	}
	for loc, ts := range newest {
		calls = append(calls, c.touch(loc, ts))
	}
	if len(calls) > 0 {
		reps, rerrs := c.run.RunMany(ctx, calls)
		for j, i := range idx {
			if errs[i] = rerrs[j]; errs[i] == nil {
				res[i].Outcome, errs[i] = outcome(&reps[j], ws[i].t.raw)
			}
			if errs[i] != nil {
				failed = true
			}
		}
	}
	if failed {
		return res, pkg.Batch(errs, "reading", "not written")
	}
	return res, nil
}

// write is one prepared write: its keys, its script call, its time.
type write struct {
	t    target
	id   string
	ts   int64
	call call.Call
	scan int // index in call.Args of a list's search depth, or -1
}

func (c *Client) write(op string, r Reading, now time.Time) (write, error) {
	p, err := c.prepare(op, r, now)
	if err != nil {
		return write{}, err
	}
	t, err := c.target(op, p.Type, p.Location)
	if err != nil {
		return write{}, err
	}
	if c.opt.noIDs {
		p.ID = "" // the collector's bytes: a resend is recognised by them
	}
	if c.opt.compact && (strings.ContainsAny(p.Unit, "|;,") || strings.ContainsAny(p.EntityID, "|;,")) {
		return write{}, pkg.Invalidf(op, "the compact encoding takes no '|', ';' or ',' in a unit or an entity ID")
	}
	w := write{t: t, id: p.ID, ts: p.Time.UnixMilli(), scan: -1}
	o := c.opt
	ks := []string{t.raw, t.types, t.minute, t.hour}
	var args []any
	switch {
	case c.opt.compact:
		if t.fam == famMotion {
			ks = append(ks, t.meta)
		}
		args = []any{shortID(p.ID), w.ts, valueArg(p), p.Type, p.Unit, p.EntityID, p.State, o.dup.arg(),
			unit.MsFloor(o.retention), unit.MsFloor(o.maxFuture), unit.MsFloor(o.minute), unit.MsFloor(o.hour)}
	case t.fam == famGeneric:
		member, err := encode(p)
		if err != nil {
			return write{}, pkg.Invalid(op, err)
		}
		ks = []string{t.raw, t.meta, t.types, t.minute, t.hour}
		args = []any{p.ID, w.ts, member, p.Type, p.Location, valueArg(p), p.EntityID, o.dup.arg(),
			unit.MsFloor(o.retention), unit.MsFloor(o.maxFuture), unit.MsFloor(o.minute), unit.MsFloor(o.hour), o.listCap, dupScan}
		w.scan = len(args) - 1
	default:
		member, err := encode(p)
		if err != nil {
			return write{}, pkg.Invalid(op, err)
		}
		if t.fam == famMotion {
			ks = append(ks, t.meta)
		}
		args = []any{p.ID, w.ts, member, p.Type, t.field, valueArg(p), p.State, p.EntityID, o.dup.arg(),
			unit.MsFloor(o.retention), unit.MsFloor(o.maxFuture), unit.MsFloor(o.minute), unit.MsFloor(o.hour)}
	}
	w.call = call.Call{Op: t.ingest, Keys: ks, Args: args}
	return w, nil
}

// outcome reads a write script's reply.
func outcome(rep *call.Reply, key string) (Outcome, error) {
	word := rep.Str(0)
	if err := rep.Err(); err != nil {
		return 0, err
	}
	switch word {
	case "stored":
		return Stored, nil
	case "duplicate":
		return Duplicate, nil
	case "late":
		return Late, nil
	}
	return 0, pkg.Fail("ingest", key, nil, fmt.Errorf("unexpected outcome %.32q", word))
}

// touch returns the call that records in the locations index that loc
// has a reading at ts (Unix ms). Its key is the namespace's alone, which
// the write's own keys checked already.
func (c *Client) touch(loc string, ts int64) call.Call {
	return call.Call{Op: touchLocationOp, Keys: []string{c.locations},
		Args: []any{loc, ts, unit.MsFloor(c.opt.retention), unit.MsFloor(c.opt.maxFuture), unit.MsFloor(locationRefresh)}}
}
