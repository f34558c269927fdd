package chat

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Dashboard is an admin's dashboard (the fields of the home-automation
// backend's chat:admin:dashboard:{admin_id}, docs/home-automation.md).
type Dashboard struct {
	TotalActive   int           // total_active: open conversations of the deployment
	AssignedToMe  int           // assigned_to_me
	UnreadCount   int           // unread_count: the admin's conversations in the unread queue
	AvgResponse   time.Duration // avg_response_time (minutes, one decimal): today's replies
	ResolvedToday int           // resolved_today (UTC day)
	ComputedAt    time.Time     // when it was computed (server time)
	Cached        bool          // served from the cache
}

var errDashboard = errors.New("dashboard fields are not the counts, minutes and time this package writes")

// Dashboard returns admin's dashboard in one script: from its cache
// (chat:{tag}:admin:dashboard:{admin_id}) while the cache lives, else
// computed from the deployment's keys, cached for the dashboard TTL (5
// min, WithDashboardTTL) and returned. The computation runs inside the
// script, so it happens once across instances however many ask at once.
// Every routing call that changes the admin's numbers deletes the cache
// (and every admin's when the deployment's total changes), so a served
// dashboard is current except for resolved_today across UTC midnight
// and conversations expiring, both for at most the dashboard TTL. A
// cache this package did not write gives keys.ErrCorrupt naming it.
func (c *Chat) Dashboard(ctx context.Context, admin string) (Dashboard, error) {
	const op = "dashboard"
	q, err := c.adminKeys(op, admin)
	if err != nil {
		return Dashboard{}, err
	}
	dk := q[3]
	others := 0
	if c.opt.noTag {
		others = 1
	}
	rep, err := c.run.Run(ctx, dashboardOp, []string{dk, c.global[1], c.global[2], q[1], q[2]},
		unit.MsCeil(c.opt.convTTL), unit.MsCeil(c.opt.dashTTL), maxCapacity, others)
	if err != nil {
		return Dashboard{}, err
	}
	var f [6]string
	var ok [6]bool
	cached := rep.Int(0) == 1
	for i := range f {
		f[i], ok[i] = rep.OptStr(i + 1)
	}
	if err := rep.Err(); err != nil {
		return Dashboard{}, err
	}
	count := func(i int) int {
		n, err := strconv.Atoi(f[i])
		if err != nil || n < 0 || !ok[i] {
			ok[i] = false
		}
		return n
	}
	d := Dashboard{Cached: cached, TotalActive: count(0), AssignedToMe: count(1), UnreadCount: count(2), ResolvedToday: count(4)}
	avg, err := strconv.ParseFloat(f[3], 64)
	// within what a time.Duration holds (about 292 years)
	if err != nil || avg < 0 || math.IsNaN(avg) || avg > float64(math.MaxInt64/int64(time.Minute)) {
		ok[3] = false
	}
	d.AvgResponse = time.Duration(math.Round(avg * float64(time.Minute)))
	at, err := strconv.ParseInt(f[5], 10, 64)
	if err != nil || at < 0 {
		ok[5] = false
	}
	d.ComputedAt = fromMs(at)
	for _, good := range ok {
		if !good {
			return Dashboard{}, pkg.Fail(op, dk, nil, keys.Corrupt(dk, errDashboard))
		}
	}
	return d, nil
}
