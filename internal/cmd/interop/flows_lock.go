package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redschema/redschema/lock"
)

// lockFlows: seed 004 §3, the chat app's cron last-run key, shared by
// lock's Interval.
func lockFlows() []flow {
	ioredis := []string{"ioredis6"}
	return []flow{
		{seed: "004", name: "lock cron last-run node->go", area: "lock", clients: ioredis, run: cronNodeGo},
		{seed: "004", name: "lock cron last-run go->node", area: "lock", clients: ioredis, run: cronGoNode},
	}
}

func reminder(e *env) (*lock.Interval, error) {
	c, err := lock.New(e.rdb, lock.WithNamespace(bare))
	if err != nil {
		return nil, err
	}
	return c.Interval("unread-reminder", 2*time.Hour, 0)
}

type cronRun struct {
	Ran     bool   `json:"ran"`
	LastRun string `json:"lastRun"`
}

// cronNodeGo: the chat app runs the unread reminder; the library's claim
// within two hours is refused and reads the app's last run.
func cronNodeGo(ctx context.Context, e *env) error {
	g, err := reminder(e)
	if err != nil {
		return err
	}
	var r cronRun
	if err := e.node(ctx, "unreadReminder", nil, &r); err != nil {
		return err
	}
	if !r.Ran {
		return diverge("the chat app did not run on an empty key: %+v", r)
	}
	ms, _ := strconv.ParseInt(r.LastRun, 10, 64)
	run, err := g.Claim(ctx)
	if err != nil || run.Claimed || run.Previous.UnixMilli() != ms {
		return diverge("Claim after the chat app's run at %d: %+v, %v", ms, run, err)
	}
	return nil
}

// cronGoNode: the library claims the run; the chat app's own check skips
// it and reads the library's time.
func cronGoNode(ctx context.Context, e *env) error {
	g, err := reminder(e)
	if err != nil {
		return err
	}
	run, err := g.Claim(ctx)
	if err != nil || !run.Claimed {
		return diverge("Claim on an empty key: %+v, %v", run, err)
	}
	var r cronRun
	if err := e.node(ctx, "unreadReminder", nil, &r); err != nil {
		return err
	}
	if r.Ran || r.LastRun != strconv.FormatInt(run.At.UnixMilli(), 10) {
		return diverge("the chat app after the library's claim at %d: %+v", run.At.UnixMilli(), r)
	}
	return nil
}
