package chat

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Waiting is one conversation of a priority queue (the unread queue or
// the backlog).
type Waiting struct {
	Conversation string
	Priority     Priority
	// Since is when it entered the queue (server time, ms): its age
	// orders it within its priority.
	Since time.Time
}

// Unread returns up to limit conversations of the unread queue
// (chat:{tag}:conversations:unread), most urgent first and, within a
// priority, oldest first, skipping expired conversations and members
// without a state (another writer's, such as the home-automation
// backend's ZADD: its score is not one this package reads) (one
// read-only script). limit must be in [1, 1000].
func (c *Chat) Unread(ctx context.Context, limit int) ([]Waiting, error) {
	return c.waiting(ctx, "unread", c.global[2], limit)
}

// Backlog returns up to limit conversations assigned to nobody
// (chat:{tag}:conversations:backlog), in the order they will be handed
// out: most urgent first and, within a priority, oldest first, skipping
// members without a state as Unread does.
func (c *Chat) Backlog(ctx context.Context, limit int) ([]Waiting, error) {
	return c.waiting(ctx, "backlog", c.global[3], limit)
}

func (c *Chat) waiting(ctx context.Context, op, key string, limit int) ([]Waiting, error) {
	ids, scores, err := c.list(ctx, op, key, limit, "queue")
	if err != nil {
		return nil, err
	}
	return decodeWaiting(op, key, ids, scores)
}

// decodeWaiting decodes the conversations of queue key and their scores
// (Unread, Backlog, ReadView).
func decodeWaiting(op, key string, ids, scores []string) ([]Waiting, error) {
	out := make([]Waiting, len(ids))
	for i, id := range ids {
		f, err := strconv.ParseFloat(scores[i], 64)
		p, since, ok := decodeScore(f)
		if err != nil || !ok {
			return nil, pkg.Fail(op, key, nil, keys.Corrupt(key, errBadScore))
		}
		out[i] = Waiting{Conversation: id, Priority: p, Since: since}
	}
	return out, nil
}

// Activity is one open conversation and its last activity.
type Activity struct {
	Conversation string
	At           time.Time
}

// Active returns up to limit open conversations, the most recently active
// first (chat:{tag}:conversations:active, as the home-automation
// backend's ZREVRANGE reads it, without expired ones).
func (c *Chat) Active(ctx context.Context, limit int) ([]Activity, error) {
	const op = "active"
	key := c.global[1]
	ids, scores, err := c.list(ctx, op, key, limit, "active")
	if err != nil {
		return nil, err
	}
	out := make([]Activity, len(ids))
	for i, id := range ids {
		t, err := strconv.ParseInt(scores[i], 10, 64)
		if err != nil || t < 0 {
			return nil, pkg.Fail(op, key, nil, keys.Corrupt(key, errBadTime))
		}
		out[i] = Activity{Conversation: id, At: fromMs(t)}
	}
	return out, nil
}

func (c *Chat) list(ctx context.Context, op, key string, limit int, mode string) ([]string, []string, error) {
	lc, err := c.listCall(op, key, limit, mode)
	if err != nil {
		return nil, nil, err
	}
	rep, err := c.run.Run(ctx, lc.Op, lc.Keys, lc.Args...)
	if err != nil {
		return nil, nil, err
	}
	return decodeList(op, key, &rep)
}

// listCall is list's call of the queue script, after checking limit.
func (c *Chat) listCall(op, key string, limit int, mode string) (call.Call, error) {
	if limit < 1 || limit > maxPage {
		return call.Call{}, pkg.Invalidf(op, "limit %d outside [1, %d]", limit, maxPage)
	}
	return call.Call{Op: queueOp, Keys: []string{key, c.global[1], c.global[0]}, Args: []any{unit.MsCeil(c.opt.convTTL), limit, mode}}, nil
}

// decodeList decodes the queue script's reply for key: the IDs and
// their scores.
func decodeList(op, key string, rep *call.Reply) ([]string, []string, error) {
	ids, scores := rep.Strs(0), rep.Strs(1)
	if err := rep.Err(); err != nil {
		return nil, nil, err
	}
	if len(ids) != len(scores) {
		return nil, nil, pkg.Fail(op, key, nil, errUnexpected)
	}
	return ids, scores, nil
}

// Assignments returns the IDs of the conversations assigned to admin
// (SMEMBERS admin:{tag}:{admin_id}:assignments, sharing concurrent
// calls' round trips), in no particular order. Conversations that
// expired since the last routing call may still be listed.
func (c *Chat) Assignments(ctx context.Context, admin string) ([]string, error) {
	const op = "assignments"
	q, err := c.adminKeys(op, admin)
	if err != nil {
		return nil, err
	}
	k := q[1]
	cmd := redis.NewStringSliceCmd(ctx, "smembers", k)
	err = c.run.Read(ctx, k, cmd)
	return cmd.Val(), pkg.Wrap(ctx, op, k, err)
}
