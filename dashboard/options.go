package dashboard

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/sensor"
)

// defaultRefresh is how often the page polls when WithRefresh is not given.
const defaultRefresh = 5 * time.Second

// minRefresh is the shortest refresh interval New accepts.
const minRefresh = 500 * time.Millisecond

// Option configures a Handler. Options only record; New checks them.
type Option func(*options)

type options struct {
	clients  *keys.Clients
	client   redis.UniversalClient
	ns       keys.Namespace
	writable bool
	token    string
	refresh  time.Duration
	logger   *slog.Logger
	limiters []namedLimiter

	intervals    map[string]time.Duration
	presenceOpts []presence.Option
	chatOpts     []chat.Option
	queueOpts    []queue.Option
	sensorOpts   []sensor.Option
	memoryOpts   []aimemory.Option
	metricDefs   []metrics.Definition
	metricOpts   []metrics.Option
	cacheOpts    []cache.Option
	schemas      []keys.Schema
}

// WithSchemas sets the key patterns the schema page, the audit and
// inspect know, composed with keys.Compose (New fails with ErrInvalid
// when they collide). Give an application's own patterns here too, as a
// Schema of its own, to have them audited and shown.
//
// Default: Schemas(), every package's of the library.
func WithSchemas(schemas ...keys.Schema) Option {
	return func(o *options) { o.schemas = append([]keys.Schema{}, schemas...) }
}

// WithClients serves the databases of a layout (keys.Layout.Clients): each
// package's data is read in its area's database. The Handler does not
// close them. New requires it or WithClient, not both.
//
// Default: none.
func WithClients(cs *keys.Clients) Option { return func(o *options) { o.clients = cs } }

// WithClient serves one client: every area in its database (a
// *redis.ClusterClient is a cluster). The Handler does not close it. New
// requires it or WithClients, not both.
//
// Default: none.
func WithClient(c redis.UniversalClient) Option { return func(o *options) { o.client = c } }

// WithNamespace reads the keys under ns (prefix and hash-tag mode).
//
// Default: the zero keys.Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithWrites enables the mutating actions (requeue or delete a dead
// letter, revoke sessions, block and unblock users). They need the token
// of WithToken, which New then requires. Without it the dashboard is
// read-only and refuses every action with 403.
//
// Default: off.
func WithWrites() Option { return func(o *options) { o.writable = true } }

// WithToken requires token on every API request (the page's data and its
// actions), in the X-Redschema-Token header or a "token" form field. The
// page itself and its static assets are served without it; it holds no
// data. Without a token the API answers only requests whose Host is a
// loopback name or address (a DNS-rebinding guard).
//
// Default: none.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithRefresh sets how often the page polls; New refuses a shorter
// interval than 500ms. Each refresh of a page is one request, answered
// with one pipeline or script per object shown where the packages allow
// it.
//
// Default: 5s. Range: 500ms to no limit.
func WithRefresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithLogger logs every action and every refused request to l; New
// refuses a nil l.
//
// Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithLimiter registers an application's limiter under name: the rate
// limits page shows what it would decide for an identifier (Limiter.Peek,
// which writes nothing), and lifting a block resets the identifier with
// it. The dashboard cannot know an application's policies without it.
// Repeat it for several limiters.
//
// Default: none.
func WithLimiter(name string, l *ratelimit.Limiter) Option {
	return func(o *options) { o.limiters = append(o.limiters, namedLimiter{name: name, l: l}) }
}

// WithPresence passes the application's presence options (layout,
// profile, ...) to the presence.Inspector the presence page reads with; the
// namespace is the dashboard's.
//
// Default: none (presence's defaults).
func WithPresence(opts ...presence.Option) Option {
	return func(o *options) { o.presenceOpts = append(o.presenceOpts, opts...) }
}

// WithChat passes the application's chat options (deployment tag,
// presence options, ...) to the chat.Inspector the page reads with; the
// namespace is the dashboard's.
//
// Default: none (chat's defaults).
func WithChat(opts ...chat.Option) Option {
	return func(o *options) { o.chatOpts = append(o.chatOpts, opts...) }
}

// WithQueue passes the application's queue options to the queues the
// dashboard's actions open (requeue, delete, pause, ...): those that
// decide what a write does, such as queue.WithSeedConsumers (no wake-up
// token on a list the AI platform's Node consumers pop) or
// queue.WithMaxRetries. The namespace is the dashboard's and payloads stay
// JSON (leave queue.WithCodec out: the pages read payloads as JSON).
//
// Default: none (queue's defaults).
func WithQueue(opts ...queue.Option) Option {
	return func(o *options) { o.queueOpts = append(o.queueOpts, opts...) }
}

// WithInterval tells the locks page that the interval job named job runs
// every d (lock.Client.Interval), so that it shows the job's next run
// besides its last; the dashboard cannot know the interval otherwise.
//
// Default: none (only the last run is shown).
func WithInterval(job string, d time.Duration) Option {
	return func(o *options) {
		if o.intervals == nil {
			o.intervals = map[string]time.Duration{}
		}
		o.intervals[job] = d
	}
}

// WithSensor passes the application's sensor options (encoding,
// retention, rollups, ...) to the client the sensors page reads with; the
// namespace is the dashboard's.
//
// Default: none (sensor's defaults).
func WithSensor(opts ...sensor.Option) Option {
	return func(o *options) { o.sensorOpts = append(o.sensorOpts, opts...) }
}

// WithMemory passes the application's AI memory options (time zone,
// counter, ...) to the memory the AI memory page reads with; the
// namespace is the dashboard's.
//
// Default: none (aimemory's defaults).
func WithMemory(opts ...aimemory.Option) Option {
	return func(o *options) { o.memoryOpts = append(o.memoryOpts, opts...) }
}

// WithMetrics adds the application's metric definitions (a Recorder's
// Definitions) to those the metrics page reads; metrics.CommonMetrics
// are always read.
//
// Default: none (metrics.CommonMetrics only).
func WithMetrics(defs ...metrics.Definition) Option {
	return func(o *options) { o.metricDefs = append(o.metricDefs, defs...) }
}

// WithMetricsReader passes reader options to the metrics.Reader the
// metrics page reads with, such as metrics.WithSharedKeys while the
// home-automation backend's Node service writes the same counters (its
// endpoints then count on the page too); the namespace is the
// dashboard's.
//
// Default: none (metrics' defaults).
func WithMetricsReader(opts ...metrics.Option) Option {
	return func(o *options) { o.metricOpts = append(o.metricOpts, opts...) }
}

// WithCache passes the application's cache options to the store the
// cache page invalidates tags with; the namespace is the dashboard's.
//
// Default: none (cache's defaults).
func WithCache(opts ...cache.Option) Option {
	return func(o *options) { o.cacheOpts = append(o.cacheOpts, opts...) }
}
