package aimemory

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/pubsub"
)

// Memory is the AI memory of one keyspace: conversations, their windows
// and summaries, user contexts with daily token accounting, the RAG and
// response caches, and response streaming. It is safe for concurrent
// use; create one per process and namespace, and Close it.
type Memory struct {
	rdb       redis.UniversalClient
	run       *call.Runner
	opt       options
	days      *days
	rag       *cache.Store
	responses *cache.Store
	bus       *pubsub.Bus
	summaries singleflight.Group
	now       func() time.Time // the local clock of message timestamps
}

// New returns a Memory over rdb. It fails with ErrInvalid on a bad
// option, a nil client, or a go-redis client without
// ContextTimeoutEnabled (which would ignore the deadlines of every call).
// It does not contact Redis unless a cache option asks for it (a local
// tier subscribes to the cache's events).
func New(rdb redis.UniversalClient, opts ...Option) (*Memory, error) {
	const op = "new"
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	m := &Memory{rdb: rdb, run: call.NewRunner(rdb, o.lanes), opt: o, days: newDays(o.zone), now: time.Now}
	copts := append(append([]cache.Option(nil), o.cacheOpts...), cache.WithNamespace(o.ns))
	if m.rag, err = cache.NewStore(rdb, cache.Layout{Value: ragKey, Meta: ragMetaKey}, copts...); err != nil {
		return nil, pkg.Invalid(op, err)
	}
	if m.responses, err = cache.NewStore(rdb, cache.Layout{Value: responseKey, Meta: responseMetaKey}, copts...); err != nil {
		_ = m.rag.Close()
		return nil, pkg.Invalid(op, err)
	}
	m.bus = o.bus
	if m.bus == nil {
		if m.bus, err = pubsub.New(rdb, pubsub.WithNamespace(o.ns), pubsub.WithSource(o.source)); err != nil {
			_ = m.Close()
			return nil, pkg.Invalid(op, err)
		}
	}
	return m, nil
}

// Bus returns the Bus that streams publish on; subscribe to
// pubsub.TopicAIResponse() on it to receive the chunks.
func (m *Memory) Bus() *pubsub.Bus { return m.bus }

// Close flushes the caches' hit counts and stops their background work.
// Conversations need no closing. It is safe to call twice.
func (m *Memory) Close() error {
	var errs []error
	for _, s := range []*cache.Store{m.rag, m.responses} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// conv is the keys of one conversation, in the order the scripts take
// them (convKeys), and its IDs.
type conv struct {
	keys       [4]string
	user, id   string
	userKey    string
	indexKey   string
	allForUser []string // keys, then the user context and the index
}

func (m *Memory) conv(op, userID, convID string) (conv, error) {
	c := conv{user: userID, id: convID}
	for i, t := range convKeys {
		k, err := pkg.Key(op, t, m.opt.ns, userID, convID)
		if err != nil {
			return conv{}, err
		}
		c.keys[i] = k
	}
	var err error
	if c.userKey, err = pkg.Key(op, userKey, m.opt.ns, userID); err != nil {
		return conv{}, err
	}
	if c.indexKey, err = pkg.Key(op, indexKey, m.opt.ns, userID); err != nil {
		return conv{}, err
	}
	c.allForUser = []string{c.keys[0], c.keys[1], c.keys[2], c.keys[3], c.userKey, c.indexKey}
	return c, nil
}

// newID returns a random request ID (24 hex digits), made before the
// first send so that a resend carries the same one.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
