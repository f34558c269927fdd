package call

import (
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redschema/redschema/keys"
)

// CheckClient returns the package's invalid-input error for op when rdb is
// nil, or when it is a go-redis client created without
// ContextTimeoutEnabled: such a client ignores context deadlines on the
// network (a call on a hung server waits for its read timeout, seconds,
// whatever the caller's deadline), which breaks every method's contract.
// Clients of other types are accepted as they are.
func (p *Pkg) CheckClient(op string, rdb redis.UniversalClient) error {
	var on bool
	switch c := rdb.(type) {
	case nil:
		return p.Invalidf(op, "nil redis client")
	case *redis.Client:
		if c == nil {
			return p.Invalidf(op, "nil redis client")
		}
		on = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		if c == nil {
			return p.Invalidf(op, "nil redis client")
		}
		on = c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		if c == nil {
			return p.Invalidf(op, "nil redis client")
		}
		on = c.Options().ContextTimeoutEnabled
	default:
		return nil
	}
	if !on {
		return p.Invalidf(op, "the redis client ignores context deadlines: create it with ContextTimeoutEnabled: true")
	}
	return nil
}

// Configure is a constructor's preamble: it applies opts over o (the
// package's defaults), skipping nil ones, then refuses a bad client
// (CheckClient) and bad options (check, with op) as op's invalid-input
// error. It returns the options to build from.
func Configure[O any, F ~func(*O)](p *Pkg, op string, rdb redis.UniversalClient, o O, opts []F, check func(*O, string) error) (O, error) {
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if err := p.CheckClient(op, rdb); err != nil {
		return o, err
	}
	return o, check(&o, op)
}

// OwnPatterns returns a function that builds, once, a registry of the
// templates that schema returns: the admin reads of a package ask it
// which of the package's own patterns owns a key they scanned. It panics
// if they collide, a programming error the package's tests catch.
func OwnPatterns(schema func() keys.Schema) func() *keys.Registry {
	return sync.OnceValue(func() *keys.Registry {
		r, err := keys.Compose(keys.Schema{Templates: schema().Templates})
		if err != nil {
			panic(err)
		}
		return r
	})
}
