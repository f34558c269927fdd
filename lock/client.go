package lock

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// Errors returned by this package. Match them with errors.Is: they are
// often wrapped or joined with a context error.
var (
	// ErrNotObtained means the lock, permit or interval run was not
	// obtained: someone else holds it, or the wait ran out.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld means a Release, Refresh or TTL found that the caller no
	// longer holds the lease: it expired, was released, or another owner
	// holds the resource now.
	ErrNotHeld = errors.New("lock: not held")
	// ErrLockLost is the cause of a Lock's Context when the lease was lost
	// (its refresh failed or its lease ran out), and the error of Refresh
	// after that moment.
	ErrLockLost = errors.New("lock: lock lost")
	// ErrInvalid marks bad input (an empty resource, a TTL <= 0 or above
	// the client's maximum, a bad option); nothing is written to Redis.
	ErrInvalid = errors.New("lock: invalid argument")
)

// Client takes leases on resources in one Redis keyspace. It is safe for
// concurrent use; create one per process and namespace.
type Client struct {
	rdb      redis.UniversalClient
	ns       keys.Namespace
	maxTTL   time.Duration
	fenceTTL time.Duration
	owner    string // label put before each owner ID, may be empty
	fenceArg any    // fenceTTL in ms, boxed once
}

// Option configures a Client.
type Option func(*Client)

// WithNamespace puts every key under ns (a prefix, and the hash-tag mode).
func WithNamespace(ns keys.Namespace) Option { return func(c *Client) { c.ns = ns } }

// WithMaxTTL sets the longest lease, permit or interval lease the client
// grants (default DefaultMaxTTL, 300s as seed 001 prescribes). Longer
// requests fail with ErrInvalid.
func WithMaxTTL(d time.Duration) Option { return func(c *Client) { c.maxTTL = d } }

// WithFenceTTL sets how long a resource's fence counter key lives after its
// last acquisition (default DefaultFenceTTL, 1h). Fencing tokens stay
// strictly increasing after the key expired as long as the server clock
// never steps back by more than this; it must be at least the max TTL.
func WithFenceTTL(d time.Duration) Option { return func(c *Client) { c.fenceTTL = d } }

// WithOwner sets a label (a host or worker name) that starts every owner ID
// this client writes, so that a lock's value says who holds it. It must not
// contain ':' or control bytes and must be at most 64 bytes.
func WithOwner(label string) Option { return func(c *Client) { c.owner = label } }

// New returns a Client over rdb. It fails with ErrInvalid (or
// keys.ErrInvalidNamespace) on a bad option; it does not contact Redis.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	c := &Client{rdb: rdb, maxTTL: DefaultMaxTTL, fenceTTL: DefaultFenceTTL}
	for _, o := range opts {
		o(c)
	}
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalid)
	}
	if err := c.ns.Validate(); err != nil {
		return nil, err
	}
	if c.maxTTL < time.Millisecond {
		return nil, fmt.Errorf("%w: max TTL %v below 1ms", ErrInvalid, c.maxTTL)
	}
	if c.fenceTTL < c.maxTTL {
		return nil, fmt.Errorf("%w: fence TTL %v below max TTL %v", ErrInvalid, c.fenceTTL, c.maxTTL)
	}
	if len(c.owner) > 64 || strings.ContainsFunc(c.owner, func(r rune) bool { return r == ':' || r < 0x20 || r == 0x7f }) {
		return nil, fmt.Errorf("%w: owner label %q", ErrInvalid, c.owner)
	}
	c.fenceArg = ms(c.fenceTTL)
	return c, nil
}

// DefaultTTL returns the registered default lease of a resource type (File
// 60s, Workflow 300s, UserSession 5s, Cache 10s), or StandardTTL (30s) for
// any other type, capped at the client's max TTL.
func (c *Client) DefaultTTL(resourceType string) time.Duration {
	d := StandardTTL
	if t, ok := resourceDefaults[resourceType]; ok {
		d = t.TTL()
	}
	return min(d, c.maxTTL)
}

// checkTTL rejects a lease outside (0, maxTTL]; leases are whole
// milliseconds.
func (c *Client) checkTTL(what string, ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > c.maxTTL {
		return fmt.Errorf("%w: %s %v outside [1ms, %v]", ErrInvalid, what, ttl, c.maxTTL)
	}
	return nil
}

// newOwner returns a fresh owner ID: the label, a dot, 24 random hex digits.
func (c *Client) newOwner() string {
	const digits = "0123456789abcdef"
	var b [12]byte
	_, _ = rand.Read(b[:])
	var sb strings.Builder
	sb.Grow(len(c.owner) + 1 + 2*len(b))
	if c.owner != "" {
		sb.WriteString(c.owner)
		sb.WriteByte('.')
	}
	for _, x := range b {
		sb.WriteByte(digits[x>>4])
		sb.WriteByte(digits[x&15])
	}
	return sb.String()
}

// ints type-checks a script's array reply of n integers without
// allocating.
func ints(v any, n int) ([4]int64, error) {
	var out [4]int64
	a, err := reply.Slice(v, n)
	if err != nil {
		return out, err
	}
	for i, e := range a {
		if out[i], err = reply.Int64(e); err != nil {
			return out, err
		}
	}
	return out, nil
}

// resource is the set of keys of one (type, id) pair, all in one slot.
type resource struct {
	typ, id    string
	lock, fenc string
}

func (c *Client) resource(resourceType, resourceID string) (resource, error) {
	lk, err := buildKey(lockKey, c.ns, resourceType, resourceID)
	if err != nil {
		return resource{}, err
	}
	fk, err := buildKey(fenceKey, c.ns, resourceType, resourceID)
	if err != nil {
		return resource{}, err
	}
	return resource{typ: resourceType, id: resourceID, lock: lk, fenc: fk}, nil
}

// buildKey renders t with args under ns; a bad segment is an error that
// matches both ErrInvalid and keys.ErrInvalidKey.
func buildKey(t *keys.Template, ns keys.Namespace, args ...string) (string, error) {
	k, err := t.Key(ns, args...)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return k, nil
}

func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }
