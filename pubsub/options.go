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
	// defaultBuffer is the capacity of the channels Subscribe returns
	// (WithBuffer).
	defaultBuffer = 100
	// maxBuffer bounds WithBuffer.
	maxBuffer = 1 << 20
	// defaultMaxMessage is the largest message, envelope included, that a
	// Bus publishes or decodes (WithMaxMessage).
	defaultMaxMessage = 1 << 20
	// maxMessage bounds WithMaxMessage (Redis's largest string).
	maxMessage = 512 << 20
	// maxSource bounds WithSource, in bytes.
	maxSource = 256
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
//
// Default: the zero Namespace (no prefix).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithSource sets the envelope's "source" (a service name) for everything
// the Bus publishes: valid UTF-8 of at most 256 bytes.
//
// Default: "" (no source).
func WithSource(name string) Option { return func(o *options) { o.source = name } }

// WithBuffer sets the capacity of the channels Subscribe returns. A
// subscriber that stays behind longer than go-redis's send timeout (one
// minute) loses messages: Redis pub/sub is at-most-once.
//
// Default: 100. Range: 1 to 1048576.
func WithBuffer(n int) Option { return func(o *options) { o.buf = n } }

// WithMaxMessage sets the largest message in bytes, envelope included,
// the Bus publishes (larger is ErrInvalid) or decodes (larger arrives as
// ErrMalformed).
//
// Default: 1048576 (1 MiB). Range: 1 to 536870912 (512 MiB).
func WithMaxMessage(n int) Option { return func(o *options) { o.maxMessage = n } }

// WithCodec encodes payloads with c instead of JSON. The envelope stays
// JSON; a payload that is not valid JSON is carried as a base64 JSON
// string. A nil codec fails New.
//
// Default: codec.JSON{}.
func WithCodec(c codec.Codec) Option { return func(o *options) { o.codec = c } }

// New returns a Bus over rdb. It fails with ErrInvalid for a nil client, a
// go-redis client without ContextTimeoutEnabled, or a bad option (a bad
// namespace also matches keys.ErrInvalid). It does no I/O.
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
	return options{buf: defaultBuffer, maxMessage: defaultMaxMessage, codec: codec.JSON{}}
}

// check validates the options for New.
func (o *options) check(op string) error {
	switch {
	case o.buf < 1 || o.buf > maxBuffer:
		return pkg.Invalidf(op, "buffer %d outside [1, %d]", o.buf, maxBuffer)
	case o.maxMessage < 1 || o.maxMessage > maxMessage:
		return pkg.Invalidf(op, "max message %d outside [1, %d]", o.maxMessage, maxMessage)
	case len(o.source) > maxSource || !utf8.ValidString(o.source):
		return pkg.Invalidf(op, "source %.64q: at most %d bytes of UTF-8", o.source, maxSource)
	case o.codec == nil:
		return pkg.Invalidf(op, "nil codec")
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
