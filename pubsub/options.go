package pubsub

import (
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Defaults and bounds of the options.
const (
	// DefaultBuffer is the capacity of the channels Subscribe returns
	// (WithBuffer).
	DefaultBuffer = 100
	// MaxBuffer bounds WithBuffer.
	MaxBuffer = 1 << 20
	// DefaultMaxMessage is the largest message, envelope included, that a
	// Bus publishes or decodes (WithMaxMessage).
	DefaultMaxMessage = 1 << 20
	// MaxMessageLimit bounds WithMaxMessage (Redis's largest string).
	MaxMessageLimit = 512 << 20
	// MaxSource bounds WithSource, in bytes.
	MaxSource = 256
)

// Option configures a Bus. Options only record; New checks them.
type Option func(*options)

type options struct {
	ns         keys.Namespace
	source     string
	buf        int
	maxMessage int
	codec      codec.Codec
}

// WithNamespace prefixes every channel with ns.Prefix, like keys.
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithSource sets the envelope's "source" (a service name) for everything
// the Bus publishes: valid UTF-8 of at most MaxSource bytes. Empty by
// default.
func WithSource(name string) Option { return func(o *options) { o.source = name } }

// WithBuffer sets the capacity of the channels Subscribe returns (default
// DefaultBuffer, 1 to MaxBuffer). A subscriber that stays behind longer
// than go-redis's send timeout (one minute) loses messages: Redis pub/sub
// is at-most-once.
func WithBuffer(n int) Option { return func(o *options) { o.buf = n } }

// WithMaxMessage sets the largest message, envelope included, the Bus
// publishes (larger is ErrInvalid) or decodes (larger arrives as
// ErrMalformed): default DefaultMaxMessage, 1 to MaxMessageLimit bytes.
func WithMaxMessage(n int) Option { return func(o *options) { o.maxMessage = n } }

// WithCodec encodes payloads with c instead of JSON (codec.JSON). The
// envelope stays JSON; a payload that is not valid JSON is carried as a
// base64 JSON string. A nil codec fails New.
func WithCodec(c codec.Codec) Option { return func(o *options) { o.codec = c } }

// New returns a Bus over rdb. It fails with ErrInvalid for a nil client, a
// go-redis client without ContextTimeoutEnabled, or a bad option (a bad
// namespace also matches keys.ErrInvalidNamespace). It does no I/O.
func New(rdb redis.UniversalClient, opts ...Option) (*Bus, error) {
	o, err := call.Configure(pkg, "new", rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	_, isJSON := o.codec.(codec.JSON)
	return &Bus{rdb: rdb, o: o, isJSON: isJSON}, nil
}

// defaults are the options of a Bus built without any.
func defaults() options {
	return options{buf: DefaultBuffer, maxMessage: DefaultMaxMessage, codec: codec.JSON{}}
}

// check validates the options for New.
func (o *options) check(op string) error {
	switch {
	case o.buf < 1 || o.buf > MaxBuffer:
		return pkg.Invalidf(op, "buffer %d outside [1, %d]", o.buf, MaxBuffer)
	case o.maxMessage < 1 || o.maxMessage > MaxMessageLimit:
		return pkg.Invalidf(op, "max message %d outside [1, %d]", o.maxMessage, MaxMessageLimit)
	case len(o.source) > MaxSource || !utf8.ValidString(o.source):
		return pkg.Invalidf(op, "source %.64q: at most %d bytes of UTF-8", o.source, MaxSource)
	case o.codec == nil:
		return pkg.Invalidf(op, "nil codec")
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
