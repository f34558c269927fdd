package call_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

var zsetKey = reg.MustRegister(keys.Pattern{Template: "calltest:zset:{id}", Type: keys.ZSet, TTL: time.Minute, Tag: "id", Owner: "calltest"})

// score_ms takes what a server prints for an integral score: every digit
// (real Redis) or, for a round one, exponent form (miniredis prints
// 1795500000000 as "1.7955e+12", which to_int refuses); score_digits gives
// it back in digits for Go.
func TestScoreMs(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 0)

	t.Run("parses", func(t *testing.T) {
		op := pkg.Declare("score_ms", `
local out = {}
for i = 1, #ARGV do out[i] = score_ms(ARGV[i]) or false end
return {'ok', out}`, []*keys.Template{strKey}, call.Needs(call.ScoreMS))
		in := []any{"1795500000000", "1.7955e+12", "0", "9007199254740991", "9007199254740992", "-1", "1.5", "inf", "-inf", "nan", "", "x"}
		k, err := strKey.Key(e.NS, "1")
		require.NoError(t, err)
		rep, err := r.Run(ctx, op, []string{k}, in...)
		require.NoError(t, err)
		got := rep.List(0)
		require.NoError(t, rep.Err())
		want := []any{int64(1795500000000), int64(1795500000000), int64(0), int64(9007199254740991), nil, nil, nil, nil, nil, nil, nil, nil}
		assert.Equal(t, want, got)
	})

	t.Run("a round score read back", func(t *testing.T) {
		k, err := zsetKey.Key(e.NS, "1")
		require.NoError(t, err)
		require.NoError(t, e.Client.ZAdd(ctx, k, redis.Z{Score: 1795500000000, Member: "m"}, redis.Z{Score: 1.5, Member: "f"}).Err())
		require.NoError(t, e.Client.PExpire(ctx, k, time.Minute).Err())
		op := pkg.Declare("score_back", `
local s = redis.call('ZSCORE', KEYS[1], 'm')
local f = redis.call('ZSCORE', KEYS[1], 'f')
return {'ok', score_ms(s) or false, score_digits(s), score_ms(s, 0, 1795499999999) or false,
  score_ms(s, 1795500000001) or false, score_ms(s, 1795500000000, 1795500000000) or false,
  score_ms(f) or false, score_digits(f)}`, []*keys.Template{zsetKey}, call.Needs(call.ScoreMS))
		rep, err := r.Run(ctx, op, []string{k})
		require.NoError(t, err)
		assert.EqualValues(t, 1795500000000, rep.Int(0))
		assert.Equal(t, "1795500000000", rep.Str(1))
		_, above := rep.OptStr(2)
		assert.False(t, above, "above hi")
		_, below := rep.OptStr(3)
		assert.False(t, below, "below lo")
		assert.EqualValues(t, 1795500000000, rep.Int(4), "bounds inclusive")
		_, frac := rep.OptStr(5)
		assert.False(t, frac, "a fraction")
		assert.Equal(t, "1.5", rep.Str(6), "a score score_ms refuses goes as printed")
		require.NoError(t, rep.Err())
	})
}
