package dashboard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/dashboard/internal/demo"
	"github.com/redschema/redschema/lock"
)

type locksReply struct {
	Locks []struct {
		ResourceType string `json:"resource_type"`
		ResourceID   string `json:"resource_id"`
		Owner        string `json:"owner_label"`
		RemainingMs  int64  `json:"remaining_ms"`
	}
	Semaphores []struct {
		ResourceType string `json:"resource_type"`
		Permits      []struct {
			Owner string `json:"owner_label"`
		}
	}
	Jobs []struct {
		Job     string
		LastRun time.Time  `json:"last_run"`
		NextRun *time.Time `json:"next_run"`
	}
}

func TestLocks(t *testing.T) {
	f := setup(t, dashboard.WithToken(testToken), dashboard.WithInterval(demo.Job, demo.JobEvery))
	var r locksReply
	require.Equal(t, http.StatusOK, f.get(t, "/api/locks", &r))
	found := false
	for _, l := range r.Locks {
		if l.ResourceType == lock.File {
			found = true
			require.Equal(t, demo.LockedFile, l.ResourceID)
			require.Equal(t, demo.Worker, l.Owner)
			require.True(t, l.RemainingMs > 0 && l.RemainingMs <= time.Minute.Milliseconds())
		}
	}
	require.True(t, found, "%+v", r.Locks)
	require.Len(t, r.Semaphores, 1)
	require.Len(t, r.Semaphores[0].Permits, demo.SemPermits)
	require.Len(t, r.Jobs, 1)
	require.Equal(t, demo.Job, r.Jobs[0].Job)
	require.NotNil(t, r.Jobs[0].NextRun)
	require.Equal(t, demo.JobEvery, r.Jobs[0].NextRun.Sub(r.Jobs[0].LastRun))

	// No owner ID (what proves ownership of a lease) reaches the page.
	raw := f.rawGet(t, "/api/locks")
	for _, k := range f.env.Keys() {
		v, err := f.env.Client.Get(f.env.Ctx(), k).Result()
		if err == nil && len(v) > len(demo.Worker)+1 && v[:len(demo.Worker)+1] == demo.Worker+"." {
			owner := v[:len(demo.Worker)+25]
			require.NotContains(t, raw, owner)
		}
	}
}
