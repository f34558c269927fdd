package aimemory

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/internal/call"
)

// days tells the scripts which day of the configured zone the server's
// clock is in. Lua in Redis has no time zone database, so the client
// passes the starts of four consecutive local days around its estimate of
// the server clock (yesterday, today, tomorrow and the day after, which
// ends tomorrow) and their dates; the script reads TIME and picks the day
// it falls in. The days follow the zone's rules (a DST day has 23 or 25
// hours). When the server clock is outside the three days (a client clock
// more than a day off), the script says so with the server's time, and
// the client learns the offset and asks again: days are always decided by
// the server's clock.
type days struct {
	zone *time.Location
	skew atomic.Int64 // server clock minus local clock, ns
	cur  atomic.Pointer[dayArgs]
	now  func() time.Time
}

// dayArgs are the script arguments for local times in [from, to).
type dayArgs struct {
	from, to time.Time
	args     []any // start ms of days -1, 0, +1, +2; dates of days -1, 0, +1
}

func newDays(zone *time.Location) *days { return &days{zone: zone, now: time.Now} }

// dayArgCount is how many script arguments days passes.
const dayArgCount = 7

// args returns the arguments for the client's estimate of the server's
// clock.
func (d *days) args() []any {
	ref := d.now().Add(time.Duration(d.skew.Load()))
	if a := d.cur.Load(); a != nil && !ref.Before(a.from) && ref.Before(a.to) {
		return a.args
	}
	a := d.around(ref)
	d.cur.Store(a)
	return a.args
}

// around computes the arguments for the local day of t.
func (d *days) around(t time.Time) *dayArgs {
	y, m, day := t.In(d.zone).Date()
	start := func(off int) time.Time { return time.Date(y, m, day+off, 0, 0, 0, 0, d.zone) }
	a := &dayArgs{from: start(0), to: start(1), args: make([]any, 0, dayArgCount)}
	for off := -1; off <= 2; off++ {
		a.args = append(a.args, start(off).UnixMilli())
	}
	for off := -1; off <= 1; off++ {
		a.args = append(a.args, start(off).Format(time.DateOnly))
	}
	return a
}

// learn records the server's clock (Unix ms) that a script reported.
func (d *days) learn(serverMs int64) {
	d.skew.Store(int64(time.UnixMilli(serverMs).Sub(d.now())))
	d.cur.Store(nil)
}

// runDay runs op with the day arguments before args and, when the script
// finds the server clock outside the days passed (none("clock", now_ms)),
// learns the server's clock and runs it once more.
func (m *Memory) runDay(ctx context.Context, op *call.Op, ks []string, args ...any) (call.Reply, error) {
	for attempt := 0; ; attempt++ {
		all := make([]any, 0, dayArgCount+len(args))
		all = append(all, m.days.args()...)
		all = append(all, args...)
		rep, err := m.run.Run(ctx, op, ks, all...)
		if err != nil || rep.Status != call.None {
			return rep, err
		}
		now := rep.Int(1)
		if err := rep.Err(); err != nil {
			return rep, err
		}
		if attempt > 0 {
			return rep, pkg.Fail(op.Name(), ks[0], nil, fmt.Errorf("the server clock (%v) moved out of the days passed", time.UnixMilli(now).UTC()))
		}
		m.days.learn(now)
	}
}
