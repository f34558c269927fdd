// Package script runs the library's Lua scripts. Each package embeds its
// *.lua files with //go:embed and wraps each in a Script.
//
// Run uses EVALSHA and falls back to EVAL when the server answers NOSCRIPT
// (a restarted server, a new cluster master, a failover), so callers never
// load scripts by hand. Inside a pipeline that fallback is impossible, so
// pipelines use Eval, which sends the body, or call Load first and EvalSha.
package script

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script. It is safe for concurrent use.
type Script struct {
	s   *redis.Script
	src string
}

// New wraps Lua source. Several parts are joined with newlines, so that a
// package can prepend a shared prelude of local helper functions to each of
// its scripts.
func New(parts ...string) *Script {
	src := strings.Join(parts, "\n")
	return &Script{s: redis.NewScript(src), src: src}
}

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.src }

// Hash returns the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.s.Hash() }

// Run executes the script: EVALSHA, then EVAL on NOSCRIPT. On a cluster
// client it is routed by keys[0]; every key must hash to that slot.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.s.Run(ctx, c, keys, args...)
}

// Eval sends the script body with EVAL. Use it inside pipelines, where Run's
// NOSCRIPT fallback cannot happen.
func (s *Script) Eval(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.s.Eval(ctx, c, keys, args...)
}

// EvalSha runs the script by hash only. Use it in pipelines after Load.
func (s *Script) EvalSha(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.s.EvalSha(ctx, c, keys, args...)
}

// Load loads the script on every node that can run it: every master of a
// cluster, every shard of a ring, or the one server.
func (s *Script) Load(ctx context.Context, c redis.UniversalClient) error {
	load := func(ctx context.Context, n *redis.Client) error { return s.s.Load(ctx, n).Err() }
	switch cc := c.(type) {
	case *redis.ClusterClient:
		return cc.ForEachMaster(ctx, load)
	case *redis.Ring:
		return cc.ForEachShard(ctx, load)
	}
	return s.s.Load(ctx, c).Err()
}

// Call is one script call of a pipeline.
type Call struct {
	S    *Script
	Keys []string
	Args []any
}

// Pipeline runs calls as one pipeline of EVALSHA. Calls whose script a
// node did not hold (NOSCRIPT: a restarted server, a new master) are sent
// again in a second pipeline, by hash, after each such script was loaded
// once on every master; only if a node still lacks it (a failover between
// the two) does the body go out, with EVAL, in a third. So a batch of
// thousands of calls of one script sends its body once, not once per call.
// The commands are returned in the order of calls, each with its own reply
// or error. On a cluster client go-redis splits the pipelines per node,
// and each node's part starts with a lead (see lead).
func Pipeline(ctx context.Context, c redis.UniversalClient, calls []Call) []*redis.Cmd {
	return PipelineWith(ctx, c, calls, nil)
}

// PipelineWith is Pipeline with plain commands in the first pipeline too,
// ahead of the calls (and of the lead: a single-key command never answers
// TRYAGAIN, so a node's part that starts with one is never sent twice).
// Each plain command gets its own reply or error; none is sent again on
// NOSCRIPT. One plain command and no call is sent as a command, not a
// pipeline.
func PipelineWith(ctx context.Context, c redis.UniversalClient, calls []Call, plain []redis.Cmder) []*redis.Cmd {
	if len(calls) == 0 && len(plain) == 1 {
		_ = c.Process(ctx, plain[0]) // the command carries its error
		return nil
	}
	var cmds []*redis.Cmd
	if len(calls) > 0 {
		cmds = make([]*redis.Cmd, len(calls))
	}
	pipe := c.Pipeline()
	if len(plain) > 0 {
		_ = pipe.BatchProcess(ctx, plain...)
	}
	lead(ctx, c, pipe, calls)
	for i, x := range calls {
		cmds[i] = x.S.EvalSha(ctx, pipe, x.Keys, x.Args...)
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	for _, eval := range []bool{false, true} {
		var idx []int
		var again []Call
		for i, cmd := range cmds {
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				idx, again = append(idx, i), append(again, calls[i])
			}
		}
		if len(idx) == 0 {
			break
		}
		pipe := c.Pipeline()
		lead(ctx, c, pipe, again)
		loaded := map[*Script]bool{}
		for _, i := range idx {
			x := calls[i]
			if eval {
				cmds[i] = x.S.Eval(ctx, pipe, x.Keys, x.Args...)
				continue
			}
			if !loaded[x.S] {
				loaded[x.S] = true
				_ = x.S.Load(ctx, c) // on failure the EVAL round below sends the body
			}
			cmds[i] = x.S.EvalSha(ctx, pipe, x.Keys, x.Args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	return cmds
}

// lead queues on pipe, when c is a cluster client, an EXISTS of a key of
// each master that two or more of calls go to, ahead of the calls, so that
// each such master's part of the pipeline starts with a command that
// never answers TRYAGAIN. go-redis (v9.22, v9.23) sends a node's part of
// a cluster pipeline again whole when its first command's error is one to
// retry (TRYAGAIN: a script whose keys a slot migration has split), but
// the commands of that part that answered MOVED are already queued for
// their new node: the next attempt sends them twice, from two goroutines
// writing one command's reply (a data race, seen during resharding). With
// the lead first a script's TRYAGAIN is its own outcome, which
// internal/call's Runner retries; a MOVED is still followed by go-redis,
// once. The lead costs one EXISTS per master per pipeline.
func lead(ctx context.Context, c redis.UniversalClient, pipe redis.Pipeliner, calls []Call) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok || len(calls) < 2 {
		return
	}
	type first struct {
		key string
		n   int
	}
	var masters []*redis.Client // in the order first met
	byMaster := make(map[*redis.Client]*first, 1)
	for _, x := range calls {
		if len(x.Keys) == 0 {
			continue
		}
		m, err := cc.MasterForKey(ctx, x.Keys[0])
		if err != nil {
			continue // the pipeline will fail to map it too
		}
		f := byMaster[m]
		if f == nil {
			f = &first{key: x.Keys[0]}
			byMaster[m] = f
			masters = append(masters, m)
		}
		f.n++
	}
	for _, m := range masters {
		if f := byMaster[m]; f.n >= 2 {
			pipe.Exists(ctx, f.key)
		}
	}
}
