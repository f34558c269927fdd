// Package autopipe runs script calls made concurrently by many goroutines
// as shared pipelines (auto-pipelining); a Group's Send puts plain
// commands in the same pipelines.
//
// A Group keeps at most lanes round trips in flight. A call made while
// nothing is in flight runs at once, alone, exactly as script.Run would
// (EVALSHA, then EVAL on NOSCRIPT), on the caller's goroutine and context.
// A call made while round trips are in flight waits in a queue: a new lane
// opens for the queue when a lane is free and the queue is at least as long
// as the number of lanes in flight; otherwise the next lane to come back
// sends everything waiting (up to MaxBatch calls) as one pipeline. Each call
// is still one round trip, and its script still runs atomically on the
// server; only the network reads and writes are shared, which on a loaded
// client and a loaded Redis cost more than a small script does.
//
// Under light load nothing changes: calls go out one by one, at once. Under
// heavy load from many goroutines the system calls per call fall several
// fold on both sides (see bench/RESULTS.md).
//
// On a Redis Cluster each master (found from the call's first key) has its
// own queue, and the lanes are shared: a master with nothing in flight
// sends a call at once, and a further lane opens only while fewer than
// lanes round trips are in flight in all, so that calls spread over the
// masters still share batches as large as on one server (lanes per master
// would split them in as many parts as there are masters: 0.53 round trips
// per rate-limit check on 3 masters, against 0.33 shared; see
// bench/RESULTS-goals.md). A slow or unreachable master holds up only the
// calls bound for it: every other master keeps at least its one lane.
//
// A Group starts goroutines only while calls are queued, and they exit when
// the queue is empty: there is nothing to close.
//
// Faults: when a connection breaks in the middle of a pipeline, go-redis
// sends the whole pipeline again (up to the client's MaxRetries), so the
// scripts of a batch that had already run can run twice; a single command
// has the same exposure in a narrower window. Scripts meant for shared
// pipelines should be harmless to repeat, or the client should have
// MaxRetries: -1.
package autopipe

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/script"
)

// Group coalesces concurrent script calls on one client. It is safe for
// concurrent use. Create it with New.
type Group struct {
	q *Queue[scriptCall]
}

// scriptCall is one script call and, once sent, its reply; or, with no
// script, plain commands (Send), whose replies land in them.
type scriptCall struct {
	s     *script.Script
	keys  []string
	args  []any
	plain []redis.Cmder
	val   any
	err   error
}

// scripts sends script calls: alone as script.Run does, together as one
// script.PipelineWith, the plain commands first.
type scripts struct{ client redis.UniversalClient }

func (x scripts) One(ctx context.Context, c scriptCall) scriptCall {
	if c.s == nil {
		script.PipelineWith(ctx, x.client, nil, c.plain)
		return c
	}
	c.val, c.err = c.s.Run(ctx, x.client, c.keys, c.args...).Result()
	return c
}

func (x scripts) Many(ctx context.Context, cs []*scriptCall) {
	var calls []script.Call
	var plain []redis.Cmder
	for _, c := range cs {
		if c.s == nil {
			if plain == nil {
				plain = make([]redis.Cmder, 0, len(cs)*len(c.plain))
			}
			plain = append(plain, c.plain...)
			continue
		}
		if calls == nil {
			calls = make([]script.Call, 0, len(cs))
		}
		calls = append(calls, script.Call{S: c.s, Keys: c.keys, Args: c.args})
	}
	cmds := script.PipelineWith(ctx, x.client, calls, plain)
	i := 0
	for _, c := range cs {
		if c.s != nil {
			c.val, c.err = cmds[i].Result()
			i++
		}
	}
}

// New returns a Group keeping at most lanes round trips of client in
// flight (on a cluster: in all, but each master may always have one);
// lanes below 1 count as 1.
func New(client redis.UniversalClient, lanes int) *Group {
	return &Group{q: NewQueue[scriptCall](client, lanes, scripts{client})}
}

// Send sends cmds, plain commands that must all hash to key's slot, in
// one round trip, alone or in a shared pipeline with concurrent script
// calls, and returns when each command holds its reply or error (nil),
// or with ctx's error (commands still queued are then never sent), or
// with the error of a panic in a shared pipeline. The commands must be
// harmless to send twice (see the package doc, Faults).
func (g *Group) Send(ctx context.Context, key string, cmds ...redis.Cmder) error {
	_, err := g.q.Do(ctx, key, scriptCall{plain: cmds})
	return err
}

// Run executes s with keys and args, alone or in a shared pipeline, and
// returns its reply. On a cluster client it is routed by keys[0]; every key
// must hash to that slot. keys and args must not change until the call is
// done, which can be after Run returned on a cancelled context; a shared
// read-only slice is fine (go-redis copies them into the command).
// Cancellation is as Queue.Do describes.
func (g *Group) Run(ctx context.Context, s *script.Script, keys []string, args ...any) (any, error) {
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	c, err := g.q.Do(ctx, key, scriptCall{s: s, keys: keys, args: args})
	if err != nil {
		return nil, err
	}
	return c.val, c.err
}
