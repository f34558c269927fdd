package keys

import (
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// Area is a part of the keyspace that a Layout can place in its own database.
type Area string

// The areas of the redschema packages. The AI platform's layout gives each
// of the first eight its own database (see SeedLayout).
const (
	Sessions   Area = "sessions"
	Cache      Area = "cache"
	Queues     Area = "queues"
	PubSub     Area = "pubsub"
	AIMemory   Area = "aimemory"
	RateLimits Area = "ratelimits"
	Locks      Area = "locks"
	Metrics    Area = "metrics"
	Presence   Area = "presence"
	Chat       Area = "chat"
	Sensors    Area = "sensors"
)

// Layout maps areas to database numbers. Areas it does not name are in DB 0,
// or, for the clients Layout.Clients builds, in the database its options
// select; a nil Layout names no area.
type Layout map[Area]int

// SeedLayout is the database allocation of the AI platform, one of the
// reference systems (docs/ai-platform.md in the repository): sessions 0,
// API cache 1, job queues 2, pub/sub 3, AI memory 4, rate limits 5, locks 6,
// metrics 7.
func SeedLayout() Layout {
	return Layout{Sessions: 0, Cache: 1, Queues: 2, PubSub: 3, AIMemory: 4, RateLimits: 5, Locks: 6, Metrics: 7}
}

// DB returns the database of area a: 0 when l does not name it (see
// Clients.DB for the database a set of clients uses).
func (l Layout) DB(a Area) int { return l[a] }

// Clients holds one client per database of a Layout. Build it with
// Layout.Clients; close it with Close.
type Clients struct {
	byDB    map[int]redis.UniversalClient
	layout  Layout
	def     int // the database of the areas layout does not name
	cluster bool
}

// Clients builds one client per distinct database from one set of
// options. It keeps the database opts selects (opts.DB, e.g. the 3 of
// "redis://host:6379/3"), never replaces it: that database holds every
// area the layout does not name. So a nil or empty Layout gives one
// client, on opts.DB, for every area; a Layout that names areas adds a
// client for each database it names, and those areas are there whatever
// opts.DB is. With SeedLayout and opts.DB 3, for example, sessions are in
// DB 0, locks in DB 6, and presence, chat, sensors and users (which seed
// 001 does not place) in DB 3.
//
// When opts describes a cluster (several addresses or IsClusterMode, and
// no MasterName) there are no databases: every area gets the one cluster
// client, DB 0, and key prefixes keep areas apart. Clients then refuses
// an opts.DB other than 0 instead of dropping it, as it refuses a
// negative database number in opts or the layout: the error wraps
// ErrInvalid and no client is opened.
func (l Layout) Clients(opts *redis.UniversalOptions) (*Clients, error) {
	cluster := opts.MasterName == "" && (len(opts.Addrs) > 1 || opts.IsClusterMode)
	switch {
	case opts.DB < 0:
		return nil, fmt.Errorf("%w layout: options select DB %d", ErrInvalid, opts.DB)
	case cluster && opts.DB != 0:
		return nil, fmt.Errorf("%w layout: options select DB %d, but a cluster has only DB 0", ErrInvalid, opts.DB)
	}
	for _, a := range l.areas() {
		if l[a] < 0 {
			return nil, fmt.Errorf("%w layout: area %s in DB %d", ErrInvalid, a, l[a])
		}
	}
	return l.Open(opts.DB, cluster, func(db int) redis.UniversalClient {
		o := *opts
		o.DB = db
		return redis.NewUniversalClient(&o)
	}), nil
}

// areas returns the areas l names, sorted.
func (l Layout) areas() []Area {
	out := make([]Area, 0, len(l))
	for a := range l {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Open builds the layout's clients with open, called once per distinct
// database: db, which holds the areas the layout does not name, and each
// database the layout names; on a cluster (cluster true) once, for DB 0,
// and that client serves every area. Layout.Clients is Open for one set
// of go-redis options; Open is for callers that make their own clients
// (an embedded server, a client given to them: pass its database as db).
func (l Layout) Open(db int, cluster bool, open func(db int) redis.UniversalClient) *Clients {
	c := &Clients{byDB: map[int]redis.UniversalClient{}, layout: l, def: db, cluster: cluster}
	if cluster {
		c.def = 0
		c.byDB[0] = open(0)
		return c
	}
	dbs := map[int]bool{db: true}
	for _, n := range l {
		dbs[n] = true
	}
	for n := range dbs {
		c.byDB[n] = open(n)
	}
	return c
}

// Cluster reports whether the clients serve a cluster (every area in DB 0).
func (c *Clients) Cluster() bool { return c.cluster }

// For returns the client for area a: the client of Clients.DB(a).
func (c *Clients) For(a Area) redis.UniversalClient { return c.byDB[c.DB(a)] }

// DB returns the database that holds area a: the layout's number for an
// area it names, otherwise the database the options of Layout.Clients
// selected (0 for Layout.Open); always 0 on a cluster.
func (c *Clients) DB(a Area) int {
	if c.cluster {
		return 0
	}
	if db, ok := c.layout[a]; ok {
		return db
	}
	return c.def
}

// ForDB returns the client of database db, or nil.
func (c *Clients) ForDB(db int) redis.UniversalClient { return c.byDB[db] }

// DBs returns the database numbers that have a client, ascending.
func (c *Clients) DBs() []int {
	out := make([]int, 0, len(c.byDB))
	for db := range c.byDB {
		out = append(out, db)
	}
	sort.Ints(out)
	return out
}

// Close closes every client and returns the first error.
func (c *Clients) Close() error {
	var first error
	for _, cl := range c.byDB {
		if err := cl.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
