package sensor

import (
	"context"
	_ "embed"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

//go:embed reindex.lua
var reindexSrc string

var reindexOp = pkg.Declare("reindex", reindexSrc, []*keys.Template{genericKey, typesKey}, call.Uses(lib, call.ScoreMS, call.ToNum))

// reindexCount is the COUNT of Reindex's one SCAN: about how many keys
// one call looks at.
const reindexCount = 1000

// ReindexResult is what one Reindex call did.
type ReindexResult struct {
	// Next is the cursor of the next call; "" when the scan is complete.
	Next string
	// Scanned is how many keys of the sensor layout this call's SCAN
	// returned.
	Scanned int
	// Indexed is how many of them hold a reading within the retention,
	// now recorded in the discovery index.
	Indexed int
	// Skipped holds one error per key that was not indexed because of
	// what it holds (a key of another Redis type, a newest member that
	// is not a reading, a name that is not a type or a location): each
	// names its key and matches keys.ErrCorrupt. They do not stop the
	// scan.
	Skipped []error
}

// Reindex rebuilds the discovery index (Types, Locations) from the
// readings stored under the namespace, whoever wrote them: the sensor
// collector's own service writes its keys but not the index, so Types
// and Locations miss its data until a Reindex has seen it. It is an
// admin operation (docs/sensor.md, Discovery of data others wrote):
// start with cursor "", pass each call's Next to the next, and stop when
// Next is "".
//
// One call is bounded: one SCAN of about 1,000 keys on one node (MATCH
// the raw keys of the client's encoding: sensor:* or sensor-compact:*;
// every master in turn on a cluster), then one pipeline of one script
// per raw key found (it reads the key's newest readings within the
// retention and records each type with its newest time in
// sensor-index:types:{location}), then one pipeline recording the
// locations in sensor-index:locations: three round trips. An entry only
// moves forward, so Reindex is idempotent and safe beside live writes;
// like SCAN it sees every key that exists for the whole scan at least
// once. Keys it cannot index are counted in Skipped, not fatal. A bad
// cursor is ErrInvalid; a cluster master that left since the cursor was
// made is ErrInvalid too (start again from "").
func (c *Client) Reindex(ctx context.Context, cursor string) (ReindexResult, error) {
	const op = "reindex"
	var res ReindexResult
	addr, cur, err := parseReindexCursor(cursor)
	if err != nil {
		return res, pkg.Invalidf(op, "cursor %q: %v", clip(cursor), err)
	}
	nodes, err := scanNodes(ctx, c.run.Client())
	if err != nil {
		return res, pkg.Fail(op, "", nil, err)
	}
	i, cluster := 0, nodes[0].addr != ""
	switch {
	case cluster && cursor != "":
		i = sort.Search(len(nodes), func(i int) bool { return nodes[i].addr >= addr })
		if addr == "" || i == len(nodes) || nodes[i].addr != addr {
			return res, pkg.Invalidf(op, "cursor %q: node %q is not a master now; start again from \"\"", clip(cursor), addr)
		}
	case !cluster && addr != "":
		return res, pkg.Invalidf(op, "cursor %q names a node, and the client is not a cluster's", clip(cursor))
	}
	match := genericKey.Match(c.opt.ns, nil)
	if c.opt.compact {
		match = compactKey.Match(c.opt.ns, nil)
	}
	found, next, err := nodes[i].c.Scan(ctx, cur, match, reindexCount).Result()
	if err != nil {
		return res, pkg.Wrap(ctx, op, match, err)
	}
	switch {
	case next != 0:
		res.Next = reindexCursor(nodes[i].addr, next, cluster)
	case i+1 < len(nodes):
		res.Next = reindexCursor(nodes[i+1].addr, 0, true)
	}
	sort.Strings(found) // SCAN may return a key twice
	found = slices.Compact(found)
	res.Scanned = len(found)

	var calls []call.Call
	var locs []string
	for _, k := range found {
		cl, loc, err := c.reindexCall(op, k)
		if err != nil {
			res.Skipped = append(res.Skipped, err)
			continue
		}
		if cl.Op == nil {
			continue // not the client's to index (WithTypes, WithLocations)
		}
		calls = append(calls, cl)
		locs = append(locs, loc)
	}
	if len(calls) == 0 {
		return res, nil
	}
	reps, errs := c.run.RunMany(ctx, calls)
	newest := map[string]int64{}
	var fatal []error
	for j := range calls {
		if errs[j] != nil {
			if errors.Is(errs[j], keys.ErrCorrupt) {
				res.Skipped = append(res.Skipped, errs[j])
			} else {
				fatal = append(fatal, errs[j])
			}
			continue
		}
		pairs := reps[j].Strs(0)
		if err := reps[j].Err(); err != nil {
			fatal = append(fatal, err)
			continue
		}
		if len(pairs) > 0 {
			res.Indexed++
		}
		for p := 0; p+1 < len(pairs); p += 2 {
			ms, err := strconv.ParseInt(pairs[p+1], 10, 64)
			if err != nil {
				fatal = append(fatal, pkg.Fail(op, calls[j].Keys[0], nil, err))
				break
			}
			newest[locs[j]] = max(newest[locs[j]], ms)
		}
	}
	if len(fatal) > 0 {
		return res, errors.Join(fatal...)
	}
	touches := make([]call.Call, 0, len(newest))
	for loc, ms := range newest {
		touches = append(touches, c.touch(loc, ms))
	}
	_, errs = c.run.RunMany(ctx, touches)
	return res, errors.Join(errs...)
}

// reindexCall returns the script call that indexes raw key k and its
// location; a zero call for a key outside the client's allow-lists; an
// error naming k when k is not a reading key of the layout.
func (c *Client) reindexCall(op, k string) (call.Call, string, error) {
	var kind, typ, loc string
	ns := c.opt.ns
	if c.opt.compact {
		a, err := compactKey.Parse(ns, k)
		if err != nil {
			return call.Call{}, "", pkg.Fail(op, k, nil, keys.Corrupt(k, errors.New("not a sensor key")))
		}
		kind, typ, loc = "compact", a[0], a[1]
	} else if a, err := motionKey.Parse(ns, k); err == nil {
		kind, typ, loc = "motion", Motion, a[0]
	} else if a, err := envKey.Parse(ns, k); err == nil {
		kind, typ, loc = "env", "", a[0]
	} else if a, err := genericKey.Parse(ns, k); err == nil {
		kind, typ, loc = "list", a[0], a[1]
	} else {
		return call.Call{}, "", pkg.Fail(op, k, nil, keys.Corrupt(k, errors.New("not a sensor key")))
	}
	if !nameOK(loc, true) || (typ != "" && (!nameOK(typ, false) || typ == environmental)) {
		return call.Call{}, "", pkg.Fail(op, k, nil, keys.Corrupt(k, errors.New("the key names no sensor type and location")))
	}
	if (c.locs != nil && !c.locs[loc]) || (c.types != nil && typ != "" && !c.types[typ]) {
		return call.Call{}, "", nil
	}
	idx, err := pkg.Key(op, typesKey, ns, loc)
	if err != nil {
		return call.Call{}, "", err
	}
	return call.Call{Op: reindexOp, Keys: []string{k, idx},
		Args: []any{kind, typ, unit.MsFloor(c.opt.retention), unit.MsFloor(c.opt.maxFuture)}}, loc, nil
}

// scanNode is one node Reindex scans, by address.
type scanNode struct {
	addr string
	c    redis.Cmdable
}

// scanNodes returns the nodes that hold keys, sorted by address: every
// master of a cluster (every shard of a ring), or the one server, with
// address "".
func scanNodes(ctx context.Context, rdb redis.UniversalClient) ([]scanNode, error) {
	switch rdb.(type) {
	case *redis.ClusterClient, *redis.Ring:
	default:
		return []scanNode{{c: rdb}}, nil
	}
	var mu sync.Mutex
	var out []scanNode
	err := keys.ForEachNode(ctx, rdb, func(_ context.Context, n redis.UniversalClient) error {
		cl, ok := n.(*redis.Client)
		if !ok {
			return errors.New("sensor: a cluster node is not a *redis.Client")
		}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, scanNode{addr: cl.Options().Addr, c: cl})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("sensor: no node to scan")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out, nil
}

// A Reindex cursor is the SCAN cursor ("123"), after the node's address
// and a space on a cluster ("10.0.0.1:7001 123").
func reindexCursor(addr string, cur uint64, cluster bool) string {
	s := strconv.FormatUint(cur, 10)
	if cluster {
		return addr + " " + s
	}
	return s
}

func parseReindexCursor(s string) (addr string, cur uint64, err error) {
	if s == "" {
		return "", 0, nil
	}
	n := s
	if a, b, ok := strings.Cut(s, " "); ok {
		if a == "" {
			return "", 0, errors.New("no node address")
		}
		addr, n = a, b
	}
	cur, err = strconv.ParseUint(n, 10, 64)
	if err != nil || n == "" || n[0] == '+' {
		return "", 0, errors.New("not a Reindex cursor")
	}
	return addr, cur, nil
}
