package keys

import (
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
	Users      Area = "users"
)

// Layout maps areas to database numbers. Areas it does not name are in DB 0;
// a nil Layout puts everything in DB 0.
type Layout map[Area]int

// SeedLayout is the database allocation of the AI platform, one of the
// reference systems (docs/ai-platform.md in the repository): sessions 0,
// API cache 1, job queues 2, pub/sub 3, AI memory 4, rate limits 5, locks 6,
// metrics 7.
func SeedLayout() Layout {
	return Layout{Sessions: 0, Cache: 1, Queues: 2, PubSub: 3, AIMemory: 4, RateLimits: 5, Locks: 6, Metrics: 7}
}

// DB returns the database of area a.
func (l Layout) DB(a Area) int { return l[a] }

// Clients holds one client per database of a Layout. Build it with
// Layout.Clients; close it with Close.
type Clients struct {
	byDB    map[int]redis.UniversalClient
	layout  Layout
	cluster bool
}

// Clients builds one client per distinct database named by the layout from
// one set of options (opts.DB is ignored). When opts describes a cluster
// (several addresses, or IsClusterMode) there are no databases: every area
// gets the one cluster client, DB 0, and key prefixes keep areas apart.
func (l Layout) Clients(opts *redis.UniversalOptions) *Clients {
	return l.Open(len(opts.Addrs) > 1 || opts.IsClusterMode, func(db int) redis.UniversalClient {
		o := *opts
		o.DB = db
		return redis.NewUniversalClient(&o)
	})
}

// Open builds the layout's clients with open, called once per distinct
// database (0 included); on a cluster (cluster true) once, for DB 0, and
// that client serves every area.
func (l Layout) Open(cluster bool, open func(db int) redis.UniversalClient) *Clients {
	c := &Clients{byDB: map[int]redis.UniversalClient{}, layout: l, cluster: cluster}
	if cluster {
		c.byDB[0] = open(0)
		return c
	}
	dbs := map[int]bool{0: true}
	for _, db := range l {
		dbs[db] = true
	}
	for db := range dbs {
		c.byDB[db] = open(db)
	}
	return c
}

// Cluster reports whether the clients serve a cluster (every area in DB 0).
func (c *Clients) Cluster() bool { return c.cluster }

// For returns the client for area a.
func (c *Clients) For(a Area) redis.UniversalClient {
	if c.cluster {
		return c.byDB[0]
	}
	return c.byDB[c.layout.DB(a)]
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
