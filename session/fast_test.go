package session

import (
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maskRe masks times and hashes; the hash first, or a hash that starts
// with 13 decimal digits (one in 450) would be masked as a time.
var maskRe = regexp.MustCompile(`[0-9a-f]{64}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d{13}`)

// Get's fast path (get_fast.lua, taken when the caller's second is the
// server's) and get.lua (taken when it is not) leave the same state and
// return the same fields, with and without a timeout of the session's
// own and with an index entry that outlives the session.
func TestGetFastPathMatchesGeneral(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	_, _, err := s.Create(ctx, Info{UserID: "u", Email: "u@example.com", IdleTimeout: 2 * time.Hour})
	require.NoError(t, err)
	state := func(sid string) string {
		k := sessKey(t, e, "u", sid)
		h, err := e.Client.HGetAll(ctx, k).Result()
		require.NoError(t, err)
		var out []string
		for f, v := range h {
			out = append(out, f+"="+maskRe.ReplaceAllString(v, "N"))
		}
		sort.Strings(out)
		score, err := e.Client.ZScore(ctx, idxKey(t, e, "u"), sid).Result()
		require.NoError(t, err)
		ttl := pttl(t, e, k)
		out = append(out, "ttl "+((ttl+500*time.Millisecond)/time.Second).String(),
			"score-ttl "+((time.Duration(int64(score)-time.Now().UnixMilli())*time.Millisecond-ttl+500*time.Millisecond)/time.Second).String(),
			"index ttl "+((pttl(t, e, idxKey(t, e, "u"))+500*time.Millisecond)/time.Second).String())
		return strings.Join(out, "\n")
	}
	for _, own := range []time.Duration{0, 90 * time.Minute} {
		a, _, err := s.Create(ctx, Info{UserID: "u", Email: "u@example.com", IdleTimeout: own})
		require.NoError(t, err)
		b, _, err := s.Create(ctx, Info{UserID: "u", Email: "u@example.com", IdleTimeout: own})
		require.NoError(t, err)
		got, err := s.Get(ctx, "u", a.ID)
		require.NoError(t, err)
		ks, err := s.keyPair("get", "u", b.ID)
		require.NoError(t, err)
		rep, err := s.run.Run(ctx, getOp, ks, b.ID, s.idleArg, "0", "not the second")
		require.NoError(t, err)
		require.Equal(t, "fields", rep.Raw(2))
		general := decodeFlatFields(&rep, ks[0], "u", b.ID)
		require.NoError(t, rep.Err())
		assert.Equal(t, state(a.ID), state(b.ID))
		got.ID, got.CreatedAt, got.LastActivity, got.ExpiresAt, got.AbsoluteExpiry = "", time.Time{}, time.Time{}, time.Time{}, time.Time{}
		general.ID, general.CreatedAt, general.LastActivity, general.ExpiresAt, general.AbsoluteExpiry = "", time.Time{}, time.Time{}, time.Time{}, time.Time{}
		assert.Equal(t, got, general)
	}
}
