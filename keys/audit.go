package keys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// AuditOptions tunes Registry.Audit. The zero value audits the empty
// namespace with the defaults below.
type AuditOptions struct {
	// Namespace limits the scan to keys under its prefix.
	Namespace Namespace
	// Sample is how many keys per pattern get a MEMORY USAGE probe
	// (default 16; negative disables the probe).
	Sample int
	// ScanCount is the COUNT hint per SCAN call (default 1000).
	ScanCount int64
	// KeepUnmatched is how many unmatched keys the report lists (default 20).
	KeepUnmatched int
	// Layout, with DB, checks that every key is in its area's database:
	// a key whose pattern's areas (Registry.Areas: its own, and those
	// AlsoIn added) the layout all puts in other databases than DB counts
	// as WrongDB. Nil checks nothing.
	Layout Layout
	// DB is the database the audited client is connected to (with Layout).
	DB int
	// Largest is how many of the biggest probed keys (by MEMORY USAGE) the
	// report lists in AuditReport.Largest (default 0: none). Only keys
	// that got a memory probe take part: raise Sample to probe them all.
	Largest int
	// TopPrefixes is how many prefixes of unmatched keys the report
	// lists in AuditReport.UnmatchedPrefixes (default 10).
	TopPrefixes int
}

// maxTrackedPrefixes bounds the distinct prefixes of unmatched keys an
// audit counts (AuditReport.UnmatchedPrefixes): the keys of any prefix
// first seen after that many are counted in PrefixOverflow.
const maxTrackedPrefixes = 1000

// patternLargest is how many of its biggest probed keys PatternStats
// keeps.
const patternLargest = 3

// PatternStats is what Audit found for one pattern.
type PatternStats struct {
	Template  *Template
	Keys      int64 // keys that matched the template
	NoTTL     int64 // of those, keys without a TTL although the pattern has one
	WrongType int64 // of those, keys whose TYPE differs from the pattern's
	WrongDB   int64 // of those, keys outside their areas' databases (AuditOptions.Layout)
	Sampled   int64 // keys probed with MEMORY USAGE
	Bytes     int64 // total MEMORY USAGE of the sampled keys
	// Largest lists the pattern's 3 biggest sampled keys (by MEMORY
	// USAGE), biggest first: only the keys probed take part (Sample).
	Largest []KeySize
	wantDBs []int
}

// Active reports whether the pattern has keys or problems.
func (s PatternStats) Active() bool {
	return s.Keys > 0 || s.NoTTL > 0 || s.WrongType > 0 || s.WrongDB > 0
}

// EstBytes estimates the memory of all the pattern's keys: AvgBytes × Keys,
// exact when every key was sampled.
func (s PatternStats) EstBytes() int64 {
	if s.Sampled >= s.Keys {
		return s.Bytes
	}
	return s.AvgBytes() * s.Keys
}

// AvgBytes is the mean memory of the sampled keys, or 0.
func (s PatternStats) AvgBytes() int64 {
	if s.Sampled == 0 {
		return 0
	}
	return s.Bytes / s.Sampled
}

// AuditReport is the result of Registry.Audit, or of one database's
// audit in Registry.AuditLayout.
type AuditReport struct {
	// DB is the database audited: AuditOptions.DB for Audit, the
	// database of the Layout's clients for AuditLayout.
	DB        int
	Scanned   int64          // keys scanned under the namespace
	Patterns  []PatternStats // one per registered template, registry order
	Unmatched int64          // keys no template matched
	// UnmatchedKeys lists up to AuditOptions.KeepUnmatched of them.
	UnmatchedKeys []string
	// Largest lists the AuditOptions.Largest biggest probed keys, biggest
	// first.
	Largest []KeySize
	// Guesses lists the namespaces under which some of the unmatched
	// keys would match a pattern, most keys first: a longer prefix (keys
	// such as "ha:presence:{42}" audited without a prefix suggest "ha:")
	// or the other hash-tag setting, as Registry.Guess finds them. Only
	// the first 200 unmatched keys are examined (Examined says how many),
	// so the counts are of those.
	Guesses []NamespaceCount
	// Examined is how many unmatched keys were examined for Guesses: the
	// first 200 of them at most.
	Examined int64
	// UnmatchedPrefixes groups the unmatched keys by prefix: the
	// namespace's prefix and the key's next ':'-terminated segment
	// ("app:zentoria:" for "app:zentoria:jobs:1" under "app:"), or the
	// whole key when no ':' follows the namespace's prefix. It lists the
	// AuditOptions.TopPrefixes prefixes with the most keys, most first
	// (ties by prefix). An audit counts at most 1,000 distinct prefixes:
	// the keys of a prefix first seen after that are counted in
	// PrefixOverflow instead, so the memory is bounded and each count is
	// exact. Each is a NamespaceCount with that prefix.
	UnmatchedPrefixes []NamespaceCount
	// PrefixOverflow is how many unmatched keys had a prefix that was not
	// counted (see UnmatchedPrefixes).
	PrefixOverflow int64
}

// guessSample is how many unmatched keys an audit examines for
// AuditReport.Guesses.
const guessSample = 200

// NamespaceCount is a namespace and how many of the unmatched keys an
// audit counted under it: in AuditReport.Guesses, keys that would match
// a pattern under it; in AuditReport.UnmatchedPrefixes, keys under its
// prefix.
type NamespaceCount struct {
	Namespace Namespace
	Keys      int64
}

// byKeys sorts counts most keys first, then by prefix, then hash tags
// before none.
func byKeys(counts []NamespaceCount) {
	sort.Slice(counts, func(i, j int) bool {
		x, y := counts[i], counts[j]
		if x.Keys != y.Keys {
			return x.Keys > y.Keys
		}
		if x.Namespace.Prefix != y.Namespace.Prefix {
			return x.Namespace.Prefix < y.Namespace.Prefix
		}
		return !x.Namespace.NoHashTags && y.Namespace.NoHashTags
	})
}

// KeySize is one key and its MEMORY USAGE.
type KeySize struct {
	Key      string
	Template *Template
	Bytes    int64
}

// keepLargest inserts k into list, kept sorted biggest first and at most
// n long, and returns the list: the report's Largest and each pattern's.
func keepLargest(list []KeySize, k KeySize, n int) []KeySize {
	if n <= 0 || (len(list) == n && list[n-1].Bytes >= k.Bytes) {
		return list
	}
	i := sort.Search(len(list), func(i int) bool { return list[i].Bytes < k.Bytes })
	list = append(list, KeySize{})
	copy(list[i+1:], list[i:])
	list[i] = k
	if len(list) > n {
		list = list[:n]
	}
	return list
}

// Problems lists what the audit found wrong: keys missing a TTL, keys of the
// wrong type, keys that match no pattern. Empty means the keyspace conforms.
func (r *AuditReport) Problems() []string {
	var out []string
	for _, s := range r.Patterns {
		if s.NoTTL > 0 {
			out = append(out, fmt.Sprintf("%d %q keys have no TTL", s.NoTTL, s.Template.String()))
		}
		if s.WrongType > 0 {
			out = append(out, fmt.Sprintf("%d %q keys are not of type %s", s.WrongType, s.Template.String(), s.Template.p.Type))
		}
		if s.WrongDB > 0 {
			out = append(out, fmt.Sprintf("%d %q keys are outside DB %s", s.WrongDB, s.Template.String(), dbList(s.wantDBs, " or ")))
		}
	}
	if r.Unmatched > 0 {
		out = append(out, fmt.Sprintf("%d keys match no pattern (e.g. %q)", r.Unmatched, r.UnmatchedKeys))
	}
	return out
}

// AuditSummary is an audit's outcome as an API reports it: the keys
// scanned under a namespace, the keys per pattern (templates with keys
// only), and the problems (never nil: an empty list means the keyspace
// conforms).
type AuditSummary struct {
	Namespace string           `json:"namespace"`
	Scanned   int64            `json:"scanned"`
	Patterns  map[string]int64 `json:"patterns"` // template -> keys
	Problems  []string         `json:"problems"`
}

// Summary returns the report as an AuditSummary of the audit of ns.
func (r *AuditReport) Summary(ns Namespace) AuditSummary {
	out := AuditSummary{Namespace: ns.Prefix, Scanned: r.Scanned, Patterns: map[string]int64{}, Problems: r.Problems()}
	for _, s := range r.Patterns {
		if s.Keys > 0 {
			out.Patterns[s.Template.String()] = s.Keys
		}
	}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	return out
}

// Markdown renders the report as a table (pattern, keys, without TTL,
// wrong type, wrong DB, average bytes per key) of the patterns that have
// keys or problems.
func (r *AuditReport) Markdown() string { return r.markdown(false) }

// MarkdownAll is Markdown with a row for every pattern, empty or not.
func (r *AuditReport) MarkdownAll() string { return r.markdown(true) }

func (r *AuditReport) markdown(all bool) string {
	var b strings.Builder
	b.WriteString("| Key pattern | Keys | No TTL | Wrong type | Wrong DB | Avg bytes |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Patterns {
		if all || s.Active() {
			fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %d | %d |\n", s.Template.String(), s.Keys, s.NoTTL, s.WrongType, s.WrongDB, s.AvgBytes())
		}
	}
	fmt.Fprintf(&b, "| (unmatched) | %d | | | | |\n", r.Unmatched)
	return b.String()
}

// Audit scans the live keyspace under opt.Namespace (on a cluster, every
// master; on a Ring, every shard) with SCAN, never KEYS, and reports per
// pattern the key count, keys missing their TTL, keys of the wrong type and
// a memory sample, plus the keys that match no pattern. It is an admin
// operation: its cost grows with the keyspace, its memory does not (it
// keeps no set of the keys seen), so a key that SCAN returns twice, as it
// may when the keyspace is resized during the scan, is counted twice.
func (r *Registry) Audit(ctx context.Context, c redis.UniversalClient, opt AuditOptions) (*AuditReport, error) {
	if opt.Sample == 0 {
		opt.Sample = 16
	}
	if opt.ScanCount <= 0 {
		opt.ScanCount = 1000
	}
	if opt.KeepUnmatched <= 0 {
		opt.KeepUnmatched = 20
	}
	if opt.TopPrefixes <= 0 {
		opt.TopPrefixes = 10
	}
	a := &auditor{reg: r, opt: opt, rep: &AuditReport{DB: opt.DB}, idx: map[*Template]int{}}
	r.mu.RLock()
	for _, t := range r.ordered {
		if t.IsChannel() {
			continue
		}
		a.idx[t] = len(a.rep.Patterns)
		a.rep.Patterns = append(a.rep.Patterns, PatternStats{Template: t})
	}
	r.mu.RUnlock()
	for i := range a.rep.Patterns {
		a.rep.Patterns[i].wantDBs = r.dbs(a.rep.Patterns[i].Template, opt.Layout)
	}
	if err := ForEachNode(ctx, c, a.scanNode); err != nil {
		return nil, fmt.Errorf("keys: audit: %w", err)
	}
	for ns, n := range a.guesses {
		a.rep.Guesses = append(a.rep.Guesses, NamespaceCount{Namespace: ns, Keys: n})
	}
	for p, n := range a.prefixes {
		a.rep.UnmatchedPrefixes = append(a.rep.UnmatchedPrefixes, NamespaceCount{Namespace: Namespace{Prefix: p}, Keys: n})
	}
	byKeys(a.rep.Guesses)
	byKeys(a.rep.UnmatchedPrefixes)
	if len(a.rep.UnmatchedPrefixes) > opt.TopPrefixes {
		a.rep.UnmatchedPrefixes = a.rep.UnmatchedPrefixes[:opt.TopPrefixes]
	}
	return a.rep, nil
}

// ForEachNode calls fn once per node that holds keys: every master of a
// *redis.ClusterClient, every shard of a *redis.Ring, or c itself. Admin
// paths (audit, test clean-up) use it to SCAN a whole keyspace. It
// returns the errors of every node that failed, joined (go-redis's own
// ForEachMaster and ForEachShard keep one).
func ForEachNode(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, node redis.UniversalClient) error) error {
	var mu sync.Mutex
	var errs []error
	each := func(ctx context.Context, n *redis.Client) error {
		err := fn(ctx, n)
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		return err
	}
	var err error
	switch cc := c.(type) {
	case *redis.ClusterClient:
		err = cc.ForEachMaster(ctx, each)
	case *redis.Ring:
		err = cc.ForEachShard(ctx, each)
	default:
		return fn(ctx, c)
	}
	if len(errs) > 0 { // fn's own errors, one of which err is
		return errors.Join(errs...)
	}
	return err // the nodes could not be listed
}

type auditor struct {
	reg     *Registry
	opt     AuditOptions
	mu      sync.Mutex
	rep     *AuditReport
	idx     map[*Template]int
	guesses map[Namespace]int64 // what they matched under
	// prefixes counts unmatched keys by prefix, at most
	// maxTrackedPrefixes of them (AuditReport.UnmatchedPrefixes).
	prefixes map[string]int64
}

// countPrefix counts an unmatched key under its prefix (see
// AuditReport.UnmatchedPrefixes), or in PrefixOverflow when the prefix is
// new and maxTrackedPrefixes are already counted.
func (a *auditor) countPrefix(key string) {
	rest := key[min(len(a.opt.Namespace.Prefix), len(key)):]
	p := key
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		p = key[:len(key)-len(rest)+i+1]
	}
	if _, ok := a.prefixes[p]; !ok {
		if len(a.prefixes) >= maxTrackedPrefixes {
			a.rep.PrefixOverflow++
			return
		}
		if a.prefixes == nil {
			a.prefixes = map[string]int64{}
		}
		p = strings.Clone(p) // not the scanned batch's memory
	}
	a.prefixes[p]++
}

// maxGuessCuts is how many ':'-terminated segments a guessed prefix may
// add to the audited one.
const maxGuessCuts = 3

// Guess looks for a namespace other than ns under which key, which no
// pattern matches under ns, would match one: ns with the other hash-tag
// setting, or ns's prefix extended by one to three ':'-terminated
// segments of the key ("ha:" for "ha:presence:{42}" under the empty
// namespace), with either setting, shortest prefix first. It reports
// false when there is none, or when key is not under ns's prefix.
func (r *Registry) Guess(ns Namespace, key string) (Namespace, bool) {
	rest, ok := strings.CutPrefix(key, ns.Prefix)
	if !ok {
		return Namespace{}, false
	}
	try := []Namespace{{Prefix: ns.Prefix, NoHashTags: !ns.NoHashTags}}
	for i, cuts := 0, 0; i < len(rest) && cuts < maxGuessCuts; i++ {
		if rest[i] == ':' {
			cuts++
			p := ns.Prefix + rest[:i+1]
			try = append(try, Namespace{Prefix: p, NoHashTags: ns.NoHashTags}, Namespace{Prefix: p, NoHashTags: !ns.NoHashTags})
		}
	}
	for _, n := range try {
		if _, _, ok := r.Match(n, key); ok {
			return n, true
		}
	}
	return Namespace{}, false
}

// guess counts, for the first guessSample unmatched keys, the namespace
// each would match under (Registry.Guess).
func (a *auditor) guess(key string) {
	if a.rep.Examined >= guessSample {
		return
	}
	a.rep.Examined++
	if n, ok := a.reg.Guess(a.opt.Namespace, key); ok {
		if a.guesses == nil {
			a.guesses = map[Namespace]int64{}
		}
		a.guesses[n]++
	}
}

func (a *auditor) scanNode(ctx context.Context, node redis.UniversalClient) error {
	var cursor uint64
	for {
		batch, next, err := node.Scan(ctx, cursor, a.opt.Namespace.Match(), a.opt.ScanCount).Result()
		if err != nil {
			return err
		}
		if err := a.inspect(ctx, node, batch); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func (a *auditor) inspect(ctx context.Context, node redis.UniversalClient, batch []string) error {
	if len(batch) == 0 {
		return nil
	}
	probes := make([]probe, len(batch))
	pipe := node.Pipeline()
	a.mu.Lock()
	for i, k := range batch {
		t, _, ok := a.reg.Match(a.opt.Namespace, k)
		probes[i].t = t
		if !ok {
			continue
		}
		probes[i].typ = pipe.Type(ctx, k)
		probes[i].pttl = pipe.PTTL(ctx, k)
		st := &a.rep.Patterns[a.idx[t]]
		if a.opt.Sample > 0 && st.Sampled < int64(a.opt.Sample) {
			st.Sampled++ // reserve the slot; corrected below if the probe fails
			probes[i].mem = pipe.MemoryUsage(ctx, k)
		}
	}
	a.mu.Unlock()
	_, _ = pipe.Exec(ctx)
	// Per-command errors are read here: a failed TYPE or PTTL fails the
	// audit (its counts would be wrong), while a MEMORY USAGE the server
	// refuses only loses the memory sample.
	if err := probeErr(probes); err != nil {
		a.mu.Lock()
		for _, p := range probes {
			if p.mem != nil {
				a.rep.Patterns[a.idx[p.t]].Sampled--
			}
		}
		a.mu.Unlock()
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rep.Scanned += int64(len(batch))
	for i, p := range probes {
		if p.t == nil {
			a.rep.Unmatched++
			if len(a.rep.UnmatchedKeys) < a.opt.KeepUnmatched {
				a.rep.UnmatchedKeys = append(a.rep.UnmatchedKeys, batch[i])
			}
			a.guess(batch[i])
			a.countPrefix(batch[i])
			continue
		}
		if p.typ.Err() == redis.Nil || p.typ.Val() == "none" {
			if p.mem != nil {
				a.rep.Patterns[a.idx[p.t]].Sampled--
			}
			continue // expired between SCAN and TYPE
		}
		st := &a.rep.Patterns[a.idx[p.t]]
		st.Keys++
		if p.typ.Err() == nil && p.typ.Val() != string(p.t.p.Type) {
			st.WrongType++
		}
		if a.opt.Layout != nil && !slices.Contains(st.wantDBs, a.opt.DB) {
			st.WrongDB++
		}
		hasTTL := p.t.p.TTL > 0 || p.t.p.TTLNote != ""
		if hasTTL && p.pttl.Err() == nil && p.pttl.Val() == -1 {
			st.NoTTL++
		}
		if p.mem != nil {
			if p.mem.Err() != nil {
				st.Sampled--
			} else {
				st.Bytes += p.mem.Val()
				k := KeySize{Key: batch[i], Template: p.t, Bytes: p.mem.Val()}
				a.rep.Largest = keepLargest(a.rep.Largest, k, a.opt.Largest)
				st.Largest = keepLargest(st.Largest, k, patternLargest)
			}
		}
	}
	return nil
}

type probe struct {
	t    *Template
	typ  *redis.StatusCmd
	pttl *redis.DurationCmd
	mem  *redis.IntCmd
}

func probeErr(probes []probe) error {
	for _, p := range probes {
		if p.typ == nil {
			continue
		}
		if err := p.typ.Err(); err != nil && err != redis.Nil {
			return err
		}
		if err := p.pttl.Err(); err != nil && err != redis.Nil {
			return err
		}
	}
	return nil
}

// AuditLayout audits every database of cs (one client per database of a
// Layout, see Layout.Clients) in one run, and checks that each key sits in
// its area's database (Clients.DB). With one database (a cluster, or a
// Layout that names no area) there is no such check. opt.Layout and opt.DB
// are set per database, and each report's DB says which it is.
func (r *Registry) AuditLayout(ctx context.Context, cs *Clients, opt AuditOptions) ([]*AuditReport, error) {
	var out []*AuditReport
	var placed Layout // every registered area, in its database of cs
	if len(cs.DBs()) > 1 {
		placed = Layout{}
		for _, t := range r.Templates() {
			placed[t.p.Area] = cs.DB(t.p.Area)
		}
	}
	for _, db := range cs.DBs() {
		o := opt
		o.Layout, o.DB = placed, db
		rep, err := r.Audit(ctx, cs.byDB[db], o)
		if err != nil {
			return nil, fmt.Errorf("keys: audit DB %d: %w", db, err)
		}
		out = append(out, rep)
	}
	return out, nil
}
