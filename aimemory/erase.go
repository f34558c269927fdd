package aimemory

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed delete.lua
	deleteSrc string
	//go:embed erase.lua
	eraseSrc string

	deleteOp = pkg.Declare("delete conversation", deleteSrc, append(convKeys[:4:4], indexKey))
	eraseOp  = pkg.Declare("erase user", eraseSrc, []*keys.Template{userKey, indexKey})
)

// DeleteConversation deletes conversation convID of userID (its messages,
// summary, pending evicted messages and request IDs) and takes it out of
// the user's list, in one round trip. Deleting a conversation that does
// not exist is not an error: the call is idempotent, so a resend after a
// lost reply reports the same success.
func (m *Memory) DeleteConversation(ctx context.Context, userID, convID string) error {
	const op = "delete conversation"
	c, err := m.conv(op, userID, convID)
	if err != nil {
		return err
	}
	_, err = m.run.Run(ctx, deleteOp, []string{c.keys[0], c.keys[1], c.keys[2], c.keys[3], c.indexKey}, convID)
	return err
}

// Erased is what EraseUser deleted.
type Erased struct {
	Conversations int // conversations (with their summaries and companions)
	Responses     int // cached responses scoped to the user
	RAG           int // cached RAG results scoped to the user
}

// eraseBatch is how many conversations one erase script deletes.
const eraseBatch = 100

// maxEraseRounds bounds EraseUser's batches (100,000 conversations).
const maxEraseRounds = 1000

// EraseUser deletes everything this package keeps of userID and nothing
// of any other user: every conversation of the user (with its summary,
// pending evicted messages and request IDs), the user's context, and the
// cached responses and RAG results scoped to the user (Request.User,
// Query.User).
//
// No SCAN: the user's conversations are listed in
// ai:memory:user-convs:{user_id}, which every append updates, and all of
// them share the user's hash tag, so each batch of 100 is one
// single-slot script (after one ZRANGE); the user's cached entries are
// found through their tags and deleted by package cache's InvalidateTag
// (batched, split per node on a cluster). The cost is O(the user's
// conversations and cached entries), in a few round trips per 100.
//
// An append that runs while EraseUser runs may re-create what it
// appends; erase again after stopping the user's traffic if that
// matters. Idempotent: erasing an erased user deletes nothing.
func (m *Memory) EraseUser(ctx context.Context, userID string) (Erased, error) {
	const op = "erase user"
	uk, err := pkg.Key(op, userKey, m.opt.ns, userID)
	if err != nil {
		return Erased{}, err
	}
	ik, err := pkg.Key(op, indexKey, m.opt.ns, userID)
	if err != nil {
		return Erased{}, err
	}
	var out Erased
	for round := 0; ; round++ {
		if round == maxEraseRounds {
			return out, pkg.Fail(op, ik, nil, fmt.Errorf("conversations kept coming after %d batches", maxEraseRounds))
		}
		ids, err := m.rdb.ZRange(ctx, ik, 0, eraseBatch-1).Result()
		if err != nil {
			return out, pkg.Wrap(ctx, op, ik, err)
		}
		ks := make([]string, 0, 2+4*len(ids))
		ks = append(ks, uk, ik)
		args := make([]any, len(ids))
		for i, id := range ids {
			c, err := m.conv(op, userID, id)
			if err != nil {
				return out, pkg.Fail(op, ik, nil, keys.Corrupt(ik, fmt.Errorf("member %.40q is not a conversation ID", id)))
			}
			ks = append(ks, c.keys[:]...)
			args[i] = id
		}
		rep, err := m.run.Run(ctx, eraseOp, ks, args...)
		if err != nil {
			return out, err
		}
		left := rep.Int(0)
		if err := rep.Err(); err != nil {
			return out, err
		}
		out.Conversations += len(ids)
		if left == 0 {
			break
		}
	}
	for _, t := range []struct {
		s   *cache.Store
		tag string
		n   *int
	}{{m.responses, responseTag, &out.Responses}, {m.rag, ragTag, &out.RAG}} {
		if !scopable(t.tag, userID) {
			continue // no entry can be scoped to such an ID (see fetch)
		}
		n, err := t.s.InvalidateTag(ctx, t.tag+userID)
		*t.n = n
		if err != nil {
			return out, pkg.Fail(op, "", nil, err)
		}
	}
	return out, nil
}
