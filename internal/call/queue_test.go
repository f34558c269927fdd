package call_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Queue puts a script call on a caller's pipeline, beside plain
// commands, and decodes it as Run does; the first time, when the server
// lacks the script, the call is sent again alone.
func TestQueue(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := e.FreshClient()
	trips := harness.CountTrips(c)
	r := call.NewRunner(c, 0)
	ks := twoKeys(t, e)
	// A script no server holds yet (flushing the scripts would disturb
	// other tests on the server).
	op := pkg.Declare("queued", "-- "+e.NS.Prefix+strconv.FormatInt(time.Now().UnixNano(), 10)+`
if ARGV[1] == 'ok' then return {'ok', 7} end
return {'none'}
`, []*keys.Template{strKey, hashKey}, call.On(call.None, errGone))
	// The first round meets NOSCRIPT: each call is sent again alone (by
	// EVALSHA, then EVAL for the first, which loads it; by EVALSHA for
	// the second). The next round is one pipeline.
	for round, want := range []int64{4, 1} {
		pipe := c.Pipeline()
		get := pipe.Get(ctx, ks[0])
		okRep := r.Queue(ctx, pipe, call.Call{Op: op, Keys: ks, Args: []any{"ok"}})
		gone := r.Queue(ctx, pipe, call.Call{Op: op, Keys: ks, Args: []any{"none"}})
		short := r.Queue(ctx, pipe, call.Call{Op: op, Keys: ks[:1], Args: []any{"ok"}})
		_, _ = pipe.Exec(ctx)
		rep, err := okRep()
		require.NoError(t, err, round)
		require.Equal(t, call.OK, rep.Status)
		require.EqualValues(t, 7, rep.Int(0))
		require.NoError(t, rep.Err())
		rep, err = gone()
		require.ErrorIs(t, err, errGone)
		require.Equal(t, call.None, rep.Status)
		_, err = short()
		require.ErrorContains(t, err, "internal error: 1 keys")
		require.Error(t, get.Err()) // nil: the key does not exist
		require.Equal(t, want, trips.Total(), "round %d", round)
		trips.Reset()
	}
}
