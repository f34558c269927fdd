package call_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

var (
	errInvalid = errors.New("calltest: invalid argument")
	errHeld    = errors.New("calltest: held")
	errGone    = errors.New("calltest: not found")
	pkg        = &call.Pkg{Name: "calltest", ErrInvalid: errInvalid}

	reg     = (&keys.Registry{})
	strKey  = reg.MustRegister(keys.Pattern{Template: "calltest:str:{id}", Type: keys.String, TTL: time.Minute, Tag: "id", Owner: "calltest"})
	hashKey = reg.MustRegister(keys.Pattern{Template: "calltest:hash:{id}", Type: keys.Hash, TTL: time.Minute, Tag: "id", Owner: "calltest"})
)

// echo returns, for ARGV[1], each status of the vocabulary.
var echoOp = pkg.Declare("echo", `
local w = ARGV[1]
if w == 'ok' then return {'ok', 7, 'x', false, {1, 2}} end
if w == 'none' then return {'none'} end
if w == 'conflict' then return {'conflict', 'reused', 12} end
if w == 'limit' then return {'limit'} end
if w == 'corrupt' then return {'corrupt', 2, 'not a number'} end
if w == 'invalid' then return {'invalid', 'cost above the limit'} end
if w == 'words' then return 'ok 7 x -3' end
if w == 'word' then return 'limit' end
if w == 'held' then return 'conflict reused' end
if w == 'bare' then return 1 end
if w == 'other' then return 'weird 1' end
if w == 'nil' then return nil end
return {'weird'}
`, []*keys.Template{strKey, hashKey}, call.On(call.Conflict, errHeld), call.On(call.None, errGone))

func twoKeys(t *testing.T, e *harness.Env) []string {
	t.Helper()
	a, err := strKey.Key(e.NS, "1")
	require.NoError(t, err)
	b, err := hashKey.Key(e.NS, "1")
	require.NoError(t, err)
	return []string{a, b}
}

func TestReplyVocabulary(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 0)
	ks := twoKeys(t, e)

	rep, err := r.Run(ctx, echoOp, ks, "ok")
	require.NoError(t, err)
	assert.Equal(t, call.OK, rep.Status)
	assert.EqualValues(t, 7, rep.Int(0))
	assert.Equal(t, "x", rep.Str(1))
	_, present := rep.OptStr(2)
	assert.False(t, present, "Lua false is a missing value")
	assert.Equal(t, []int64{1, 2}, rep.Ints(3))
	require.NoError(t, rep.Err())
	rep.Int(9)
	err = rep.Err()
	require.ErrorIs(t, err, reply.ErrUnexpected)
	assert.Contains(t, err.Error(), `calltest: echo "`+ks[0]+`": payload[9]`)

	rep, err = r.Run(ctx, echoOp, ks, "none")
	require.ErrorIs(t, err, errGone)
	assert.Equal(t, call.None, rep.Status)

	rep, err = r.Run(ctx, echoOp, ks, "conflict")
	require.ErrorIs(t, err, errHeld)
	assert.Equal(t, "reused", rep.Str(0), "the payload comes with a mapped status")
	assert.EqualValues(t, 12, rep.Int(1))
	assert.Equal(t, `calltest: echo "`+ks[0]+`": held`, err.Error(), "each prefix once")

	rep, err = r.Run(ctx, echoOp, ks, "limit")
	require.NoError(t, err, "an unmapped status is not an error")
	assert.Equal(t, call.Limit, rep.Status)

	_, err = r.Run(ctx, echoOp, ks, "corrupt")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	var ce *keys.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, ks[1], ce.Key, "corrupt names KEYS[i]")
	var callErr *call.Error
	require.ErrorAs(t, err, &callErr)
	assert.Equal(t, ks[1], callErr.Key)

	_, err = r.Run(ctx, echoOp, ks, "invalid")
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, err.Error(), "invalid argument: cost above the limit")

	// one string: the status and the payload as words
	rep, err = r.Run(ctx, echoOp, ks, "words")
	require.NoError(t, err)
	assert.Equal(t, call.OK, rep.Status)
	assert.EqualValues(t, 7, rep.Int(0))
	assert.Equal(t, "x", rep.Str(1))
	assert.EqualValues(t, -3, rep.Int(2))
	assert.Equal(t, 3, rep.Len())
	require.NoError(t, rep.Err())
	rep, err = r.Run(ctx, echoOp, ks, "word")
	require.NoError(t, err)
	assert.Equal(t, call.Limit, rep.Status)
	assert.Zero(t, rep.Len())
	rep, err = r.Run(ctx, echoOp, ks, "held")
	require.ErrorIs(t, err, errHeld, "a word status maps to its error too")
	assert.Equal(t, "reused", rep.Str(0))

	for _, w := range []string{"bare", "nil", "weird", "other"} {
		_, err = r.Run(ctx, echoOp, ks, w)
		require.ErrorIs(t, err, reply.ErrUnexpected, w)
		assert.NotErrorIs(t, err, redis.Nil, "redis.Nil never leaks")
	}

	_, err = r.Run(ctx, echoOp, ks[:1], "ok")
	require.Error(t, err, "fewer keys than declared")
}

func TestWrongTypeNamesTheKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 0)
	ks := twoKeys(t, e)
	op := pkg.Declare("touch", `
redis.call('GET', KEYS[1])
redis.call('HGET', KEYS[2], 'f')
return {'ok'}`, []*keys.Template{strKey, hashKey})
	_, err := r.Run(ctx, op, ks)
	require.NoError(t, err)
	require.NoError(t, e.Client.RPush(ctx, ks[1], "foreign").Err())
	_, err = r.Run(ctx, op, ks)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	var ce *keys.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, ks[1], ce.Key)
	assert.Contains(t, err.Error(), "holds a list, want a hash")
}

func TestErrorText(t *testing.T) {
	err := pkg.Invalidf("get", "empty %s", "id")
	assert.Equal(t, "calltest: get: invalid argument: empty id", err.Error())
	require.ErrorIs(t, err, errInvalid)

	_, kerr := strKey.Key(keys.Namespace{}, "")
	err = pkg.Invalid("get", kerr)
	require.ErrorIs(t, err, errInvalid)
	require.ErrorIs(t, err, keys.ErrInvalid)
	assert.Equal(t, 1, strings.Count(err.Error(), "calltest: "), err.Error())
	assert.Same(t, err, pkg.Invalid("get", err), "not wrapped twice")

	_, err = pkg.Key("get", strKey, keys.Namespace{}, "")
	require.ErrorIs(t, err, errInvalid)
	require.ErrorIs(t, err, keys.ErrInvalid)

	ctxErr := pkg.Wrap(context.Background(), "get", "k", context.DeadlineExceeded)
	require.ErrorIs(t, ctxErr, context.DeadlineExceeded)
	assert.Equal(t, `calltest: get "k": context deadline exceeded`, ctxErr.Error())
	assert.Nil(t, pkg.Wrap(context.Background(), "get", "k", nil))
	// A network timeout at the context's deadline is that deadline.
	dctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	netErr := pkg.Wrap(dctx, "get", "k", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded})
	require.ErrorIs(t, netErr, context.DeadlineExceeded)
}

func TestRunManyAndShared(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	op := pkg.Declare("incr", `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], 60000)
return {'ok', n}`, []*keys.Template{strKey}, call.Shared())
	r := call.NewRunner(e.Client, 4)
	var calls []call.Call
	for i := range 50 {
		k, err := strKey.Key(e.NS, fmt.Sprint(i%7))
		require.NoError(t, err)
		calls = append(calls, call.Call{Op: op, Keys: []string{k}, Args: []any{1}})
	}
	calls = append(calls, call.Call{Op: op}) // no keys: its own error
	reps, errs := r.RunMany(ctx, calls)
	for i := range 50 {
		require.NoError(t, errs[i])
		assert.EqualValues(t, i/7+1, reps[i].Int(0))
	}
	require.Error(t, errs[50])

	done := make(chan error, 64)
	for range 64 {
		go func() {
			k, _ := strKey.Key(e.NS, "shared")
			rep, err := r.Run(ctx, op, []string{k}, 1)
			if err == nil {
				err = rep.Err()
			}
			done <- err
		}()
	}
	for range 64 {
		require.NoError(t, <-done)
	}
	k, _ := strKey.Key(e.NS, "shared")
	n, err := e.Client.Get(ctx, k).Int()
	require.NoError(t, err)
	assert.Equal(t, 64, n)
}

func TestPreludeHelpers(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 0)
	ks := twoKeys(t, e)

	t.Run("the prelude goes whole", func(t *testing.T) {
		op := pkg.Declare("bare", "return 1", []*keys.Template{strKey})
		assert.Equal(t, call.Prelude()+"\nreturn 1", op.Script().Source())
	})

	t.Run("to_int", func(t *testing.T) {
		op := pkg.Declare("to_int", `
local out = {}
for i = 1, #ARGV do out[i] = to_int(ARGV[i]) or false end
return {'ok', out}`, []*keys.Template{strKey})
		in := []any{"12", "-7", "9007199254740991", "9007199254740992", "1.5", " 1", "0x10", "", "inf", "1e3", "99999999999999999999"}
		rep, err := r.Run(ctx, op, ks[:1], in...)
		require.NoError(t, err)
		got := rep.List(0)
		require.NoError(t, rep.Err())
		want := []any{int64(12), int64(-7), int64(9007199254740991), nil, nil, nil, nil, nil, nil, nil, nil}
		assert.Equal(t, want, got)
	})

	t.Run("json_str matches encoding/json", func(t *testing.T) {
		op := pkg.Declare("json_str", `return {'ok', json_str(ARGV[1])}`, []*keys.Template{strKey}, call.Needs(call.JSONStr))
		assert.Equal(t, call.Prelude()+"\n"+call.JSONStr.Source()+"\n"+"return {'ok', json_str(ARGV[1])}", op.Script().Source())
		for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "tab\tnl\ncr\r", "ctl\x01\x1f", "a/b <b>&", "ünï €"} {
			rep, err := r.Run(ctx, op, ks[:1], s)
			require.NoError(t, err)
			var back string
			require.NoError(t, json.Unmarshal([]byte(rep.Str(0)), &back), rep.Str(0))
			assert.Equal(t, s, back)
			assert.NotContains(t, rep.Str(0), `\/`)
		}
	})

	t.Run("int_str", func(t *testing.T) {
		// Integers within 2^53 take the '%d' path, the rest '%.0f': the
		// digits are the same either way, never an exponent.
		op := pkg.Declare("int_str", `return {'ok', int_str(0), int_str(-7), int_str(1795500000000000), int_str(2^53 - 1),
  int_str(2^53), int_str(-2^60), int_str(2.5), int_str(1e20)}`, []*keys.Template{strKey})
		rep, err := r.Run(ctx, op, ks[:1])
		require.NoError(t, err)
		want := []string{"0", "-7", "1795500000000000", "9007199254740991", "9007199254740992", "-1152921504606846976", "2", "100000000000000000000"}
		for i, w := range want {
			assert.Equal(t, w, rep.Str(i), "int_str #%d", i+1)
		}
		require.NoError(t, rep.Err())
	})

	t.Run("rfc3339 and server time", func(t *testing.T) {
		op := pkg.Declare("clock", `local ms = now_ms() return {'ok', ms, rfc3339(ms), int_str(now_us())}`, []*keys.Template{strKey}, call.Needs(call.RFC3339))
		rep, err := r.Run(ctx, op, ks[:1])
		require.NoError(t, err)
		ms, iso, us := rep.Int(0), rep.Str(1), rep.Str(2)
		require.NoError(t, rep.Err())
		assert.Equal(t, time.UnixMilli(ms).UTC().Format(time.RFC3339), iso)
		now := e.Now()
		assert.InDelta(t, now.UnixMilli(), ms, 5000)
		assert.Len(t, us, 16)
	})
}

// batched must run a command over more elements than Lua can unpack (about
// 8,000 on a real server; miniredis has no such limit).
func TestBatchedBeyondUnpackLimit(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 0)
	ks := twoKeys(t, e)
	op := pkg.Declare("fill", `
local n = tonumber(ARGV[1])
local fields = {}
for i = 1, n do
  fields[#fields + 1] = 'f' .. i
  fields[#fields + 1] = i
end
local added = batched('HSET', KEYS[2], fields)
local names = {}
for i = 1, n do names[i] = 'f' .. i end
redis.call('PEXPIRE', KEYS[2], 60000)
local removed = batched('HDEL', KEYS[2], names, 1, n - 1)
return {'ok', added, removed, redis.call('HLEN', KEYS[2])}`, []*keys.Template{strKey, hashKey}, call.Needs(call.Batched))
	const n = 25000
	rep, err := r.Run(ctx, op, ks, n)
	require.NoError(t, err)
	assert.EqualValues(t, n, rep.Int(0))
	assert.EqualValues(t, n-1, rep.Int(1))
	assert.EqualValues(t, 1, rep.Int(2))
	require.NoError(t, rep.Err())

	// The limit batched exists for: a plain unpack of that list fails on a
	// real server.
	if e.Real() {
		bad := pkg.Declare("unpack", `
local l = {}
for i = 1, 25000 do l[i] = 'm' .. i end
redis.call('SADD', KEYS[1], unpack(l))
return {'ok'}`, []*keys.Template{strKey})
		k, err := (&keys.Registry{}).MustRegister(keys.Pattern{Template: "calltest:set:{id}", Type: keys.Set, TTL: time.Minute, Tag: "id", Owner: "calltest"}).Key(e.NS, "1")
		require.NoError(t, err)
		_, err = r.Run(ctx, bad, []string{k})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "unpack")
	}
}

func TestCheckClient(t *testing.T) {
	require.ErrorIs(t, pkg.CheckClient("new", nil), errInvalid)
	var nilClient *redis.Client
	require.ErrorIs(t, pkg.CheckClient("new", nilClient), errInvalid)
	off := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer off.Close()
	err := pkg.CheckClient("new", off)
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, err.Error(), "ContextTimeoutEnabled")
	on := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer on.Close()
	require.NoError(t, pkg.CheckClient("new", on))
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cl.Close()
	require.ErrorIs(t, pkg.CheckClient("new", cl), errInvalid)
	u := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer u.Close()
	require.NoError(t, pkg.CheckClient("new", u))
}

// A package library is sent whole, after the prelude and before the
// body; its helpers may use the prelude's.
func TestLibrary(t *testing.T) {
	lib := `local WHY = 'bad fence'
local function fence(k)
  return to_int(redis.call('GET', k)) or {'corrupt', 1, WHY}
end`
	body := "local n = fence(KEYS[1]) if type(n) == 'table' then return n end return {'ok', n}"
	e := harness.New(t)
	r := call.NewRunner(e.Client, 0)
	op := pkg.Declare("lib", body, []*keys.Template{strKey}, call.Uses(lib))
	assert.Equal(t, call.Prelude()+"\n"+lib+"\n"+body, op.Script().Source())
	head, gotLib, gotBody := op.Parts()
	assert.Equal(t, []string{"", lib, body}, []string{head, gotLib, gotBody})
	ks := twoKeys(t, e)[:1]
	require.NoError(t, e.Client.Set(e.Ctx(), ks[0], "41", time.Minute).Err())
	rep, err := r.Run(e.Ctx(), op, ks)
	require.NoError(t, err)
	assert.EqualValues(t, 41, rep.Int(0))
	require.NoError(t, e.Client.Set(e.Ctx(), ks[0], "x", time.Minute).Err())
	_, err = r.Run(e.Ctx(), op, ks)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), "bad fence")
}

// A Head comes before the prelude: its fast path returns before any
// helper is defined, and what it does not handle falls through to the
// body, helpers and all.
func TestHead(t *testing.T) {
	e := harness.New(t)
	r := call.NewRunner(e.Client, 0)
	op := pkg.Declare("head", "return {'ok', to_int(ARGV[1])}", []*keys.Template{strKey},
		call.Head("if ARGV[1] == 'fast' then return {'ok', 'fast'} end"))
	src := op.Script().Source()
	assert.Less(t, strings.Index(src, "ARGV[1] == 'fast'"), strings.Index(src, "local function to_int("))
	ks := twoKeys(t, e)[:1]
	rep, err := r.Run(e.Ctx(), op, ks, "fast")
	require.NoError(t, err)
	assert.Equal(t, "fast", rep.Str(0))
	rep, err = r.Run(e.Ctx(), op, ks, "42")
	require.NoError(t, err)
	assert.EqualValues(t, 42, rep.Int(0))
}

// A call that meets a moving slot (TRYAGAIN and the like, after go-redis's
// own retries) is sent again until it succeeds, or fails by its own
// deadline with both errors.
func TestRedirectionsRetriedUntilDeadline(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 0)
	ks := twoKeys(t, e)[:1]
	// Answers TRYAGAIN to its first ARGV[1] runs, then ok.
	op := pkg.Declare("flaky", `
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], 60000)
if n <= tonumber(ARGV[1]) then
  return redis.error_reply('TRYAGAIN Multiple keys request during rehashing of slot')
end
return {'ok', n}`, []*keys.Template{strKey})
	rep, err := r.Run(ctx, op, ks, 12)
	require.NoError(t, err, "retried past go-redis's own attempts")
	assert.EqualValues(t, 13, rep.Int(0))

	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.Run(short, op, ks, 1<<40)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "fails by its own deadline")
	assert.Less(t, time.Since(start), 2*time.Second)

	// RunMany retries too (go-redis resends a whole pipeline when one of
	// its commands meets TRYAGAIN, so every call of it may run again).
	a, _ := strKey.Key(e.NS, "a")
	b, _ := strKey.Key(e.NS, "b")
	reps, errs := r.RunMany(ctx, []call.Call{{Op: op, Keys: []string{a}, Args: []any{12}}, {Op: op, Keys: []string{b}, Args: []any{0}}})
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Greater(t, reps[0].Int(0), int64(12))
	short, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, errs = r.RunMany(short, []call.Call{{Op: op, Keys: ks, Args: []any{1 << 40}}})
	require.Error(t, errs[0])
	assert.ErrorIs(t, errs[0], context.DeadlineExceeded)
}

// Read returns a plain read's own outcome, with or without lanes: the
// value, redis.Nil for a missing key, or the context's error before it
// was sent.
func TestRead(t *testing.T) {
	for _, lanes := range []int{0, 4} {
		t.Run(fmt.Sprint("lanes=", lanes), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			r := call.NewRunner(e.Client, lanes)
			k, err := strKey.Key(e.NS, "read")
			require.NoError(t, err)
			get := redis.NewStringCmd(ctx, "get", k)
			require.ErrorIs(t, r.Read(ctx, k, get), redis.Nil)
			require.NoError(t, e.Client.Set(ctx, k, "v", time.Minute).Err())
			get = redis.NewStringCmd(ctx, "get", k)
			require.NoError(t, r.Read(ctx, k, get))
			assert.Equal(t, "v", get.Val())
			done, cancel := context.WithCancel(ctx)
			cancel()
			require.ErrorIs(t, r.Read(done, k, redis.NewStringCmd(done, "get", k)), context.Canceled)
		})
	}
}
