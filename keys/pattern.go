package keys

import (
	"fmt"
	"strings"
	"time"
)

// Type is the Redis data type stored at a key, as TYPE names it.
type Type string

// The Redis types a pattern can declare.
const (
	String Type = "string"
	Hash   Type = "hash"
	List   Type = "list"
	Set    Type = "set"
	ZSet   Type = "zset"
	Stream Type = "stream"
	// Channel is a pub/sub channel, not a key: it has no TTL, SCAN never
	// sees it, and it lives in the pub/sub namespace of the server (not
	// in a database), so it neither matches nor collides with keys.
	Channel Type = "channel"
)

// Pattern declares one kind of key: its template, type, lifetime, owner and
// purpose. Every package registers its patterns so that the schema can be
// printed and a live Redis audited against it.
type Pattern struct {
	// Template names the key's segments, separated by ':'. Literal segments
	// are written as they are; placeholders are "{name}" and must fill a
	// whole segment: "session:user:{user_id}:{session_id}". The first segment
	// must be a literal.
	Template string
	// Type is the Redis type stored at the key.
	Type Type
	// TTL is the default lifetime of a key. Zero means the key is persistent,
	// which must then be justified in Persistent.
	TTL time.Duration
	// TTLNote describes a TTL that varies ("window duration", "token's
	// remaining validity"); TTL then holds the default or upper bound, or
	// zero if the bound is the caller's.
	TTLNote string
	// Persistent gives the reason a key has no TTL, e.g. "bounded: one key
	// per cron job". Required when TTL is zero and TTLNote is empty.
	Persistent string
	// Tag is the placeholder used as the cluster hash tag ("user_id"), or
	// empty for none. Keys that a script touches together share a tag value.
	Tag string
	// Owner is the package that writes the key, e.g. "session".
	Owner string
	// Area is the part of the keyspace the key belongs to, which a Layout
	// maps to a database number.
	Area Area
	// Purpose says what the key is for, in one line.
	Purpose string
	// Seed names the reference system the pattern comes from, if any: its
	// number and, where its layout has numbered sections, the section
	// ("001 §8": the AI platform's rate limits). docs/README.md in the
	// repository lists the systems by number, one page each.
	Seed string
}

type segment struct {
	lit   string // literal text, or "" for a placeholder
	name  string // placeholder name
	param int    // index of the placeholder in Template.Params, or -1
	tag   bool
}

// Template is a registered, compiled Pattern. It builds and parses keys.
// A Template is immutable and safe for concurrent use.
type Template struct {
	p      Pattern
	segs   []segment
	params []string
	tagIdx int // index into params of the tag placeholder, or -1
	litLen int // bytes of literal text and separators
}

// compile checks a pattern and compiles it.
func compile(p Pattern) (*Template, error) {
	bad := func(format string, a ...any) (*Template, error) {
		return nil, fmt.Errorf("%w pattern %q: %s", ErrInvalid, p.Template, fmt.Sprintf(format, a...))
	}
	if p.Template == "" {
		return bad("empty template")
	}
	switch p.Type {
	case String, Hash, List, Set, ZSet, Stream:
		if p.TTL < 0 {
			return bad("negative TTL")
		}
		if p.TTL == 0 && p.TTLNote == "" && p.Persistent == "" {
			return bad("no TTL and no reason to persist")
		}
	case Channel:
		if p.TTL != 0 || p.TTLNote != "" || p.Persistent != "" {
			return bad("a channel has no TTL")
		}
	default:
		return bad("unknown type %q", p.Type)
	}
	if p.Owner == "" {
		return bad("no owner")
	}
	t := &Template{p: p, tagIdx: -1}
	seen := map[string]bool{}
	for i, s := range strings.Split(p.Template, ":") {
		if i > 0 {
			t.litLen++
		}
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && len(s) > 2 {
			name := s[1 : len(s)-1]
			if i == 0 {
				return bad("first segment must be a literal")
			}
			if strings.ContainsAny(name, "{}") {
				return bad("bad placeholder %q", s)
			}
			if seen[name] {
				return bad("placeholder {%s} twice", name)
			}
			seen[name] = true
			seg := segment{name: name, param: len(t.params), tag: name == p.Tag}
			if seg.tag {
				t.tagIdx = seg.param
			}
			t.params = append(t.params, name)
			t.segs = append(t.segs, seg)
			continue
		}
		if s == "" {
			return bad("empty segment")
		}
		if strings.ContainsAny(s, "{}*?[]\\%") {
			return bad("literal %q contains a reserved character", s)
		}
		for j := 0; j < len(s); j++ {
			if s[j] < 0x20 || s[j] == 0x7f {
				return bad("literal %q contains a control byte", s)
			}
		}
		t.segs = append(t.segs, segment{lit: s, param: -1})
		t.litLen += len(s)
	}
	if p.Tag != "" && t.tagIdx < 0 {
		return bad("tag {%s} is not a placeholder", p.Tag)
	}
	return t, nil
}

// Pattern returns the declaration the template was compiled from.
func (t *Template) Pattern() Pattern { return t.p }

// String returns the template text.
func (t *Template) String() string { return t.p.Template }

// IsChannel reports whether the pattern is a pub/sub channel.
func (t *Template) IsChannel() bool { return t.p.Type == Channel }

// TTL returns the pattern's default TTL (zero for persistent keys).
func (t *Template) TTL() time.Duration { return t.p.TTL }

// Params returns the placeholder names in the order Key takes their values.
func (t *Template) Params() []string { return append([]string(nil), t.params...) }

// Key builds the key for args, given in the order of Params, under ns.
// Each value is validated (non-empty, at most maxSegmentLen bytes, valid
// UTF-8) and escaped; the error names the placeholder at fault.
func (t *Template) Key(ns Namespace, args ...string) (string, error) {
	if len(args) != len(t.params) {
		return "", fmt.Errorf("%w key: %q takes %d values, got %d", ErrInvalid, t.p.Template, len(t.params), len(args))
	}
	n := len(ns.Prefix) + t.litLen
	for i, a := range args {
		if why := checkSegment(a); why != "" {
			return "", &segmentError{template: t.p.Template, placeholder: t.params[i], reason: why}
		}
		n += escapedLen(a)
	}
	if t.tagIdx >= 0 && !ns.NoHashTags {
		n += 2
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(ns.Prefix)
	for i, s := range t.segs {
		if i > 0 {
			b.WriteByte(':')
		}
		if s.param < 0 {
			b.WriteString(s.lit)
			continue
		}
		tagged := s.tag && !ns.NoHashTags
		if tagged {
			b.WriteByte('{')
		}
		appendEscaped(&b, args[s.param])
		if tagged {
			b.WriteByte('}')
		}
	}
	return b.String(), nil
}

// Prefix builds the part of a key that comes before its last placeholder,
// given the values of the others (in the order of Params), for a key
// family whose last value a script learns as it runs (a queue's groups):
// the prefix followed by a value v is Key's key for v whenever v holds no
// byte Key escapes. The last placeholder must be the template's last
// segment and not its hash tag, so that the whole family shares one slot.
func (t *Template) Prefix(ns Namespace, args ...string) (string, error) {
	last := len(t.segs) - 1
	if len(t.params) == 0 || t.segs[last].param != len(t.params)-1 || t.segs[last].tag {
		return "", fmt.Errorf("%w key: %q does not end with an untagged placeholder", ErrInvalid, t.p.Template)
	}
	k, err := t.Key(ns, append(args[:len(args):len(args)], "x")...)
	if err != nil {
		return "", err
	}
	return k[:len(k)-1], nil
}

// Parse recovers the placeholder values from a key built by Key under ns.
// It returns an error wrapping errNoMatch when the key has another shape.
func (t *Template) Parse(ns Namespace, key string) ([]string, error) {
	out, miss := t.parse(ns, key)
	if miss.why == matched {
		return out, nil
	}
	return nil, miss.err(t, ns, key)
}

// mismatch says why a key does not parse; err spells it out. The
// matching path (Registry.Match tries every template) builds no message.
type mismatch struct {
	why    uint8 // matched, or one of the miss constants
	seg    string
	detail string
}

const (
	matched uint8 = iota
	missPrefix
	missShape
	missTag
	missEscape
	missSegment
)

func (m mismatch) err(t *Template, ns Namespace, key string) error {
	switch m.why {
	case missPrefix:
		return fmt.Errorf("%w: %q lacks prefix %q", errNoMatch, key, ns.Prefix)
	case missTag:
		return fmt.Errorf("%w: %q lacks the hash tag of %q", errNoMatch, key, t.p.Template)
	case missEscape:
		return fmt.Errorf("%w: %q: %s", errNoMatch, key, m.detail)
	case missSegment:
		return fmt.Errorf("%w: %q: segment {%s} is %s", errNoMatch, key, m.seg, m.detail)
	}
	return fmt.Errorf("%w: %q is not a %q key", errNoMatch, key, t.p.Template)
}

// parse is Parse with the reason for a mismatch as a value. A key with
// the wrong prefix, number of segments or leading literals is refused
// before anything is allocated.
func (t *Template) parse(ns Namespace, key string) ([]string, mismatch) {
	rest, ok := strings.CutPrefix(key, ns.Prefix)
	if !ok {
		return nil, mismatch{why: missPrefix}
	}
	if strings.Count(rest, ":")+1 != len(t.segs) {
		return nil, mismatch{why: missShape}
	}
	return t.parseRest(ns, rest)
}

// parseRest is parse of a key without its namespace prefix, whose
// segment count the caller has checked.
func (t *Template) parseRest(ns Namespace, rest string) ([]string, mismatch) {
	var out []string // made at the first placeholder: a literal refuses most keys first
	for _, s := range t.segs {
		var part string
		part, rest, _ = strings.Cut(rest, ":")
		if s.param < 0 {
			if part != s.lit {
				return nil, mismatch{why: missShape}
			}
			continue
		}
		if s.tag && !ns.NoHashTags {
			if len(part) < 2 || part[0] != '{' || part[len(part)-1] != '}' {
				return nil, mismatch{why: missTag}
			}
			part = part[1 : len(part)-1]
		}
		v, err := unescape(part)
		if err != nil {
			return nil, mismatch{why: missEscape, detail: err.Error()}
		}
		if why := checkSegment(v); why != "" {
			return nil, mismatch{why: missSegment, seg: s.name, detail: why}
		}
		if out == nil {
			out = make([]string, len(t.params))
		}
		out[s.param] = v
	}
	if out == nil {
		out = []string{}
	}
	return out, mismatch{}
}

// Match returns a SCAN MATCH pattern for keys of this template under ns.
// Placeholders named in fixed take that value; the others match anything.
// Glob characters in the prefix are escaped; escaped values never contain
// any. Because '*' also matches ':', callers that need exact results check
// each scanned key with Parse.
func (t *Template) Match(ns Namespace, fixed map[string]string) string {
	var b strings.Builder
	b.WriteString(globEscape(ns.Prefix))
	for i, s := range t.segs {
		if i > 0 {
			b.WriteByte(':')
		}
		if s.param < 0 {
			b.WriteString(s.lit)
			continue
		}
		tagged := s.tag && !ns.NoHashTags
		if tagged {
			b.WriteByte('{')
		}
		if v, ok := fixed[s.name]; ok {
			b.WriteString(escape(v))
		} else {
			b.WriteByte('*')
		}
		if tagged {
			b.WriteByte('}')
		}
	}
	return b.String()
}

// specificity orders templates so that Registry.Match tries the one with more
// literal segments first ("sensor:motion:{location}" before
// "sensor:{sensor_type}:{location}").
func (t *Template) specificity() int { return len(t.segs) - len(t.params) }
