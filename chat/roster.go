package chat

import (
	"context"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/presence"
)

// AddAdmin puts admin in the deployment's roster with capacity (0 means
// WithCapacity's default, 10) or changes their capacity, and hands the
// backlog out (one script). An admin receives conversations while their
// availability (Availability().Set) is online and they have fewer than
// capacity; lowering a capacity takes nothing away, it only stops new
// assignments until the load is below it. ErrInvalid for a bad ID, a
// capacity outside [0, 1000], or a roster of 100 others.
// Running it twice is running it once.
func (c *Chat) AddAdmin(ctx context.Context, admin string, capacity int) error {
	const op = "add admin"
	if _, err := c.adminKeys(op, admin); err != nil {
		return err
	}
	if capacity == 0 {
		capacity = c.opt.capacity
	}
	if capacity < 1 || capacity > maxCapacity {
		return pkg.Invalidf(op, "capacity %d outside [1, %d]", capacity, maxCapacity)
	}
	rep, err := c.route(ctx, addAdminOp, op, "", admin, nil, admin, capacity)
	if err != nil {
		return err
	}
	if rep.Status == call.Limit {
		return pkg.Invalidf(op, "the roster has %d admins already", maxAdmins)
	}
	return c.adopt(op, rep.Strs(0), rep.Err())
}

// RemoveAdmin takes admin off the roster: their conversations go back to
// the backlog and to the other admins with room, in one script. Removing
// an admin who is not in the roster changes nothing.
func (c *Chat) RemoveAdmin(ctx context.Context, admin string) error {
	const op = "remove admin"
	if _, err := c.adminKeys(op, admin); err != nil {
		return err
	}
	rep, err := c.route(ctx, removeAdminOp, op, "", "", nil, admin)
	if err != nil {
		return err
	}
	return c.adopt(op, rep.Strs(0), rep.Err())
}

// adopt makes ids (a script's roster) this client's roster.
func (c *Chat) adopt(op string, ids []string, err error) error {
	if err != nil {
		return err
	}
	r, err := c.newRoster(op, ids)
	if err != nil {
		return err
	}
	c.setRoster(r)
	return nil
}

// AdminState is one roster admin as Admins reads them.
type AdminState struct {
	ID           string
	Capacity     int
	Availability presence.Status // offline when never set or expired
	Assigned     int
}

// Admins returns the roster, sorted by ID, with each admin's capacity,
// availability and load (one read-only script).
func (c *Chat) Admins(ctx context.Context) ([]AdminState, error) {
	const op = "admins"
	rep, err := c.route(ctx, adminsOp, op, "", "", nil)
	if err != nil {
		return nil, err
	}
	return c.decodeAdmins(op, &rep)
}

// decodeAdmins decodes the admins script's reply (Admins, ReadView).
func (c *Chat) decodeAdmins(op string, rep *call.Reply) ([]AdminState, error) {
	ids, caps, av, load := rep.Strs(0), rep.Ints(1), rep.Strs(2), rep.Ints(3)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	if len(caps) != len(ids) || len(av) != len(ids) || len(load) != len(ids) {
		return nil, pkg.Fail(op, c.global[4], nil, errUnexpected)
	}
	out := make([]AdminState, len(ids))
	for i, id := range ids {
		out[i] = AdminState{ID: id, Capacity: int(caps[i]), Availability: presence.Status(av[i]), Assigned: int(load[i])}
	}
	return out, nil
}

// Reconciled counts what a Reconcile did.
type Reconciled struct {
	Expired  int // conversations dropped after the conversation TTL without activity
	Requeued int // conversations of offline or expired admins back in the backlog
	Assigned int // backlog conversations handed out
}

// Reconcile does what every routing call does first and last (one
// script): drop expired conversations, requeue the conversations of
// admins whose availability is offline or expired, and hand the backlog
// out. Availability lives in presence, whose Set is a plain SET that
// runs nothing in chat: call Reconcile after taking an admin offline, and
// run RunReconciler so that expiries are acted on while no routing call
// comes. A replay reports what was left to do (usually nothing).
func (c *Chat) Reconcile(ctx context.Context) (Reconciled, error) {
	const op = "reconcile"
	rep, err := c.route(ctx, reconcileOp, op, "", "", nil)
	if err != nil {
		return Reconciled{}, err
	}
	r := Reconciled{Expired: int(rep.Int(0)), Requeued: int(rep.Int(1)), Assigned: int(rep.Int(2))}
	return r, rep.Err()
}

// RunReconciler calls Reconcile every interval until ctx is done, passing
// failures to onError (if not nil), and returns ctx's error. interval
// must be in [10ms, 1h].
func (c *Chat) RunReconciler(ctx context.Context, every time.Duration, onError func(error)) error {
	if every < 10*time.Millisecond || every > time.Hour {
		return pkg.Invalidf("run reconciler", "interval %v outside [10ms, 1h]", every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := c.Reconcile(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}
