package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/keys"
)

// Key names one API response: the API cache's {endpoint}, {method} and
// the parameters whose hash is {params_hash}. Keys are comparable.
type Key struct {
	Endpoint string // the endpoint or request path, e.g. "/api/v1/files/list"
	Method   string // e.g. "GET"
	Params   string // the canonical parameters (NewKey); "" for none
}

// NewKey returns the key of endpoint and method with params in canonical
// form (url.Values.Encode: sorted by name, values in their order), so that
// the same parameters in any order name the same entry.
func NewKey(endpoint, method string, params url.Values) Key {
	return Key{Endpoint: endpoint, Method: method, Params: params.Encode()}
}

// ParamsHash returns the key's {params_hash}: the first 128 bits, in hex,
// of SHA-256 over method, endpoint and parameters. Hashing the method and
// endpoint too spreads entries over cluster slots (the hash is the key's
// hash tag); a hash of the parameters alone would put every
// parameterless request in one slot.
func (k Key) ParamsHash() string {
	var buf [256]byte
	in := append(append(append(append(append(buf[:0], k.Method...), '\n'), k.Endpoint...), '\n'), k.Params...)
	sum := sha256.Sum256(in)
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(out[:])
}

// Cache is a typed read-through cache of the AI platform's API cache
// (docs/ai-platform.md): values of type T, encoded by a codec (JSON by
// default), at cache:api:{endpoint}:{method}:{params_hash}, each endpoint
// fresh for its policy's TTL. It is a Store (see Store for the guarantees) with types
// and a policy; safe for concurrent use. Close it when done.
type Cache[T any] struct {
	s      *Store
	codec  codec.Codec
	policy Policy
	// plain holds the configuration of a call without options, per
	// policy rule (the default last): built once, never modified.
	plain []*fetchConfig
}

// New returns a Cache of T over rdb. It fails with ErrInvalid on a nil
// client, a client without ContextTimeoutEnabled, or a bad option or
// policy.
func New[T any](rdb redis.UniversalClient, opts ...Option) (*Cache[T], error) {
	s, err := NewStore(rdb, APILayout(), opts...)
	if err != nil {
		return nil, err
	}
	c := &Cache[T]{s: s, codec: s.opt.codec, policy: Policy{Default: defaultTTL}}
	if c.codec == nil {
		c.codec = codec.JSON{}
	}
	if s.opt.policy != nil {
		c.policy = *s.opt.policy
	}
	if err := c.policy.check("new", s.opt.maxTTL); err != nil {
		_ = s.Close()
		return nil, err
	}
	for _, r := range append(slices.Clone(c.policy.Rules), c.policy.Rule("")) {
		cfg, err := c.configOf("new", r, nil)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		c.plain = append(c.plain, cfg)
	}
	return c, nil
}

// Store returns the byte-level Store under the Cache.
func (c *Cache[T]) Store() *Store { return c.s }

// Policy returns the Cache's policy.
func (c *Cache[T]) Policy() Policy { return c.policy }

// ref builds key's entry; an empty endpoint or method fails with
// ErrInvalid.
func (c *Cache[T]) ref(op string, key Key) (Ref, error) {
	if key.Endpoint == "" || key.Method == "" {
		return Ref{}, pkg.Invalidf(op, "key without an endpoint or method")
	}
	h := key.ParamsHash()
	v, err := pkg.Key(op, entryKey, c.s.opt.ns, key.Endpoint, key.Method, h)
	if err != nil {
		return Ref{}, err
	}
	return Ref{value: v, meta: apiMetaOf(c.s.opt.ns, v)}, nil
}

// apiMetaOf returns the meta key of the API value key v under ns: seed
// 001 names it after the value key ("cache:meta:{cache_key}"), so it is
// v with "cache:meta:" after the prefix, not a second escaping of the
// same arguments (a hit builds both keys).
func apiMetaOf(ns keys.Namespace, v string) string {
	return ns.Prefix + "cache:meta:" + v[len(ns.Prefix):]
}

// config is the call's configuration: the policy's TTL and grace for the
// key's endpoint, then opts.
func (c *Cache[T]) config(op string, key Key, opts []FetchOption) (*fetchConfig, error) {
	i := c.policy.index(key.Endpoint)
	if len(opts) == 0 {
		if i < 0 {
			i = len(c.plain) - 1
		}
		return c.plain[i], nil
	}
	return c.configOf(op, c.policy.Rule(key.Endpoint), opts)
}

func (c *Cache[T]) configOf(op string, r Rule, opts []FetchOption) (*fetchConfig, error) {
	grace := r.Grace
	if grace == 0 {
		grace = c.s.opt.grace
	}
	return c.s.config(op, r.TTL, grace, opts)
}

// Get returns key's value, loading it with load on a miss: Store.Fetch's
// flow (one round trip on a hit; one load across all processes on a
// miss; early refresh; stale serving; negative caching), with the value
// encoded by the codec. An entry that does not decode is reported to the
// error hook (an error matching keys.ErrCorrupt that names the key) and
// reloaded. A value load returns that fails to encode is the loader's
// error (not cached).
func (c *Cache[T]) Get(ctx context.Context, key Key, load func(ctx context.Context) (T, error), opts ...FetchOption) (T, error) {
	v, _, err := c.get(ctx, "get", key, load, opts)
	return v, err
}

func (c *Cache[T]) get(ctx context.Context, op string, key Key, load func(ctx context.Context) (T, error), opts []FetchOption) (T, Result, error) {
	var zero T
	if err := c.s.checkOpen(op, ""); err != nil {
		return zero, Result{}, err
	}
	if load == nil {
		return zero, Result{}, pkg.Invalidf(op, "nil loader")
	}
	ref, err := c.ref(op, key)
	if err != nil {
		return zero, Result{}, err
	}
	cfg, err := c.config(op, key, opts)
	if err != nil {
		return zero, Result{}, err
	}
	if cfg.revalidate {
		return c.decode(ctx, op, ref, cfg, c.encoder(op, load))
	}
	// The hit path builds no loader: one is made only to load or refresh.
	res, r, served, refresh, err := c.s.lookup(ctx, ref, cfg)
	if err != nil {
		return zero, Result{}, err
	}
	if refresh {
		c.s.refreshAsync(ctx, ref, cfg, c.encoder(op, load))
	}
	if served {
		var v T
		derr := codec.Decode(c.codec, ref.value, res.Value, &v)
		if derr == nil {
			return v, res, nil
		}
		c.s.corrupt(ctx, ref.value, derr)
		return c.reload(ctx, op, ref, cfg, c.encoder(op, load))
	}
	enc := c.encoder(op, load)
	res, err = c.s.resume(ctx, op, ref, cfg, enc, r, false)
	return c.decodeOr(ctx, op, ref, cfg, enc, res, err)
}

// encoder turns load into the Store's loader: its value encoded by the
// codec (a value that does not encode is the loader's error, not cached).
func (c *Cache[T]) encoder(op string, load func(ctx context.Context) (T, error)) loadFn {
	return func(ctx context.Context) ([]byte, bool, error) {
		v, err := load(ctx)
		if err != nil {
			return nil, false, err
		}
		b, err := c.codec.Marshal(v)
		if err != nil {
			return nil, false, pkg.Invalid(op, err)
		}
		return b, true, nil
	}
}

// decode fetches ref and decodes it; an entry that does not decode is
// reported and reloaded once.
func (c *Cache[T]) decode(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn) (T, Result, error) {
	res, err := c.s.fetch(ctx, op, ref, cfg, load)
	return c.decodeOr(ctx, op, ref, cfg, load, res, err)
}

// decodeOr decodes a fetch's outcome; a value that does not decode is
// reported and reloaded once.
func (c *Cache[T]) decodeOr(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn, res Result, err error) (T, Result, error) {
	var v T
	if err != nil {
		return v, res, err
	}
	derr := codec.Decode(c.codec, ref.value, res.Value, &v)
	if derr == nil {
		return v, res, nil
	}
	c.s.corrupt(ctx, ref.value, derr)
	return c.reload(ctx, op, ref, cfg, load)
}

// reload loads ref again, whatever is stored (an entry that did not
// decode), and decodes what it gets.
func (c *Cache[T]) reload(ctx context.Context, op string, ref Ref, cfg *fetchConfig, load loadFn) (T, Result, error) {
	var v T
	again := *cfg
	again.revalidate = true
	res, err := c.s.fetch(ctx, op, ref, &again, load)
	if err != nil {
		return v, res, err
	}
	if derr := codec.Decode(c.codec, ref.value, res.Value, &v); derr != nil {
		return v, res, pkg.Fail(op, ref.value, nil, derr)
	}
	return v, res, nil
}

// Set stores v at key (see Store.Set), encoded by the codec, fresh for
// the policy's TTL unless opts say otherwise.
func (c *Cache[T]) Set(ctx context.Context, key Key, v T, opts ...FetchOption) error {
	const op = "set"
	ref, err := c.ref(op, key)
	if err != nil {
		return err
	}
	cfg, err := c.config(op, key, opts)
	if err != nil {
		return err
	}
	b, err := c.codec.Marshal(v)
	if err != nil {
		return pkg.Invalid(op, err)
	}
	return c.s.set(ctx, op, ref, b, cfg)
}

// Delete removes key's entry (see Store.Delete).
func (c *Cache[T]) Delete(ctx context.Context, key Key) error {
	ref, err := c.ref("delete", key)
	if err != nil {
		return err
	}
	return c.s.Delete(ctx, ref)
}

// GetMany returns the values of keys, loading the missing ones with one
// call of load (see Store.FetchMany: one pipeline per step, cluster-aware,
// single loading across processes). The map holds the keys that exist;
// load leaves out of its map the keys that do not. Every key gets the TTL
// of the first key's endpoint unless opts say otherwise. Entries that do
// not decode are reported to the error hook and left out... after one
// reload.
func (c *Cache[T]) GetMany(ctx context.Context, keys []Key, load func(ctx context.Context, missing []Key) (map[Key]T, error), opts ...FetchOption) (map[Key]T, error) {
	const op = "get many"
	if load == nil {
		return nil, pkg.Invalidf(op, "nil loader")
	}
	if len(keys) == 0 {
		return map[Key]T{}, nil
	}
	refs := make([]Ref, len(keys))
	byRef := make(map[Ref]Key, len(keys))
	for i, k := range keys {
		r, err := c.ref(op, k)
		if err != nil {
			return nil, err
		}
		refs[i] = r
		byRef[r] = k
	}
	cfg, err := c.config(op, keys[0], opts)
	if err != nil {
		return nil, err
	}
	if err := c.s.checkOpen(op, ""); err != nil {
		return nil, err
	}
	enc := func(ctx context.Context, missing []Ref) (map[Ref][]byte, error) {
		ks := make([]Key, len(missing))
		for i, r := range missing {
			ks[i] = byRef[r]
		}
		vals, err := load(ctx, ks)
		if err != nil {
			return nil, err
		}
		out := make(map[Ref][]byte, len(vals))
		for i, r := range missing {
			v, ok := vals[ks[i]]
			if !ok {
				continue
			}
			b, err := c.codec.Marshal(v)
			if err != nil {
				return nil, pkg.Invalid(op, err)
			}
			out[r] = b
		}
		return out, nil
	}
	res, err := c.s.fetchMany(ctx, op, refs, cfg, enc)
	if err != nil {
		return nil, err
	}
	out := make(map[Key]T, len(keys))
	var redo []int
	for i, r := range res {
		if r.Status == NotFound {
			continue
		}
		var v T
		if derr := codec.Decode(c.codec, refs[i].value, r.Value, &v); derr != nil {
			c.s.corrupt(ctx, refs[i].value, derr)
			redo = append(redo, i)
			continue
		}
		out[keys[i]] = v
	}
	if len(redo) > 0 {
		again := *cfg
		again.revalidate = true
		sub := make([]Ref, len(redo))
		for j, i := range redo {
			sub[j] = refs[i]
		}
		res, err := c.s.fetchMany(ctx, op, sub, &again, enc)
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			var v T
			if r.Status == NotFound || codec.Decode(c.codec, sub[j].value, r.Value, &v) != nil {
				continue
			}
			out[keys[redo[j]]] = v
		}
	}
	return out, nil
}

// InvalidateTag deletes every entry recorded under tag (see
// Store.InvalidateTag).
func (c *Cache[T]) InvalidateTag(ctx context.Context, tag string) (int, error) {
	return c.s.InvalidateTag(ctx, tag)
}

// Stats returns the counters of the Cache's Store.
func (c *Cache[T]) Stats() Stats { return c.s.Stats() }

// Flush adds the counted hits to Redis now (see Store.Flush).
func (c *Cache[T]) Flush(ctx context.Context) error { return c.s.Flush(ctx) }

// Close closes the Cache's Store (see Store.Close).
func (c *Cache[T]) Close() error { return c.s.Close() }
