package lock

import (
	"crypto/rand"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// Client takes leases on resources in one Redis keyspace. It is safe for
// concurrent use; create one per process and namespace.
type Client struct {
	run      *call.Runner
	opt      options
	fenceArg any              // fence key keep in ms (fenceKeep), boxed once
	now      func() time.Time // the local clock of lease deadlines; tests move it with a simulated server clock
	lastMS   atomic.Pointer[boxedMS]
}

// boxedMS is a duration in whole ms (see ms), boxed as a script argument.
type boxedMS struct {
	d time.Duration
	v any
}

// msArg returns unit.MsCeil(d) boxed as a script argument, reusing the
// box of the last duration asked for: callers mostly repeat one lease,
// and a box per call is an allocation per call.
func (c *Client) msArg(d time.Duration) any {
	if b := c.lastMS.Load(); b != nil && b.d == d {
		return b.v
	}
	b := &boxedMS{d: d, v: unit.MsCeil(d)}
	c.lastMS.Store(b)
	return b.v
}

// DefaultTTL returns the registered default lease of a resource type (File
// 60s, Workflow 300s, UserSession 5s, Cache 10s), or StandardTTL (30s) for
// any other type, capped at the client's max TTL.
func (c *Client) DefaultTTL(resourceType string) time.Duration {
	d := StandardTTL
	if t, ok := resourceDefaults[resourceType]; ok {
		d = t.TTL()
	}
	return min(d, c.opt.maxTTL)
}

// checkTTL rejects a lease outside [1ms, maxTTL]; leases go to the
// server in whole milliseconds, rounded up (see ms).
func (c *Client) checkTTL(op, what string, ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > c.opt.maxTTL {
		return pkg.Invalidf(op, "%s %v outside [1ms, %v]", what, ttl, c.opt.maxTTL)
	}
	return nil
}

// newOwner returns a fresh owner ID: the label, a dot, 24 random hex digits.
func (c *Client) newOwner() string {
	const digits = "0123456789abcdef"
	var b [12]byte
	_, _ = rand.Read(b[:])
	var sb strings.Builder
	sb.Grow(len(c.opt.owner) + 1 + 2*len(b))
	if c.opt.owner != "" {
		sb.WriteString(c.opt.owner)
		sb.WriteByte('.')
	}
	for _, x := range b {
		sb.WriteByte(digits[x>>4])
		sb.WriteByte(digits[x&15])
	}
	return sb.String()
}

// resource is the set of keys of one (type, id) pair, all in one slot.
type resource struct {
	lock, fenc string
	rel        string // the release channel, with WithWakeups (multi-locks)
}

func (c *Client) resource(op, resourceType, resourceID string) (resource, error) {
	lk, err := pkg.Key(op, lockKey, c.opt.ns, resourceType, resourceID)
	if err != nil {
		return resource{}, err
	}
	fk, err := pkg.Key(op, fenceKey, c.opt.ns, resourceType, resourceID)
	if err != nil {
		return resource{}, err
	}
	return resource{lock: lk, fenc: fk}, nil
}
