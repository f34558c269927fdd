package mqtt

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/redschema/redschema/sensor"
)

// Defaults and bounds of the options.
const (
	defaultBuffer   = 10000
	maxBuffer       = 1000000
	defaultBatch    = 500
	defaultInterval = 200 * time.Millisecond
	maxInterval     = time.Minute
	defaultQoS      = 1
)

// maxBatch is the most readings sensor's IngestBatch takes in one call.
const maxBatch = 10000

// Option configures a Collector. Options only record; New checks them.
type Option func(*options)

type options struct {
	clientID   string
	topics     []string
	qos        byte
	buffer     int
	batch      int
	interval   time.Duration
	parser     Parser
	onError    func(error)
	user, pass string
}

// WithClientID sets the MQTT client ID, 1 to 64 bytes.
//
// Default: "redschema-sensor-" and 8 random hex digits. Range: 1 to 64 bytes.
func WithClientID(id string) Option { return func(o *options) { o.clientID = id } }

// WithTopics sets the topic filters to subscribe to.
//
// Default: "automation/raw/+/+".
func WithTopics(filters ...string) Option {
	return func(o *options) { o.topics = append(o.topics, filters...) }
}

// WithQoS sets the subscription QoS.
//
// Default: 1. Range: 0 to 2.
func WithQoS(qos byte) Option { return func(o *options) { o.qos = qos } }

// WithBuffer sets how many parsed readings wait for Redis at most. When
// it is full, a new message is dropped and counted in Stats.Dropped: the
// collector never blocks the MQTT client, and never grows without bound
// while Redis is away.
//
// Default: 10000. Range: 1 to 1000000.
func WithBuffer(n int) Option { return func(o *options) { o.buffer = n } }

// WithBatch sets the largest batch (at most IngestBatch's limit) and how
// long a reading waits for a batch to fill.
//
// Default: 500 readings, 200ms. Range: 1 to 10000 readings, 1ns to 1m.
func WithBatch(size int, interval time.Duration) Option {
	return func(o *options) { o.batch, o.interval = size, interval }
}

// WithParser replaces Parse.
//
// Default: Parse.
func WithParser(p Parser) Option { return func(o *options) { o.parser = p } }

// WithErrorHandler receives what the collector skips or retries: a
// malformed message, a reading Redis refused, a batch that failed on the
// wire (it is retried), a lost connection, a failed subscription. It
// must not block.
//
// Default: none (errors are only counted).
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithCredentials sets the MQTT user name and password.
//
// Default: none.
func WithCredentials(user, password string) Option {
	return func(o *options) { o.user, o.pass = user, password }
}

// New returns a Collector that subscribes on broker ("tcp://host:1883")
// and writes to sink (a *sensor.Client). It fails with ErrInvalid on a
// bad option (a value outside the bounds its option documents, zero
// included: an option not given takes its default); it does not connect
// (Run does).
func New(broker string, sink Ingester, opts ...Option) (*Collector, error) {
	// The defaults first: an option given with a value outside its bounds
	// (WithBuffer(0)) is refused, not taken for the default.
	o := options{qos: defaultQoS, buffer: defaultBuffer, batch: defaultBatch, interval: defaultInterval}
	for _, f := range opts {
		f(&o)
	}
	const op = "new"
	if len(o.topics) == 0 {
		o.topics = []string{defaultTopic}
	}
	if o.parser == nil {
		o.parser = Parse
	}
	if o.clientID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.clientID = "redschema-sensor-" + hex.EncodeToString(b[:])
	}
	switch {
	case broker == "":
		return nil, pkg.Invalidf(op, "no broker")
	case sink == nil:
		return nil, pkg.Invalidf(op, "no sink")
	case o.qos > 2:
		return nil, pkg.Invalidf(op, "QoS %d", o.qos)
	case o.buffer < 1 || o.buffer > maxBuffer:
		return nil, pkg.Invalidf(op, "buffer %d outside [1, %d]", o.buffer, maxBuffer)
	case o.batch < 1 || o.batch > maxBatch:
		return nil, pkg.Invalidf(op, "batch %d outside [1, %d]", o.batch, maxBatch)
	case o.interval <= 0 || o.interval > maxInterval:
		return nil, pkg.Invalidf(op, "batch interval %v outside (0, %v]", o.interval, maxInterval)
	case len(o.clientID) > 64:
		return nil, pkg.Invalidf(op, "client ID of %d bytes, at most 64", len(o.clientID))
	}
	for _, t := range o.topics {
		if t == "" || strings.ContainsRune(t, 0) {
			return nil, pkg.Invalidf(op, "topic filter %q", t)
		}
	}
	return &Collector{broker: broker, sink: sink, opt: o, buf: make(chan sensor.Reading, o.buffer)}, nil
}
