package aimemory

import (
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York on machines without a zone database

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// The tokens of the day and the daily budget start again at the zone's
// midnight by the server's clock, on a DST day too (miniredis moves the
// server clock; the client's clock stays where it is and the client
// learns the server's).
func TestDayBoundaryWithServerTime(t *testing.T) {
	e := harness.New(t)
	if e.Mini == nil {
		t.Skip("moves the server clock by days: miniredis only (TestDayBoundaryOnRealClock covers the real backends)")
	}
	ctx := e.Ctx()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	m := newMemory(t, e, WithTimeZone(ny), WithDailyBudget(25), WithUserTTL(time.Minute))
	to := func(t time.Time) { e.Advance(t.Sub(e.Now())) }
	appendTokens := func(n int) (Appended, error) {
		return m.Append(ctx, "u", "c", []Message{msg(User, "x", n)})
	}

	to(time.Date(2026, 3, 7, 23, 59, 0, 0, ny)) // the eve of a 23-hour day
	res, err := appendTokens(10)
	require.NoError(t, err)
	assert.Equal(t, int64(10), res.TokensToday)
	res, err = appendTokens(10)
	require.NoError(t, err)
	assert.Equal(t, int64(20), res.TokensToday)
	_, err = appendTokens(10)
	require.ErrorIs(t, err, ErrBudgetExceeded)
	u, err := m.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, UserContext{LastConversationID: "c", TokensToday: 20, Day: "2026-03-07"}, u)
	// The context lives until the day ends even with a 1-minute TTL.
	assert.GreaterOrEqual(t, e.Client.PTTL(ctx, key(t, e, userKey, "u")).Val(), 59*time.Second)

	e.Advance(61 * time.Second) // 00:00:01 on March 8
	u, err = m.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, int64(0), u.TokensToday, "a new day, before any append")
	assert.Equal(t, "2026-03-08", u.Day)
	res, err = appendTokens(10)
	require.NoError(t, err)
	assert.Equal(t, int64(10), res.TokensToday)

	// March 8 has 23 hours: it ends at 04:00 UTC on March 9.
	to(time.Date(2026, 3, 9, 3, 59, 59, 0, time.UTC))
	u, err = m.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, "2026-03-08", u.Day)
	assert.Equal(t, int64(10), u.TokensToday)
	res, err = appendTokens(15)
	require.NoError(t, err)
	assert.Equal(t, int64(25), res.TokensToday)
	e.Advance(time.Second)
	res, err = appendTokens(25)
	require.NoError(t, err)
	assert.Equal(t, int64(25), res.TokensToday, "the budget starts again at midnight")
	u, err = m.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, "2026-03-09", u.Day)

	// A jump of a year: the client learns the server's clock again.
	e.Advance(365 * 24 * time.Hour)
	res, err = appendTokens(1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.TokensToday)
}

// On every backend: a zone whose midnight is two seconds away, by the
// server's clock. The tokens before midnight count for one day; the
// first append after it starts the next at its own tokens.
func TestDayBoundaryOnRealClock(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(3 * time.Second)
	ctx := e.Ctx()
	now := e.Now()
	off := -int((now.Unix() + 2) % 86400) // local midnight at now+2s (UTC seconds)
	zone := time.FixedZone("test", off)
	m := newMemory(t, e, WithTimeZone(zone), WithDailyBudget(15))
	res, err := m.Append(ctx, "u", "c", []Message{msg(User, "x", 10)})
	require.NoError(t, err)
	assert.Equal(t, int64(10), res.TokensToday)
	_, err = m.Append(ctx, "u", "c", []Message{msg(User, "x", 10)})
	require.True(t, errors.Is(err, ErrBudgetExceeded), "%v", err)
	before, err := m.User(ctx, "u")
	require.NoError(t, err)

	e.Advance(time.Until(time.Unix(now.Unix()+2, 0).Add(500 * time.Millisecond)))
	if e.Mini != nil {
		e.Advance(2500 * time.Millisecond)
	}
	res, err = m.Append(ctx, "u", "c", []Message{msg(User, "x", 10)})
	require.NoError(t, err)
	assert.Equal(t, int64(10), res.TokensToday)
	after, err := m.User(ctx, "u")
	require.NoError(t, err)
	assert.NotEqual(t, before.Day, after.Day)
	assert.Equal(t, int64(10), after.TokensToday)
}
