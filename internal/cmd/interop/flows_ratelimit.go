package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redschema/redschema/ratelimit"
)

// ratelimitFlows: seed 000 §3, the rate_limit and sliding_limit logs,
// shared by the library's Sliding rule (WithRateLimitKey,
// WithWindowlessLogKey) and the backend's ZREMRANGEBYSCORE/ZCARD/ZADD.
func ratelimitFlows() []flow {
	var out []flow
	for _, key := range []string{"rate_limit", "sliding_limit"} {
		out = append(out,
			flow{seed: "000", name: "ratelimit " + key + " node->go", area: "ratelimit", clients: nodeRedis,
				run: func(ctx context.Context, e *env) error { return logNodeGo(ctx, e, key) }},
			flow{seed: "000", name: "ratelimit " + key + " go->node", area: "ratelimit", clients: nodeRedis,
				run: func(ctx context.Context, e *env) error { return logGoNode(ctx, e, key) }},
		)
	}
	return out
}

const (
	logMax = 5               // requests per window, on both sides
	logID  = "192.168.1.100" // the seed's example identifier
)

func logLimiter(e *env, key string) (*ratelimit.Limiter, error) {
	opt := ratelimit.WithRateLimitKey()
	if key == "sliding_limit" {
		opt = ratelimit.WithWindowlessLogKey()
	}
	return ratelimit.New(e.rdb, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(logMax)}},
		ratelimit.WithNamespace(ha), opt)
}

type nodeHit struct {
	Allowed bool `json:"allowed"`
	Count   int  `json:"count"`
}

func nodeHits(ctx context.Context, e *env, key string, n int) ([]nodeHit, error) {
	var hits []nodeHit
	err := e.node(ctx, "hits", map[string]any{"key": key, "id": logID, "max": logMax, "windowMs": time.Minute.Milliseconds(), "n": n}, &hits)
	if err == nil && len(hits) != n {
		err = fmt.Errorf("node made %d hits, want %d", len(hits), n)
	}
	return hits, err
}

// logNodeGo: the backend admits 3 requests; the library counts them
// exactly (2 left), admits 2 more and refuses the 6th.
func logNodeGo(ctx context.Context, e *env, key string) error {
	l, err := logLimiter(e, key)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := nodeHits(ctx, e, key, 3); err != nil {
		return err
	}
	res, err := l.Peek(ctx, logID)
	if err != nil {
		return diverge("Peek over the backend's log: %v", err)
	}
	if res.Remaining != logMax-3 {
		return diverge("the library sees %d remaining after the backend's 3 of %d", res.Remaining, logMax)
	}
	for i := 4; i <= logMax+1; i++ {
		res, err := l.Allow(ctx, logID)
		if err != nil {
			return err
		}
		if res.Allowed != (i <= logMax) {
			return diverge("request %d (after the backend's 3): allowed %v", i, res.Allowed)
		}
	}
	return nil
}

// logGoNode: the library admits 3 requests; the backend counts them and
// admits 2 more, then refuses.
func logGoNode(ctx context.Context, e *env, key string) error {
	l, err := logLimiter(e, key)
	if err != nil {
		return err
	}
	defer l.Close()
	for range 3 {
		if res, err := l.Allow(ctx, logID); err != nil || !res.Allowed {
			return fmt.Errorf("ratelimit Allow: %v %v", res.Allowed, err)
		}
	}
	hits, err := nodeHits(ctx, e, key, 3)
	if err != nil {
		return err
	}
	want := []nodeHit{{true, 4}, {true, 5}, {false, 5}}
	for i, h := range hits {
		if h != want[i] {
			return diverge("the backend's requests after the library's 3: %+v, want %+v", hits, want)
		}
	}
	return nil
}
