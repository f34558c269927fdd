package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// node is one server that holds keys: a master of a cluster, a shard of
// a ring, or the one server, in one database.
type node struct {
	db   int
	addr string
	c    redis.UniversalClient
}

// addrOf is a node client's address, or "" when it has none to tell.
func addrOf(c redis.UniversalClient) string {
	if o, ok := c.(interface{ Options() *redis.Options }); ok {
		return o.Options().Addr
	}
	return ""
}

// nodes lists the nodes of every database (keys.ForEachNode), ordered by
// database then address, so that an index into the list names the same
// node from one request to the next while the topology holds.
func (h *Handler) nodes(ctx context.Context) ([]node, error) {
	var out []node
	for _, db := range h.cs.DBs() {
		var mu sync.Mutex // a cluster's masters are visited at once
		var ns []node
		err := keys.ForEachNode(ctx, h.cs.ForDB(db), func(_ context.Context, c redis.UniversalClient) error {
			mu.Lock()
			ns = append(ns, node{db: db, addr: addrOf(c), c: c})
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Slice(ns, func(i, j int) bool { return ns[i].addr < ns[j].addr })
		out = append(out, ns...)
	}
	return out, nil
}

// --- /api/server --------------------------------------------------------

// slowlogLen is how many SLOWLOG entries the server page reads per node.
const slowlogLen = 20

// serverNode is what the server page shows of one node: INFO and
// SLOWLOG.
type serverNode struct {
	Addr              string           `json:"addr"`
	Error             string           `json:"error,omitempty"`
	Version           string           `json:"version"`
	Role              string           `json:"role"`
	UptimeS           int64            `json:"uptime_s"`
	ConnectedReplicas int64            `json:"connected_replicas"`
	MasterLinkStatus  string           `json:"master_link_status,omitempty"`
	UsedMemory        int64            `json:"used_memory"`
	UsedMemoryRSS     int64            `json:"used_memory_rss"`
	MaxMemory         int64            `json:"maxmemory"`
	MaxMemoryPolicy   string           `json:"maxmemory_policy"`
	FragRatio         float64          `json:"mem_fragmentation_ratio"`
	ConnectedClients  int64            `json:"connected_clients"`
	BlockedClients    int64            `json:"blocked_clients"`
	OpsPerSec         int64            `json:"ops_per_sec"`
	KeyspaceHits      int64            `json:"keyspace_hits"`
	KeyspaceMisses    int64            `json:"keyspace_misses"`
	HitRate           float64          `json:"hit_rate"`
	EvictedKeys       int64            `json:"evicted_keys"`
	ExpiredKeys       int64            `json:"expired_keys"`
	DBKeys            map[string]int64 `json:"db_keys"`
	SlowlogError      string           `json:"slowlog_error,omitempty"`
	Slowlog           []slowEntry      `json:"slowlog"`
}

// slowEntry is one SLOWLOG entry as the page may see it: the command
// name, its key (through shownKey) and how many arguments it had; never
// another argument, which can hold a secret (AUTH, CONFIG SET, a
// script's ARGV).
type slowEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	DurationUs int64     `json:"duration_us"`
	Command    string    `json:"command"`
	Key        string    `json:"key,omitempty"`
	Args       int       `json:"args"`
}

// serverInfo answers GET /api/server: per node, INFO (server, clients,
// memory, stats, replication, keyspace) and SLOWLOG GET 20 in one
// pipeline. The databases of a layout share their servers: each server
// is read once. A node that fails is reported in its row.
func (h *Handler) serverInfo(r *http.Request) (any, error) {
	ctx := r.Context()
	all, err := h.nodes(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ns []node
	for _, n := range all {
		if n.addr != "" && seen[n.addr] {
			continue
		}
		seen[n.addr] = true
		ns = append(ns, n)
	}
	out := make([]serverNode, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = h.readServer(ctx, n)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return map[string]any{"nodes": out}, nil
}

// readServer reads one node's INFO and SLOWLOG in one pipeline.
func (h *Handler) readServer(ctx context.Context, n node) serverNode {
	pipe := n.c.Pipeline()
	info := pipe.Info(ctx, "server", "clients", "memory", "stats", "replication", "keyspace")
	slow := pipe.SlowLogGet(ctx, slowlogLen)
	_, _ = pipe.Exec(ctx) // each command's error is read below
	out := serverNode{Addr: n.addr, DBKeys: map[string]int64{}, Slowlog: []slowEntry{}}
	if err := info.Err(); err != nil {
		out.Error = "INFO: " + err.Error()
	} else {
		parseInfo(info.Val(), &out)
	}
	if err := slow.Err(); err != nil {
		out.SlowlogError = "SLOWLOG: " + err.Error()
	} else {
		for _, s := range slow.Val() {
			out.Slowlog = append(out.Slowlog, h.slowEntry(s))
		}
	}
	return out
}

// parseInfo reads the fields the page shows from INFO's text.
func parseInfo(text string, out *serverNode) {
	f := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "db") {
			if _, err := strconv.Atoi(k[2:]); err == nil {
				for kv := range strings.SplitSeq(v, ",") {
					if n, ok := strings.CutPrefix(kv, "keys="); ok {
						out.DBKeys[k], _ = strconv.ParseInt(n, 10, 64)
					}
				}
				continue
			}
		}
		f[k] = v
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(f[k], 10, 64); return n }
	out.Version = f["redis_version"]
	out.Role = f["role"]
	out.UptimeS = num("uptime_in_seconds")
	out.ConnectedReplicas = num("connected_slaves")
	out.MasterLinkStatus = f["master_link_status"]
	out.UsedMemory = num("used_memory")
	out.UsedMemoryRSS = num("used_memory_rss")
	out.MaxMemory = num("maxmemory")
	out.MaxMemoryPolicy = f["maxmemory_policy"]
	out.FragRatio, _ = strconv.ParseFloat(f["mem_fragmentation_ratio"], 64)
	out.ConnectedClients = num("connected_clients")
	out.BlockedClients = num("blocked_clients")
	out.OpsPerSec = num("instantaneous_ops_per_sec")
	out.KeyspaceHits = num("keyspace_hits")
	out.KeyspaceMisses = num("keyspace_misses")
	if t := out.KeyspaceHits + out.KeyspaceMisses; t > 0 {
		out.HitRate = float64(out.KeyspaceHits) / float64(t)
	}
	out.EvictedKeys = num("evicted_keys")
	out.ExpiredKeys = num("expired_keys")
}

// moreArgs is how SLOWLOG ends the argument list of a command it cut at
// 32 arguments.
var moreArgs = regexp.MustCompile(`^\.\.\. \((\d+) more arguments\)$`)

// slowEntry turns a SLOWLOG entry into what the page may see.
func (h *Handler) slowEntry(s redis.SlowLog) slowEntry {
	e := slowEntry{ID: s.ID, At: s.Time.UTC(), DurationUs: s.Duration.Microseconds()}
	if len(s.Args) == 0 {
		return e
	}
	e.Command = strings.ToLower(s.Args[0])
	e.Args = len(s.Args) - 1
	if m := moreArgs.FindStringSubmatch(s.Args[len(s.Args)-1]); m != nil {
		more, _ := strconv.Atoi(m[1])
		e.Args += more - 1
	}
	if i := slowKeyIndex(s.Args); i > 0 && i < len(s.Args) {
		k := s.Args[i]
		switch {
		case strings.HasSuffix(k, " more bytes)"): // cut at 128 bytes: it would match no pattern
			e.Key = "(a key cut by SLOWLOG)"
		case moreArgs.MatchString(k):
		default:
			e.Key = h.slowKey(k)
		}
	}
	return e
}

// slowKey is a SLOWLOG key as the page may see it. The slow log is the
// whole server's: a key outside the dashboard's prefix belongs to
// another application and is not shown; a key under it that matches a
// pattern only under a longer prefix (keys.Registry.Guess, an
// application nested in the namespace) has its secrets replaced as under
// that prefix.
func (h *Handler) slowKey(k string) string {
	if !strings.HasPrefix(k, h.opt.ns.Prefix) {
		return "(a key outside " + h.opt.ns.Prefix + ")"
	}
	return h.shownKey(k)
}

// firstKeyAt is where the first key of a command that has one is, by
// command: 1 for most, 2 after a subcommand, 3 for scripts and
// functions (after the script and the key count). A command not listed
// shows no key: its arguments may be secrets (AUTH, CONFIG SET, HELLO,
// MIGRATE).
var firstKeyAt = func() map[string]int {
	m := map[string]int{}
	for _, c := range strings.Fields(`get set setex psetex setnx getset getdel getex append strlen incr incrby
		incrbyfloat decr decrby mget mset msetnx del unlink exists expire pexpire expireat pexpireat persist
		ttl pttl expiretime pexpiretime type dump restore rename renamenx copy touch sort sort_ro watch
		getrange setrange setbit getbit bitcount bitpos bitfield bitfield_ro
		hset hget hmget hmset hdel hgetall hkeys hvals hlen hexists hincrby hincrbyfloat hscan hsetnx hstrlen
		hrandfield hexpire hpexpire hexpireat hpexpireat httl hpttl hpersist hgetdel hgetex hsetex
		lpush rpush lpushx rpushx lpop rpop lrange llen lindex lset lrem ltrim linsert lpos lmove rpoplpush
		blpop brpop blmove brpoplpush lmpop
		sadd srem smembers sismember smismember scard spop srandmember sscan sinter sunion sdiff
		sinterstore sunionstore sdiffstore smove sintercard
		zadd zrem zrange zrangebyscore zrevrange zrevrangebyscore zrangebylex zrevrangebylex zcard zscore
		zmscore zincrby zrank zrevrank zcount zlexcount zremrangebyscore zremrangebyrank zremrangebylex
		zpopmin zpopmax bzpopmin bzpopmax zscan zrangestore zunionstore zinterstore zdiffstore zrandmember
		xadd xrange xrevrange xlen xtrim xdel xack xclaim xautoclaim xpending xsetid
		pfadd pfcount pfmerge geoadd geosearch geosearchstore geodist geopos geohash georadius
		georadiusbymember`) {
		m[c] = 1
	}
	for _, c := range []string{"object", "memory", "xinfo", "xgroup"} {
		m[c] = 2
	}
	for _, c := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		m[c] = 3
	}
	return m
}()

// slowKeyIndex is the index in args of the command's first key, or 0.
func slowKeyIndex(args []string) int {
	i := firstKeyAt[strings.ToLower(args[0])]
	switch i {
	case 2:
		// OBJECT ENCODING key, MEMORY USAGE key, XINFO STREAM key, XGROUP CREATE key.
		if len(args) < 3 {
			return 0
		}
		sub := strings.ToLower(args[1])
		if sub == "help" || sub == "stats" || sub == "doctor" || sub == "malloc-stats" || sub == "purge" {
			return 0
		}
	case 3:
		if len(args) < 4 {
			return 0
		}
		if n, err := strconv.Atoi(args[2]); err != nil || n < 1 {
			return 0
		}
	}
	return i
}

// --- /api/keys ----------------------------------------------------------

// The key browser's page sizes.
const (
	keysDefault = 100
	keysMax     = 500
	// keysScans bounds the SCAN calls of one page: a MATCH that few keys
	// meet returns a short page (and its cursor) rather than scanning the
	// whole keyspace in one request.
	keysScans = 64
	// keysScanCount is the COUNT of each SCAN (or the page's count, if
	// larger): a sparse MATCH then still fills a page in a few calls.
	keysScanCount = 1000
	// maxGlob bounds the pattern's length.
	maxGlob = 512
)

// keyRow is one key of the key browser.
type keyRow struct {
	Key      string `json:"key"`
	Redacted bool   `json:"redacted,omitempty"` // a secret in the key was replaced (Key is not the key)
	DB       int    `json:"db"`
	Owner    string `json:"owner,omitempty"`
	Pattern  string `json:"pattern,omitempty"`
	Type     string `json:"type"`
	TTLMs    int64  `json:"ttl_ms"` // -1: no TTL, -2: gone since the scan
}

// keysCursor is where a browse resumes: node index, that node's SCAN
// cursor, and, when a SCAN reply was larger than the page's room, the
// cursor that reply returned and the HMAC of the last key given of it
// (its keys are given in HMAC order, so the cursor never holds a key).
type keysCursor struct {
	node  int
	scan  uint64
	end   uint64
	after string // hex HMAC, "" when not inside a reply
}

func (c keysCursor) String() string {
	s := fmt.Sprintf("%d.%d.%d.%s", c.node, c.scan, c.end, c.after)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

var hexMAC = regexp.MustCompile(`^[0-9a-f]{24}$`)

func parseKeysCursor(s string, nodes int) (keysCursor, error) {
	if s == "" {
		return keysCursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return keysCursor{}, badRequest("bad cursor")
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 4 {
		return keysCursor{}, badRequest("bad cursor")
	}
	var c keysCursor
	n, err1 := strconv.Atoi(parts[0])
	scan, err2 := strconv.ParseUint(parts[1], 10, 64)
	end, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || (parts[3] != "" && !hexMAC.MatchString(parts[3])) {
		return keysCursor{}, badRequest("bad cursor")
	}
	if n >= nodes {
		return keysCursor{}, badRequest("cursor names node %d of %d: the topology changed, start again", n, nodes)
	}
	c.node, c.scan, c.end, c.after = n, scan, end, parts[3]
	return c, nil
}

// checkGlob refuses a pattern Redis would read differently from what it
// looks like: an unclosed '[', a trailing backslash, a control byte.
func checkGlob(g string) error {
	if len(g) > maxGlob {
		return badRequest("match is longer than %d bytes", maxGlob)
	}
	in := false
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c < 0x20 || c == 0x7f:
			return badRequest("match contains the control byte %q", c)
		case c == '\\':
			if i == len(g)-1 {
				return badRequest("match ends with a lone backslash")
			}
			i++
		case c == '[' && !in:
			in = true
		case c == ']' && in:
			in = false
		}
	}
	if in {
		return badRequest("match has an unclosed '['")
	}
	return nil
}

// keyMAC orders the keys of one SCAN reply without putting a key in the
// cursor.
func (h *Handler) keyMAC(key string) string {
	m := hmac.New(sha256.New, h.refKey)
	m.Write([]byte("keys-cursor\x00"))
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:12])
}

// browseKeys answers GET /api/keys?match=&cursor=&count=: a page of the
// keys under the namespace that match the glob (relative to the prefix),
// SCANned node after node, each with its pattern, TYPE and PTTL (one
// pipeline per node the page touched). cursor is "" when the browse is
// done. A key present for the whole browse is listed at least once (a
// SCAN guarantee, kept across page boundaries).
func (h *Handler) browseKeys(r *http.Request) (any, error) {
	q := r.URL.Query()
	glob := q.Get("match")
	if glob == "" {
		glob = "*"
	}
	if err := checkGlob(glob); err != nil {
		return nil, err
	}
	count := keysDefault
	if s := q.Get("count"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, badRequest("count must be a positive number")
		}
		count = min(n, keysMax)
	}
	ctx := r.Context()
	nodes, err := h.nodes(ctx)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no node to scan")
	}
	cur, err := parseKeysCursor(q.Get("cursor"), len(nodes))
	if err != nil {
		return nil, err
	}
	match := strings.TrimSuffix(h.opt.ns.Match(), "*") + glob
	found := map[int][]string{} // by node index
	n, done := 0, false
	for scans := 0; n < count && scans < keysScans; scans++ {
		nd := nodes[cur.node]
		batch, next, err := nd.c.Scan(ctx, cur.scan, match, int64(max(count, keysScanCount))).Result()
		if err != nil {
			return nil, err
		}
		if cur.after != "" && next == cur.end {
			// The reply this page resumes inside: what was not given yet.
			rest := batch[:0]
			for _, k := range batch {
				if h.keyMAC(k) > cur.after {
					rest = append(rest, k)
				}
			}
			batch = rest
		} // else the reply changed with the keyspace: give all of it again
		cur.after = ""
		if room := count - n; len(batch) > room {
			macs := make(map[string]string, len(batch))
			for _, k := range batch {
				macs[k] = h.keyMAC(k)
			}
			sort.Slice(batch, func(i, j int) bool { return macs[batch[i]] < macs[batch[j]] })
			batch = batch[:room]
			cur.end, cur.after = next, macs[batch[room-1]]
			found[cur.node] = append(found[cur.node], batch...)
			n += room
			break
		}
		found[cur.node] = append(found[cur.node], batch...)
		n += len(batch)
		cur.scan, cur.end = next, 0
		if next == 0 {
			cur.node++
			if cur.node == len(nodes) {
				done = true
				break
			}
		}
	}
	rows := make([]keyRow, 0, n)
	for i, ks := range found {
		if len(ks) == 0 {
			continue
		}
		got, err := h.describeKeys(ctx, nodes[i], ks)
		if err != nil {
			return nil, err
		}
		rows = append(rows, got...)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].DB != rows[j].DB {
			return rows[i].DB < rows[j].DB
		}
		return rows[i].Key < rows[j].Key
	})
	next := ""
	if !done {
		next = cur.String()
	}
	return map[string]any{"prefix": h.opt.ns.Prefix, "match": glob, "count": count, "keys": rows, "cursor": next}, nil
}

// describeKeys reads TYPE and PTTL of ks on node n in one pipeline.
func (h *Handler) describeKeys(ctx context.Context, n node, ks []string) ([]keyRow, error) {
	pipe := n.c.Pipeline()
	types := make([]*redis.StatusCmd, len(ks))
	ttls := make([]*redis.DurationCmd, len(ks))
	for i, k := range ks {
		types[i] = pipe.Type(ctx, k)
		ttls[i] = pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]keyRow, len(ks))
	for i, k := range ks {
		row := keyRow{Key: k, DB: n.db, Type: types[i].Val(), TTLMs: -1}
		if t, _, ok := h.reg.Match(h.opt.ns, k); ok {
			row.Owner, row.Pattern = t.Pattern().Owner, t.Display(h.opt.ns)
		}
		row.Key = h.shownKey(k)
		row.Redacted = row.Key != k
		switch d := ttls[i].Val(); {
		case d >= 0:
			row.TTLMs = d.Milliseconds()
		case d == -2:
			row.TTLMs = -2
		}
		out[i] = row
	}
	return out, nil
}
