package keys

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Registry holds the patterns of a keyspace with their decoders. The zero
// Registry is empty and ready to use; it is safe for concurrent use.
//
// There is no process-wide registry: each package exports its part as a
// Schema (lock.Schema(), queue.Schema(), ...), and a program composes the
// packages it uses with Compose. An application adds its own patterns with
// Register and SetDecoder, or as a Schema of its own.
type Registry struct {
	mu       sync.RWMutex
	byText   map[string]*Template
	ordered  []*Template
	decoders map[*Template]Decoder
	also     map[*Template][]Area // AlsoIn
	// byShape holds the key templates of ordered by their segment count
	// and first literal (a template's first segment is always one), each
	// list in ordered's order: Match tries only the templates a key
	// could have been built from.
	byShape map[shape][]*Template
}

// shape is what Match looks up a key by: its segment count after the
// namespace prefix and its first segment.
type shape struct {
	segs  int
	first string
}

// A Schema is one package's part of a keyspace: the key and channel
// templates it declares, the decoder of each key template's values, and
// the templates of other packages that it also writes in another area
// (AlsoIn). Each package returns its own from a function Schema.
type Schema struct {
	Templates []*Template
	Decoders  map[*Template]Decoder
	AlsoIn    []Placement
}

// A Placement says that keys of the template whose text is Template (a
// component's keys that another package embeds) are also written into
// Area's database: package cache's tag keys sit beside the entries they
// list, so aimemory's caches keep theirs in the AI memory area.
type Placement struct {
	Template string
	Area     Area
}

// Compose returns a registry of the schemas' templates, decoders and
// placements. It fails, with an error wrapping ErrInvalid, when two
// schemas declare the same template text, a decoder is given for a
// template no schema declares or for a channel, or a placement names a
// template no schema declares: compose the owner with the package that
// places its keys.
func Compose(schemas ...Schema) (*Registry, error) {
	r := &Registry{}
	for _, s := range schemas {
		for _, t := range s.Templates {
			if err := r.add(t); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range schemas {
		for t, d := range s.Decoders {
			if err := r.setDecoder(t, d); err != nil {
				return nil, err
			}
		}
		for _, p := range s.AlsoIn {
			if _, err := r.AlsoIn(p.Template, p.Area); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// MustCompile checks a pattern and compiles it into a Template, without
// registering it; it panics on an invalid pattern (an error wrapping
// ErrInvalid). It is for package-level var declarations of a package's
// templates, like regexp.MustCompile: a malformed pattern is a
// programming error its package's tests catch. Registry.Register is the
// form that returns the error.
func MustCompile(p Pattern) *Template {
	t, err := compile(p)
	if err != nil {
		panic(err)
	}
	return t
}

// Register compiles p and adds it to r. Registering a template twice is an
// error wrapping ErrInvalid.
func (r *Registry) Register(p Pattern) (*Template, error) {
	t, err := compile(p)
	if err != nil {
		return nil, err
	}
	return t, r.add(t)
}

// add adds the compiled template t.
func (r *Registry) add(t *Template) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byText == nil {
		r.byText = map[string]*Template{}
	}
	if _, dup := r.byText[t.p.Template]; dup {
		return fmt.Errorf("%w pattern %q: registered twice", ErrInvalid, t.p.Template)
	}
	r.byText[t.p.Template] = t
	r.ordered = append(r.ordered, t)
	sort.SliceStable(r.ordered, func(i, j int) bool {
		a, b := r.ordered[i], r.ordered[j]
		if a.specificity() != b.specificity() {
			return a.specificity() > b.specificity()
		}
		return a.p.Template < b.p.Template
	})
	r.byShape = map[shape][]*Template{}
	for _, t := range r.ordered {
		if !t.IsChannel() {
			k := shape{segs: len(t.segs), first: t.segs[0].lit}
			r.byShape[k] = append(r.byShape[k], t)
		}
	}
	return nil
}

// MustRegister is Register that panics on error.
func (r *Registry) MustRegister(p Pattern) *Template {
	t, err := r.Register(p)
	if err != nil {
		panic(err)
	}
	return t
}

// AlsoIn records that keys of the registered template text are also
// written into area a's database (see Placement). The audit then accepts
// such a key in the database of any of the pattern's areas (Areas), and
// the schema table lists each of their databases. It fails with an error
// wrapping ErrInvalid when text is not registered.
func (r *Registry) AlsoIn(text string, a Area) (*Template, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.byText[text]
	if !ok {
		return nil, fmt.Errorf("%w pattern %q: not registered", ErrInvalid, text)
	}
	if a != t.p.Area && !slices.Contains(r.also[t], a) {
		if r.also == nil {
			r.also = map[*Template][]Area{}
		}
		r.also[t] = append(r.also[t], a)
	}
	return t, nil
}

// Areas returns the areas whose databases may hold t's keys: its
// pattern's Area, then those AlsoIn added, in the order they were added.
func (r *Registry) Areas(t *Template) []Area {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Area{t.p.Area}, r.also[t]...)
}

// dbs returns the databases layout l gives t's areas, ascending, without
// repeats.
func (r *Registry) dbs(t *Template, l Layout) []int {
	var out []int
	for _, a := range r.Areas(t) {
		out = append(out, l.DB(a))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Lookup returns the template registered under text.
func (r *Registry) Lookup(text string) (*Template, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byText[text]
	return t, ok
}

// Templates returns the registered templates sorted by owner, then template.
func (r *Registry) Templates() []*Template {
	r.mu.RLock()
	out := append([]*Template(nil), r.ordered...)
	r.mu.RUnlock()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].p.Owner != out[j].p.Owner {
			return out[i].p.Owner < out[j].p.Owner
		}
		return out[i].p.Template < out[j].p.Template
	})
	return out
}

// Owned returns the templates whose Owner is owner.
func (r *Registry) Owned(owner string) []*Template {
	var out []*Template
	for _, t := range r.Templates() {
		if t.p.Owner == owner {
			out = append(out, t)
		}
	}
	return out
}

// Match finds the template that key was built from under ns and returns it
// with the placeholder values. Templates with more literal segments are tried
// first, so "sensor:motion:{location}" wins over "sensor:{type}:{location}".
func (r *Registry) Match(ns Namespace, key string) (*Template, []string, bool) {
	rest, ok := strings.CutPrefix(key, ns.Prefix)
	if !ok {
		return nil, nil, false
	}
	first, _, _ := strings.Cut(rest, ":")
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, t := range r.byShape[shape{segs: strings.Count(rest, ":") + 1, first: first}] {
		if args, miss := t.parseRest(ns, rest); miss.why == matched {
			return t, args, true
		}
	}
	return nil, nil, false
}

// MatchChannel is Match for pub/sub channel names: it finds the channel
// pattern that ch was built from under ns.
func (r *Registry) MatchChannel(ns Namespace, ch string) (*Template, []string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, t := range r.ordered {
		if !t.IsChannel() {
			continue
		}
		if args, miss := t.parse(ns, ch); miss.why == matched {
			return t, args, true
		}
	}
	return nil, nil, false
}

// TableOptions selects what Markdown prints.
type TableOptions struct {
	// Namespace is applied to every template shown (its prefix and tag mode).
	Namespace Namespace
	// Owner keeps only one package's patterns when non-empty.
	Owner string
	// Layout adds a DB column when non-nil.
	Layout Layout
}

// Markdown renders the registered patterns as a Markdown table: key
// pattern, type, TTL, owner, description.
func (r *Registry) Markdown(opt TableOptions) string {
	var b strings.Builder
	b.WriteString("| Key pattern | Type | TTL | ")
	if opt.Layout != nil {
		b.WriteString("DB | ")
	}
	b.WriteString("Package | Description |\n|---|---|---|")
	if opt.Layout != nil {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, t := range r.Templates() {
		if opt.Owner != "" && t.p.Owner != opt.Owner {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | ", t.Display(opt.Namespace), strings.ToUpper(string(t.p.Type)), t.TTLText())
		if opt.Layout != nil {
			fmt.Fprintf(&b, "%s | ", dbList(r.dbs(t, opt.Layout), ", "))
		}
		fmt.Fprintf(&b, "%s | %s |\n", t.p.Owner, mdCell(t.p.Purpose))
	}
	return b.String()
}

// dbList writes database numbers joined by sep.
func dbList(dbs []int, sep string) string {
	s := make([]string, len(dbs))
	for i, db := range dbs {
		s[i] = fmt.Sprint(db)
	}
	return strings.Join(s, sep)
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Display renders the template as a key under ns with placeholders shown by
// name and the hash tag marked as Key would write it:
// "ha:session:index:{{user_id}}" with tags, "ha:session:index:{user_id}"
// without.
func (t *Template) Display(ns Namespace) string {
	var b strings.Builder
	b.WriteString(ns.Prefix)
	for i, s := range t.segs {
		if i > 0 {
			b.WriteByte(':')
		}
		switch {
		case s.param < 0:
			b.WriteString(s.lit)
		case s.tag && !ns.NoHashTags:
			b.WriteString("{{" + s.name + "}}")
		default:
			b.WriteString("{" + s.name + "}")
		}
	}
	return b.String()
}

// TTLText describes the pattern's lifetime for tables: "1h", "60s (window
// duration)", "none (bounded: one key per job)".
func (t *Template) TTLText() string {
	p := t.p
	switch {
	case p.Type == Channel:
		return "(channel)"
	case p.TTL > 0 && p.TTLNote != "":
		return fmtDuration(p.TTL) + " (" + mdCell(p.TTLNote) + ")"
	case p.TTL > 0:
		return fmtDuration(p.TTL)
	case p.TTLNote != "":
		return mdCell(p.TTLNote)
	}
	return "none (" + mdCell(p.Persistent) + ")"
}

func fmtDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// Overlaps returns every pair of registered templates that can build the
// same key under ns: same number of segments, and at each position equal
// literals, or a placeholder that can spell the other side. A tagged
// placeholder renders with braces, which no literal and no untagged value
// contains, so with tags on it only overlaps another tagged placeholder.
// Within one template Key is injective; Overlaps extends the guarantee to
// the whole registry. Some overlaps are deliberate (a named default such as
// "lock:file:{file_id}" is an alias of "lock:{resource_type}:{resource_id}");
// the schema test lists those.
func (r *Registry) Overlaps(ns Namespace) [][2]*Template {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out [][2]*Template
	for i, a := range r.ordered {
		for _, b := range r.ordered[i+1:] {
			if canCollide(a, b, ns) {
				out = append(out, [2]*Template{a, b})
			}
		}
	}
	return out
}

func canCollide(a, b *Template, ns Namespace) bool {
	if len(a.segs) != len(b.segs) || a.IsChannel() != b.IsChannel() {
		return false
	}
	for k := range a.segs {
		sa, sb := a.segs[k], b.segs[k]
		ta, tb := sa.tag && !ns.NoHashTags, sb.tag && !ns.NoHashTags
		switch {
		case sa.param < 0 && sb.param < 0:
			if sa.lit != sb.lit {
				return false
			}
		case sa.param < 0:
			if tb {
				return false
			}
		case sb.param < 0:
			if ta {
				return false
			}
		case ta != tb:
			return false
		}
	}
	return true
}
