package dashboard

import (
	"net/http"
	"time"
)

type lockRow struct {
	ResourceType string    `json:"resource_type"`
	ResourceID   string    `json:"resource_id"`
	Owner        string    `json:"owner_label"`
	AcquiredAt   time.Time `json:"acquired_at"`
	LeaseMs      int64     `json:"lease_ms"`
	RemainingMs  int64     `json:"remaining_ms"`
}

type permitRow struct {
	Owner     string    `json:"owner_label"`
	ExpiresAt time.Time `json:"expires_at"`
}

type semRow struct {
	ResourceType string      `json:"resource_type"`
	ResourceID   string      `json:"resource_id"`
	Permits      []permitRow `json:"permits"`
}

type jobRun struct {
	Job     string     `json:"job"`
	LastRun time.Time  `json:"last_run"`
	EveryMs int64      `json:"every_ms,omitempty"`
	NextRun *time.Time `json:"next_run,omitempty"`
}

type locksReply struct {
	Locks      []lockRow `json:"locks"`
	Semaphores []semRow  `json:"semaphores"`
	Jobs       []jobRun  `json:"jobs"`
	Corrupt    []string  `json:"corrupt,omitempty"` // keys of another type, left out (see leftOut)
}

// locks answers the locks page: held lease locks with their owner label
// and remaining TTL, semaphores with their permits, and interval jobs
// with their last run and, for the jobs given WithInterval, the next, all
// from lock.Inspector.Overview (one SCAN pipeline and one read pipeline
// per node). A key of another type is left out, and listed in corrupt.
func (h *Handler) locks(r *http.Request) (any, error) {
	ctx := r.Context()
	out := locksReply{Locks: []lockRow{}, Semaphores: []semRow{}, Jobs: []jobRun{}}
	ov, err := h.lockInsp.Overview(ctx, maxRateRows)
	if out.Corrupt, err = leftOut(err); err != nil {
		return nil, err
	}
	for _, l := range ov.Held {
		out.Locks = append(out.Locks, lockRow{ResourceType: l.ResourceType, ResourceID: l.ResourceID, Owner: l.OwnerLabel,
			AcquiredAt: l.AcquiredAt, LeaseMs: l.Lease.Milliseconds(), RemainingMs: l.Remaining.Milliseconds()})
	}
	for _, s := range ov.Semaphores {
		row := semRow{ResourceType: s.ResourceType, ResourceID: s.ResourceID, Permits: []permitRow{}}
		for _, p := range s.Permits {
			row.Permits = append(row.Permits, permitRow{Owner: p.OwnerLabel, ExpiresAt: p.ExpiresAt})
		}
		out.Semaphores = append(out.Semaphores, row)
	}
	for _, lr := range ov.LastRuns {
		j := jobRun{Job: lr.Job, LastRun: lr.LastRun}
		if every, ok := h.opt.intervals[lr.Job]; ok {
			next := lr.LastRun.Add(every).UTC()
			j.EveryMs, j.NextRun = every.Milliseconds(), &next
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out, nil
}
