package keys_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

// DocTable aligns one package's patterns in columns for a doc comment:
// keys first, then channels, TTL text without Markdown escapes.
func TestDocTable(t *testing.T) {
	r := &keys.Registry{}
	r.MustRegister(keys.Pattern{Template: "chat:{tag}:events", Type: keys.Channel, Tag: "tag", Owner: "chat", Purpose: "conversation events"})
	r.MustRegister(keys.Pattern{Template: "chat:{tag}:admins", Type: keys.ZSet, Persistent: "admins a | b", Tag: "tag", Owner: "chat", Purpose: "admins by load"})
	r.MustRegister(keys.Pattern{Template: "chat:{tag}:conversation:{id}:messages", Type: keys.List, TTL: 24 * time.Hour, TTLNote: "renewed per message", Tag: "tag", Owner: "chat", Purpose: "messages"})
	r.MustRegister(keys.Pattern{Template: "presence:{user_id}", Type: keys.String, TTL: time.Minute, Tag: "user_id", Owner: "presence", Purpose: "not chat's"})

	got := r.DocTable("chat")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	require.Len(t, lines, 4, got)
	assert.Equal(t, []string{"Key", "pattern", "Type", "TTL", "Purpose"}, strings.Fields(lines[0]))
	assert.True(t, strings.HasPrefix(lines[1], "chat:{{tag}}:admins "), lines[1])
	assert.Contains(t, lines[1], "none (admins a | b)", "the Markdown escape of '|' is undone")
	assert.Contains(t, lines[2], "1d (renewed per message)")
	assert.True(t, strings.HasPrefix(lines[3], "chat:{{tag}}:events "), "channels come last: %q", lines[3])
	assert.Contains(t, lines[3], "CHANNEL  -  ")
	col := strings.Index(lines[0], "Type")
	for _, l := range lines[1:] {
		assert.Equal(t, strings.ToUpper(l[col:col+1]), l[col:col+1], "the Type column is aligned: %q", l)
		assert.NotEqual(t, " ", l[col:col+1], "the Type column is aligned: %q", l)
	}
	assert.NotContains(t, got, "presence")
	assert.Equal(t, "Key pattern  Type  TTL  Purpose\n", r.DocTable("nobody"), "only the header")
}

// Entries and JSON give the rows of the Markdown table as fields, with a
// DB only when a Layout is given.
func TestEntriesAndJSON(t *testing.T) {
	r, _ := testRegistry(t)
	es := r.Entries(keys.TableOptions{Namespace: keys.Namespace{Prefix: "ha:"}, Owner: "lock", Layout: keys.SeedLayout()})
	require.Len(t, es, 1)
	e := es[0]
	assert.Equal(t, "ha:cron:last-run:{jobName}", e.Key)
	assert.Equal(t, "cron:last-run:{jobName}", e.Template)
	assert.Equal(t, "string", e.Type)
	assert.Equal(t, "one key per job", e.Persistent)
	assert.Zero(t, e.TTLSeconds)
	assert.Equal(t, []string{"jobName"}, e.Params)
	require.NotNil(t, e.DB)
	assert.Equal(t, 6, *e.DB)
	assert.Equal(t, "locks", e.Area)

	b, err := r.JSON(keys.TableOptions{Owner: "sensor"})
	require.NoError(t, err)
	var got []map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Len(t, got, 2)
	for _, e := range got {
		assert.Equal(t, "sensor", e["owner"])
		assert.Equal(t, float64(86400), e["ttl_seconds"])
		assert.NotContains(t, e, "db", "no Layout, no DB")
		assert.Equal(t, "location", e["tag"])
	}
	assert.True(t, strings.HasPrefix(string(b), "[\n  {"), "indented")
}

// MarkdownAll lists every pattern, Markdown only those with keys or
// problems.
func TestAuditMarkdownAll(t *testing.T) {
	r, ts := testRegistry(t)
	tp := ts["sensor:motion:{location}"]
	rep := &keys.AuditReport{Scanned: 2, Unmatched: 1}
	for _, x := range r.Templates() {
		s := keys.PatternStats{Template: x}
		if x == tp {
			s.Keys, s.NoTTL = 1, 1
		}
		rep.Patterns = append(rep.Patterns, s)
	}
	all, some := rep.MarkdownAll(), rep.Markdown()
	assert.Equal(t, 2+len(ts)+1, strings.Count(all, "\n"), "header, separator, every pattern, unmatched")
	assert.Equal(t, 2+1+1, strings.Count(some, "\n"))
	assert.Contains(t, some, "| `sensor:motion:{location}` | 1 | 1 | 0 | 0 | 0 |")
	assert.Contains(t, all, "| `cron:last-run:{jobName}` | 0 | 0 | 0 | 0 | 0 |")
	assert.Contains(t, all, "| (unmatched) | 1 |")
}

// Ref.Arg returns a placeholder's value, or "" for a name the template
// does not have.
func TestRefArg(t *testing.T) {
	tp := mustCompile(t, keys.Pattern{Template: "session:user:{user_id}:{session_id}", Tag: "user_id"})
	ref := keys.Ref{Key: "session:user:{42}:s1", Template: tp, Args: []string{"42", "s1"}}
	assert.Equal(t, "42", ref.Arg("user_id"))
	assert.Equal(t, "s1", ref.Arg("session_id"))
	assert.Equal(t, "", ref.Arg("device_id"))
}

// Compose builds a registry from packages' schemas: their templates,
// decoders and placements; a template declared twice, a decoder for an
// undeclared template or a channel, and a placement of an undeclared
// template are errors, and MustCompile panics on a malformed pattern.
func TestCompose(t *testing.T) {
	value := keys.MustCompile(keys.Pattern{Template: "c:value:{id}", Type: keys.String, TTL: time.Minute, Tag: "id", Owner: "c", Area: keys.Cache, Purpose: "a value"})
	events := keys.MustCompile(keys.Pattern{Template: "c:events", Type: keys.Channel, Owner: "c", Purpose: "events"})
	user := keys.MustCompile(keys.Pattern{Template: "u:{id}", Type: keys.Hash, TTL: time.Hour, Tag: "id", Owner: "u", Area: keys.AIMemory, Purpose: "a user"})
	dec := keys.StringDecoder(func(_ keys.Ref, v string) (any, error) { return v, nil })
	c := keys.Schema{Templates: []*keys.Template{value, events}, Decoders: map[*keys.Template]keys.Decoder{value: dec}}
	u := keys.Schema{Templates: []*keys.Template{user}, AlsoIn: []keys.Placement{{Template: "c:value:{id}", Area: keys.AIMemory}}}

	r, err := keys.Compose(c, u)
	require.NoError(t, err)
	assert.Equal(t, []*keys.Template{events, value}, r.Owned("c"))
	got, ok := r.Lookup("u:{id}")
	require.True(t, ok)
	assert.Same(t, user, got)
	assert.NotNil(t, r.Decoder(value))
	assert.Nil(t, r.Decoder(user))
	assert.Equal(t, []keys.Area{keys.Cache, keys.AIMemory}, r.Areas(value))

	for name, schemas := range map[string][]keys.Schema{
		"twice":             {c, c},
		"decoder elsewhere": {{Templates: []*keys.Template{user}, Decoders: map[*keys.Template]keys.Decoder{value: dec}}},
		"decoder channel":   {{Templates: []*keys.Template{events}, Decoders: map[*keys.Template]keys.Decoder{events: dec}}},
		"owner missing":     {u},
	} {
		_, err := keys.Compose(schemas...)
		assert.ErrorIs(t, err, keys.ErrInvalid, name)
	}
	empty, err := keys.Compose()
	require.NoError(t, err)
	assert.Empty(t, empty.Templates())
	assert.Panics(t, func() { keys.MustCompile(keys.Pattern{Template: "c:{", Owner: "c"}) }, "malformed")
}
