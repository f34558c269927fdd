package aimemory

import (
	"context"
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// View is what an admin page shows of one user: the user's context and
// the window of one of their conversations.
type View struct {
	User   UserContext
	Window Window
}

// ReadView reads User(userID) and Window(userID, convID, opts...)
// together, in one pipeline of two read-only scripts, with their
// validation and their errors (joined). Every key of a user hashes to
// one slot, so it is one round trip on a cluster too. The window is read
// by the window script (as Window reads a token-budget window above a
// cap of 100), which picks the window Window picks. Like Window, it does
// not extend the conversation's TTL. For admin tools, such as the
// dashboard's AI memory page, which names the conversation it shows.
//
// When the server's clock is outside the days the client passed (a
// client clock more than a day off), the user's context is read once
// more, alone, as User does.
func (m *Memory) ReadView(ctx context.Context, userID, convID string, opts ...WindowOption) (View, error) {
	const op = "read view"
	cfg, err := windowConfigOf(op, opts)
	if err != nil {
		return View{}, err
	}
	uk, err := pkg.Key(op, userKey, m.opt.ns, userID)
	if err != nil {
		return View{}, err
	}
	c, err := m.conv(op, userID, convID)
	if err != nil {
		return View{}, err
	}
	calls := []call.Call{{Op: userReadOp, Keys: []string{uk}, Args: m.days.args()}, windowCall(c, cfg)}
	reps, errs := m.run.RunMany(ctx, calls)
	var v View
	var uerr, werr error
	if errs[0] == nil && reps[0].Status == call.None { // the clock: learn it, as runDay does
		reps[0], errs[0] = m.clockRetry(ctx, &reps[0], uk)
	}
	if uerr = errs[0]; uerr == nil {
		v.User, uerr = decodeUser(&reps[0], uk)
	}
	if werr = errs[1]; werr == nil {
		v.Window, werr = decodeWindow(&reps[1], c)
	}
	if err := errors.Join(uerr, werr); err != nil {
		return View{}, err
	}
	return v, nil
}

// clockRetry learns the server clock that user_read reported in rep and
// reads the user context at uk again, as runDay does.
func (m *Memory) clockRetry(ctx context.Context, rep *call.Reply, uk string) (call.Reply, error) {
	now := rep.Int(1)
	if err := rep.Err(); err != nil {
		return *rep, err
	}
	m.days.learn(now)
	return m.runDay(ctx, userReadOp, []string{uk})
}
