package script_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/script"
)

const incrBy = `-- KEYS[1] counter; ARGV[1] increment, ARGV[2] ttl ms; returns the new value
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n`

func TestRunFallsBackToEval(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	// A script body unique to this test, so it is surely not cached.
	s := script.New(incrBy + "\n-- " + e.NS.Prefix)
	k := e.NS.Prefix + "{c}"
	exists, err := e.Client.ScriptExists(ctx, s.Hash()).Result()
	require.NoError(t, err)
	require.False(t, exists[0])
	n, err := s.Run(ctx, e.Client, []string{k}, 2, 60000).Int64()
	require.NoError(t, err, "NOSCRIPT fell back to EVAL")
	assert.EqualValues(t, 2, n)
	n, err = s.Run(ctx, e.Client, []string{k}, 3, 60000).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 5, n)
}

func TestLoadThenPipelineEvalSha(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	s := script.New(incrBy + "\n-- load " + e.NS.Prefix)
	require.NoError(t, s.Load(ctx, e.Client), "loaded on every master")
	pipe := e.Client.Pipeline()
	var cmds []*redis.Cmd
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} { // spread over slots
		k := e.NS.Prefix + "{" + id + "}"
		cmds = append(cmds, s.EvalSha(ctx, pipe, []string{k}, 1, 60000))
		cmds = append(cmds, s.Eval(ctx, pipe, []string{k}, 1, 60000))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for i, c := range cmds {
		n, err := c.Int64()
		require.NoError(t, err)
		assert.EqualValues(t, i%2+1, n)
	}
	ttl, err := e.Client.PTTL(ctx, e.NS.Prefix+"{a}").Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 50*time.Second)
}

func TestNewJoinsParts(t *testing.T) {
	e := harness.New(t)
	s := script.New("local function twice(x) return 2 * x end", "return twice(tonumber(ARGV[1]))")
	n, err := s.Run(e.Ctx(), e.Client, []string{e.NS.Prefix + "unused"}, 21).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 42, n)
}

// A pipeline of many calls of a script the server does not hold sends the
// body once (SCRIPT LOAD), not once per call.
func TestPipelineLoadsOnceOnNoScript(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := e.FreshClient()
	s := script.New(incrBy + "\n-- pipeline " + e.NS.Prefix)
	var sent bodyCounter
	sent.body = s
	c.AddHook(&sent)
	var calls []script.Call
	for i := range 200 {
		calls = append(calls, script.Call{S: s, Keys: []string{e.NS.Prefix + "{p" + strconv.Itoa(i%9) + "}"}, Args: []any{1, 60000}})
	}
	for i, cmd := range script.Pipeline(ctx, c, calls) {
		n, err := cmd.Int64()
		require.NoError(t, err)
		assert.EqualValues(t, 1+i/9, n)
	}
	assert.Zero(t, sent.evals.Load(), "no EVAL with the body")
	if e.Backend != harness.Cluster { // a cluster loads through its node clients, which the hook does not see
		assert.EqualValues(t, 1, sent.loads.Load(), "loaded once")
	}
}

// bodyCounter counts the commands that carry the script's body.
type bodyCounter struct {
	body         *script.Script
	evals, loads atomic.Int64
}

func (h *bodyCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *bodyCounter) count(cmd redis.Cmder) {
	switch strings.ToLower(cmd.Name()) {
	case "eval":
		h.evals.Add(1)
	case "script":
		h.loads.Add(1)
	}
}
func (h *bodyCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *bodyCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

// TestPipelineLeadsEachMaster: on a cluster, each master's part of a
// pipeline of two or more calls starts with an EXISTS (see lead, which
// keeps go-redis from sending a call twice at once during a reshard); on
// one server nothing is added. Either way every call gets its own reply.
func TestPipelineLeadsEachMaster(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := e.FreshClient()
	var log pipeLog
	c.AddHook(&log)
	s := script.New(incrBy + "\n-- lead " + e.NS.Prefix)
	require.NoError(t, s.Load(ctx, c))
	var calls []script.Call
	masters := map[*redis.Client]bool{}
	for i := range 30 {
		k := e.NS.Prefix + "{l" + strconv.Itoa(i%10) + "}"
		calls = append(calls, script.Call{S: s, Keys: []string{k}, Args: []any{1, 60000}})
		if cc, ok := c.(*redis.ClusterClient); ok {
			m, err := cc.MasterForKey(ctx, k)
			require.NoError(t, err)
			masters[m] = true // each of its tags has three calls
		}
	}
	for i, cmd := range script.Pipeline(ctx, c, calls) {
		n, err := cmd.Int64()
		require.NoError(t, err)
		assert.EqualValues(t, 1+i/10, n, "call %d", i)
	}
	names := log.names()
	require.Len(t, names, len(masters)+len(calls), "one pipeline: the leads and the calls")
	for i, n := range names {
		if i < len(masters) {
			assert.Equal(t, "exists", n, "a lead per master first")
		} else {
			assert.Equal(t, "evalsha", n)
		}
	}
}

// pipeLog records the command names of the pipelines sent that carry a
// script call (not the connection handshakes).
type pipeLog struct {
	mu  sync.Mutex
	all []string
}

func (h *pipeLog) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.all...)
}

func (h *pipeLog) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipeLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		calls := false
		for _, c := range cmds {
			n := strings.ToLower(c.Name())
			names = append(names, n)
			calls = calls || n == "evalsha"
		}
		if calls {
			h.mu.Lock()
			h.all = append(h.all, names...)
			h.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}
