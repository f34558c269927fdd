package dashboard

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/sensor"
	"github.com/redschema/redschema/session"
)

// Schemas returns the Schema of every package of the library that
// declares key patterns: what the dashboard knows unless WithSchemas says
// otherwise, and what cmd/redschema audits and inspects.
func Schemas() []keys.Schema {
	return []keys.Schema{aimemory.Schema(), cache.Schema(), chat.Schema(), lock.Schema(),
		metrics.Schema(), presence.Schema(), pubsub.Schema(), queue.Schema(),
		ratelimit.Schema(), sensor.Schema(), session.Schema()}
}

// patternRow is one registered pattern with what the audit found.
type patternRow struct {
	Pattern   string `json:"pattern"`
	Owner     string `json:"owner"`
	Area      string `json:"area"`
	Type      string `json:"type"`
	TTL       string `json:"ttl"`
	Purpose   string `json:"purpose"`
	Keys      int64  `json:"keys"`
	Bytes     int64  `json:"bytes"`
	Estimated bool   `json:"estimated"`
	NoTTL     int64  `json:"no_ttl"`
	WrongType int64  `json:"wrong_type"`
	WrongDB   int64  `json:"wrong_db"`
	// Largest are the pattern's biggest keys among those probed with
	// MEMORY USAGE (keys.PatternStats.Largest), biggest first.
	Largest []sizeRow `json:"largest,omitempty"`
}

// dbSchema is the audit of one database.
type dbSchema struct {
	DB            int          `json:"db"`
	Scanned       int64        `json:"scanned"`
	Bytes         int64        `json:"bytes"`
	Patterns      []patternRow `json:"patterns"`
	Unmatched     int64        `json:"unmatched"`
	UnmatchedKeys []string     `json:"unmatched_keys"`
	// Guesses are the prefixes (and hash-tag settings) under which some
	// of the keys matching no pattern would match one (keys.AuditReport.
	// Guesses): the page offers them as "redschema serve -prefix ...".
	Guesses []guessRow `json:"guesses"`
	// Prefixes groups the keys matching no pattern by prefix, most keys
	// first (keys.AuditReport.UnmatchedPrefixes); PrefixesOther counts
	// those whose prefix was not tracked.
	Prefixes      []prefixRow `json:"prefixes"`
	PrefixesOther int64       `json:"prefixes_other"`
	Problems      []string    `json:"problems"`
}

// prefixRow is a prefix of keys matching no pattern, and how many.
type prefixRow struct {
	Prefix string `json:"prefix"`
	Keys   int64  `json:"keys"`
}

// sizeRow is one of a pattern's biggest probed keys.
type sizeRow struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
}

// guessRow is a namespace under which Keys of the unmatched keys the
// audit examined (the first 200) would match a pattern.
type guessRow struct {
	Prefix     string `json:"prefix"`
	NoHashTags bool   `json:"no_hash_tags"`
	Keys       int64  `json:"keys"`
}

type schemaReply struct {
	At  time.Time  `json:"at"`
	DBs []dbSchema `json:"dbs"`
}

// schema answers the schema page from the last audit of every database
// (scanSchema), reused for schemaReuse (or the refresh interval, if
// longer): several open pages, or a short refresh, do not rescan the
// keyspace. Concurrent requests share one scan in flight. The scan runs
// apart from the request, bounded by scanLimit: on a keyspace too large
// to scan within the request's deadline, the request answers with the
// previous result (its "at" says when) or a 504 saying the scan goes
// on, and a later refresh shows the result.
func (h *Handler) schema(r *http.Request) (any, error) {
	h.mu.Lock()
	cached, at := h.schemaCache, h.schemaAt
	h.mu.Unlock()
	if cached != nil && time.Since(at) < max(schemaReuse, h.opt.refresh) {
		return cached, nil
	}
	done := h.scans.DoChan("schema", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), scanLimit)
		defer cancel()
		return h.scanSchema(ctx)
	})
	select {
	case res := <-done:
		return res.Val, res.Err
	case <-r.Context().Done():
		if cached != nil {
			return cached, nil
		}
		return nil, &httpError{http.StatusGatewayTimeout, "the schema scan takes longer than a request may (a large keyspace): it goes on, and a later refresh shows it"}
	}
}

// scanLimit bounds one schema scan (SCAN of every master, MEMORY USAGE of
// a sample per pattern).
const scanLimit = 2 * time.Minute

// scanSchema audits every database (keys.Registry.AuditLayout) and lists
// every pattern, those with keys or problems first; it keeps the result
// for schema.
func (h *Handler) scanSchema(ctx context.Context) (*schemaReply, error) {
	reps, err := h.reg.AuditLayout(ctx, h.cs, keys.AuditOptions{Namespace: h.opt.ns, KeepUnmatched: 50})
	if err != nil {
		return nil, err
	}
	out := schemaReply{At: time.Now().UTC()}
	for _, rep := range reps {
		d := dbSchema{DB: rep.DB, Scanned: rep.Scanned, Unmatched: rep.Unmatched,
			UnmatchedKeys: rep.UnmatchedKeys, Problems: rep.Problems()}
		d.Prefixes, d.PrefixesOther = make([]prefixRow, len(rep.UnmatchedPrefixes)), rep.PrefixOverflow
		for i, p := range rep.UnmatchedPrefixes {
			d.Prefixes[i] = prefixRow{Prefix: p.Namespace.Prefix, Keys: p.Keys}
		}
		d.Guesses = make([]guessRow, len(rep.Guesses))
		for i, g := range rep.Guesses {
			d.Guesses[i] = guessRow{Prefix: g.Namespace.Prefix, NoHashTags: g.Namespace.NoHashTags, Keys: g.Keys}
		}
		d.UnmatchedKeys = make([]string, len(rep.UnmatchedKeys))
		for i, k := range rep.UnmatchedKeys {
			d.UnmatchedKeys[i] = h.shownKey(k)
		}
		if d.Problems == nil {
			d.Problems = []string{}
		}
		for _, s := range rep.Patterns {
			t := s.Template
			if t.IsChannel() {
				continue
			}
			p := t.Pattern()
			row := patternRow{Pattern: t.Display(h.opt.ns), Owner: p.Owner, Area: string(p.Area), Type: string(p.Type),
				TTL: t.TTLText(), Purpose: p.Purpose, Keys: s.Keys, Bytes: s.EstBytes(), Estimated: s.Sampled < s.Keys,
				NoTTL: s.NoTTL, WrongType: s.WrongType, WrongDB: s.WrongDB}
			for _, k := range s.Largest {
				row.Largest = append(row.Largest, sizeRow{Key: h.shownKey(k.Key), Bytes: k.Bytes})
			}
			d.Bytes += row.Bytes
			d.Patterns = append(d.Patterns, row)
		}
		sort.SliceStable(d.Patterns, func(i, j int) bool {
			a, b := d.Patterns[i], d.Patterns[j]
			if (a.Keys > 0) != (b.Keys > 0) {
				return a.Keys > 0
			}
			if a.Owner != b.Owner {
				return a.Owner < b.Owner
			}
			return a.Pattern < b.Pattern
		})
		out.DBs = append(out.DBs, d)
	}
	h.mu.Lock()
	h.schemaCache, h.schemaAt = &out, time.Now()
	h.mu.Unlock()
	return &out, nil
}

// schemaReuse is how long the schema page's scan is reused.
const schemaReuse = 15 * time.Second

// inspectReply is one key decoded by its owning package.
type inspectReply struct {
	Key         string            `json:"key"`
	Pattern     string            `json:"pattern"`
	Owner       string            `json:"owner"`
	Area        string            `json:"area"`
	Args        map[string]string `json:"args"`
	Type        string            `json:"type"`
	TTLMs       int64             `json:"ttl_ms"`
	ExpectedTTL string            `json:"expected_ttl"`
	Value       any               `json:"value,omitempty"`
	Error       string            `json:"error,omitempty"`
}

// inspect decodes ?key= with keys.Registry.Inspect in its area's
// database: the value as the owning package's decoder reads it (which
// never includes a secret), a collection one page of 100 at a time
// (?cursor= is the previous page's "next").
func (h *Handler) inspect(r *http.Request) (any, error) {
	key, cursor := r.URL.Query().Get("key"), r.URL.Query().Get("cursor")
	if key == "" {
		return nil, badRequest("key is required")
	}
	reg := h.reg
	c := h.cs.ForDB(0)
	if t, _, ok := reg.Match(h.opt.ns, key); ok {
		c = h.cs.For(t.Pattern().Area)
	}
	in, err := reg.Inspect(r.Context(), c, h.opt.ns, key, cursor)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return nil, notFound("%v", err)
	case errors.Is(err, keys.ErrUnowned), errors.Is(err, keys.ErrInvalid):
		return nil, badRequest("%v", err)
	case err != nil:
		return nil, err
	}
	p := in.Template.Pattern()
	out := inspectReply{Key: key, Pattern: in.Template.Display(h.opt.ns), Owner: p.Owner, Area: string(p.Area),
		Args: map[string]string{}, Type: string(in.Type), TTLMs: -1, ExpectedTTL: in.Template.TTLText(), Value: in.Value}
	for i, name := range in.Template.Params() {
		out.Args[name] = in.Args[i]
		if secretParam(name) {
			out.Args[name] = "ref-" + h.ref(argNamed(in.Template.Params(), in.Args, "user_id"), in.Args[i])
		}
	}
	out.Key = h.shownArgs(h.opt.ns, in.Template, in.Args, key)
	if in.TTL >= 0 {
		out.TTLMs = in.TTL.Milliseconds()
	}
	if in.DecodeErr != nil {
		out.Error = in.DecodeErr.Error()
	}
	out.Value = h.redact(in.Ref, out.Value)
	return out, nil
}
