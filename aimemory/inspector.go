package aimemory

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
)

// Inspector holds the admin reads of the AI memory, for the dashboard
// and the CLI. It is built like a Memory but holds no caches and no bus,
// so it needs no Close. It is safe for concurrent use.
type Inspector struct {
	m *Memory // the reads' part of a Memory: client, runner, options, days
}

// NewInspector returns the Inspector of the AI memory under the
// namespace of WithNamespace. It takes the options of New and checks them
// as New does (ErrInvalid on a bad option, a nil client or a client
// without ContextTimeoutEnabled); options other than WithNamespace and
// WithTimeZone mean nothing to reads and are otherwise ignored. It does
// not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	o, err := call.Configure(pkg, "new inspector", rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	return &Inspector{m: &Memory{rdb: rdb, run: call.NewRunner(rdb, 0), opt: o, days: newDays(o.zone), now: time.Now}}, nil
}

// View is what an admin page shows of one user: the user's context and
// the window of one of their conversations.
type View struct {
	User   UserContext
	Window Window
}

// ReadView reads what Memory.User(userID) and Memory.Window(userID,
// convID, opts...) read, together, in one pipeline of two read-only
// scripts, with their validation and their errors (joined). Every key of
// a user hashes to one slot, so it is one round trip on a cluster too.
// The window is read by the window script (as Window reads a token-budget
// window above a cap of 100), which picks the window Window picks. Like
// Window, it does not extend the conversation's TTL. For admin tools, such as the
// dashboard's AI memory page, which names the conversation it shows.
//
// When the server's clock is outside the days the client passed (a
// client clock more than a day off), the user's context is read once
// more, alone, as User does.
func (in *Inspector) ReadView(ctx context.Context, userID, convID string, opts ...WindowOption) (View, error) {
	const op = "read view"
	m := in.m
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
