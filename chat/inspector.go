package chat

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
)

// Inspector reads a deployment's support chat for admin tools (the
// dashboard, the CLI): the roster with each admin's availability and
// load, and the first conversations of the unread queue and of the
// backlog, in one pipeline. It writes nothing and is safe for concurrent
// use; create one per process and deployment (tag), and share it. Build
// it with NewInspector.
type Inspector struct {
	c *Chat
}

// NewInspector returns an Inspector over rdb, built with New's options:
// WithNamespace, WithTag and WithConversationTTL shape what it reads (give
// it the Chat's), the others are checked as New checks them and
// otherwise ignored. It fails as New does, with ErrInvalid; it does not
// contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	c, err := makeChat("new inspector", rdb, opts)
	if err != nil {
		return nil, err
	}
	return &Inspector{c: c}, nil
}

// View is what an admin page shows of a deployment's support chat: the
// roster with each admin's availability and load, and the first
// conversations of the unread queue and of the backlog.
type View struct {
	Admins  []AdminState
	Unread  []Waiting
	Backlog []Waiting
}

// ReadView reads Admins, Unread(limit) and Backlog(limit) together, in
// one pipeline of three read-only scripts: one round trip, on a cluster
// too (the deployment's keys share a slot). A read that cannot be
// decoded from it is sent again alone (one more round trip): after the
// server lost the scripts (NOSCRIPT), a slot migration, or a roster that
// changed since this Inspector last looked. A limit outside [1, 1000]
// fails with ErrInvalid before anything is sent. A part that fails is
// left empty and its error joined to the one returned, with the others
// read.
func (in *Inspector) ReadView(ctx context.Context, limit int) (View, error) {
	c := in.c
	pipe := c.run.Client().Pipeline()
	done, err := c.queueView(ctx, pipe, limit)
	if err != nil {
		return View{}, err
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	return done()
}

// queueView adds ReadView's reads to pipe, a pipeline of the Chat's
// client, and returns what decodes them once pipe has been executed. A
// limit outside [1, 1000] fails before anything is queued.
func (c *Chat) queueView(ctx context.Context, pipe redis.Pipeliner, limit int) (func() (View, error), error) {
	const op = "read view"
	uc, err := c.listCall(op, c.global[2], limit, "queue")
	if err != nil {
		return nil, err
	}
	bc, err := c.listCall(op, c.global[3], limit, "queue")
	if err != nil {
		return nil, err
	}
	r := c.current()
	admins := c.run.Queue(ctx, pipe, c.routeCall(adminsOp, "", r.ids, r.quads, nil, nil))
	unread, backlog := c.run.Queue(ctx, pipe, uc), c.run.Queue(ctx, pipe, bc)
	return func() (View, error) {
		var v View
		var errs [3]error
		if rep, err := admins(); err != nil {
			errs[0] = err
		} else if rosterChanged(&rep) {
			v.Admins, errs[0] = c.Admins(ctx)
		} else {
			v.Admins, errs[0] = c.decodeAdmins(op, &rep)
		}
		waiting := func(key string, q func() (call.Reply, error)) ([]Waiting, error) {
			rep, err := q()
			if err != nil {
				return nil, err
			}
			ids, scores, err := decodeList(op, key, &rep)
			if err != nil {
				return nil, err
			}
			return decodeWaiting(op, key, ids, scores)
		}
		v.Unread, errs[1] = waiting(c.global[2], unread)
		v.Backlog, errs[2] = waiting(c.global[3], backlog)
		return v, errors.Join(errs[:]...)
	}, nil
}
