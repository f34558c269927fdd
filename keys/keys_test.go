package keys_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

func mustCompile(t testing.TB, p keys.Pattern) *keys.Template {
	t.Helper()
	if p.Type == "" {
		p.Type = keys.String
	}
	if p.Owner == "" {
		p.Owner = "test"
	}
	if p.TTL == 0 && p.Persistent == "" && p.TTLNote == "" {
		p.TTL = time.Minute
	}
	tm, err := keys.Compile(p)
	require.NoError(t, err)
	return tm
}

// Keys taken from the seed documents: with tags off they must be
// byte-identical; with tags on only the tag braces differ.
func TestSeedKeys(t *testing.T) {
	ha := keys.Namespace{Prefix: "ha:"}
	cases := []struct {
		name, template, tag string
		ns                  keys.Namespace
		args                []string
		seed, tagged        string
	}{
		{"000 endpoint counter", "requests:endpoint:{METHOD path}", "", ha, []string{"GET /api/users"}, "ha:requests:endpoint:GET /api/users", "ha:requests:endpoint:GET /api/users"},
		{"000 endpoint with id", "requests:endpoint:{METHOD path}", "", ha, []string{"PUT /api/forum/questions/123"}, "ha:requests:endpoint:PUT /api/forum/questions/123", "ha:requests:endpoint:PUT /api/forum/questions/123"},
		{"000 rate limit ip", "rate_limit:{identifier}", "identifier", ha, []string{"192.168.1.100"}, "ha:rate_limit:192.168.1.100", "ha:rate_limit:{192.168.1.100}"},
		{"000 user", "user:{user_id}", "user_id", ha, []string{"123"}, "ha:user:123", "ha:user:{123}"},
		{"000 admin presence", "admin:{admin_id}:presence", "admin_id", ha, []string{"123"}, "ha:admin:123:presence", "ha:admin:{123}:presence"},
		{"000 messages", "chat:conversation:{id}:messages", "id", ha, []string{"456"}, "ha:chat:conversation:456:messages", "ha:chat:conversation:{456}:messages"},
		{"001 session", "session:user:{user_id}:{session_id}", "user_id", keys.Namespace{}, []string{"0b7c-uuid", "s_9f"}, "session:user:0b7c-uuid:s_9f", "session:user:{0b7c-uuid}:s_9f"},
		{"001 session index", "session:index:{user_id}", "user_id", keys.Namespace{}, []string{"u1"}, "session:index:u1", "session:index:{u1}"},
		{"001 cache", "cache:api:{endpoint}:{method}:{params_hash}", "endpoint", keys.Namespace{}, []string{"/api/v1/files/list", "GET", "ab12"}, "cache:api:/api/v1/files/list:GET:ab12", "cache:api:{/api/v1/files/list}:GET:ab12"},
		{"001 queue", "queue:{queue_name}:executions", "queue_name", keys.Namespace{}, []string{"n8n"}, "queue:n8n:executions", "queue:{n8n}:executions"},
		{"001 lock", "lock:{resource_type}:{resource_id}", "resource_id", keys.Namespace{}, []string{"file", "f-1"}, "lock:file:f-1", "lock:file:{f-1}"},
		{"001 ai memory", "ai:memory:conv:{conversation_id}", "conversation_id", keys.Namespace{}, []string{"c-1"}, "ai:memory:conv:c-1", "ai:memory:conv:{c-1}"},
		{"001 email", "session:user:{user_id}:{session_id}", "user_id", keys.Namespace{}, []string{"admin@zentoria.local", "x"}, "session:user:admin@zentoria.local:x", "session:user:{admin@zentoria.local}:x"},
		{"002 presence", "presence:{user_id}", "user_id", keys.Namespace{}, []string{"12345"}, "presence:12345", "presence:{12345}"},
		{"003 motion", "sensor:motion:{location}", "location", keys.Namespace{}, []string{"study"}, "sensor:motion:study", "sensor:motion:{study}"},
		{"003 env", "sensor:environmental:{location}", "location", keys.Namespace{}, []string{"living_room"}, "sensor:environmental:living_room", "sensor:environmental:{living_room}"},
		{"003 generic meta", "meta:{sensor_type}:{location}", "location", keys.Namespace{}, []string{"pressure", "kitchen"}, "meta:pressure:kitchen", "meta:pressure:{kitchen}"},
		{"004 typing", "typing:{conversationId}:{userId}", "conversationId", keys.Namespace{}, []string{"conv-456", "user-123"}, "typing:conv-456:user-123", "typing:{conv-456}:user-123"},
		{"004 cron", "cron:last-run:{jobName}", "", keys.Namespace{}, []string{"unread-reminder"}, "cron:last-run:unread-reminder", "cron:last-run:unread-reminder"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := mustCompile(t, keys.Pattern{Template: c.template, Tag: c.tag})
			noTags := c.ns
			noTags.NoHashTags = true
			got, err := tm.Key(noTags, c.args...)
			require.NoError(t, err)
			assert.Equal(t, c.seed, got, "tags off: byte-identical to the seed")
			got, err = tm.Key(c.ns, c.args...)
			require.NoError(t, err)
			assert.Equal(t, c.tagged, got, "tags on")
			back, err := tm.Parse(c.ns, got)
			require.NoError(t, err)
			assert.Equal(t, c.args, back)
			back, err = tm.Parse(noTags, c.seed)
			require.NoError(t, err)
			assert.Equal(t, c.args, back)
		})
	}
}

func TestEscaping(t *testing.T) {
	tm := mustCompile(t, keys.Pattern{Template: "ratelimit:ip:{ip_address}:{endpoint}:{window}", Tag: "ip_address"})
	k, err := tm.Key(keys.Namespace{}, "2001:db8::1", "/api/{id}", "minute")
	require.NoError(t, err)
	assert.Equal(t, "ratelimit:ip:{2001%3Adb8%3A%3A1}:/api/%7Bid%7D:minute", k)
	assert.Equal(t, keys.Slot("{2001%3Adb8%3A%3A1}"), keys.Slot(k))

	for in, want := range map[string]string{
		"a:b": "a%3Ab", "50%": "50%25", "{x}": "%7Bx%7D", "*?[]\\": "%2A%3F%5B%5D%5C",
		"tab\there": "tab%09here", "del\x7f": "del%7F", "héllo wörld": "héllo wörld", "a-b_c.d@e/f g": "a-b_c.d@e/f g",
	} {
		assert.Equal(t, want, keys.Escape(in), in)
		back, err := keys.Unescape(want)
		require.NoError(t, err)
		assert.Equal(t, in, back)
	}
	for _, bad := range []string{"%", "%4", "%zz", "%41", "a:b", "x%7b", "{"} {
		_, err := keys.Unescape(bad)
		assert.ErrorIs(t, err, keys.ErrNoMatch, bad)
	}
}

func TestKeyErrors(t *testing.T) {
	tm := mustCompile(t, keys.Pattern{Template: "session:user:{user_id}:{session_id}", Tag: "user_id"})
	for _, c := range []struct {
		args        []string
		placeholder string
		reason      string
	}{
		{[]string{"", "s"}, "user_id", "empty"},
		{[]string{"u", ""}, "session_id", "empty"},
		{[]string{strings.Repeat("x", keys.MaxSegmentLen+1), "s"}, "user_id", "longer than"},
		{[]string{"u", "\xff\xfe"}, "session_id", "UTF-8"},
	} {
		_, err := tm.Key(keys.Namespace{}, c.args...)
		require.ErrorIs(t, err, keys.ErrInvalid)
		assert.Contains(t, err.Error(), "segment {"+c.placeholder+"} is", "the error names the placeholder")
		assert.Contains(t, err.Error(), c.reason)
		assert.Contains(t, err.Error(), "{"+c.placeholder+"}")
	}
	_, err := tm.Key(keys.Namespace{}, "only-one")
	assert.ErrorIs(t, err, keys.ErrInvalid)
	k, err := tm.Key(keys.Namespace{}, strings.Repeat("x", keys.MaxSegmentLen), "s")
	require.NoError(t, err)
	assert.Len(t, k, len("session:user:{}:s")+keys.MaxSegmentLen)
}

func TestPrefix(t *testing.T) {
	group := mustCompile(t, keys.Pattern{Template: "queue:{queue_name}:gactive:{group}", Tag: "queue_name", Type: keys.ZSet})
	for _, ns := range []keys.Namespace{{}, {Prefix: "app:"}, {Prefix: "app:", NoHashTags: true}} {
		pre, err := group.Prefix(ns, "a:b")
		require.NoError(t, err)
		k, err := group.Key(ns, "a:b", "tenant-1")
		require.NoError(t, err)
		assert.Equal(t, k, pre+"tenant-1", "the prefix and a value that needs no escaping make the key")
		if !ns.NoHashTags {
			assert.Equal(t, keys.Slot(k), keys.Slot(pre), "the family shares one slot")
		}
	}
	_, err := group.Prefix(keys.Namespace{}, "")
	assert.ErrorIs(t, err, keys.ErrInvalid, "the values given are checked as Key checks them")
	_, err = group.Prefix(keys.Namespace{}, "a", "b")
	assert.ErrorIs(t, err, keys.ErrInvalid, "a value for the last placeholder too")
	for _, tmpl := range []keys.Pattern{
		{Template: "queue:{queue_name}:stats", Tag: "queue_name"}, // ends with a literal
		{Template: "lock:{name}", Tag: "name"},                    // ends with its tag
		{Template: "flags:all"},                                   // no placeholder
	} {
		_, err := mustCompile(t, tmpl).Prefix(keys.Namespace{}, "q")
		assert.ErrorIs(t, err, keys.ErrInvalid, tmpl.Template)
	}
}

func TestCompileErrors(t *testing.T) {
	for name, p := range map[string]keys.Pattern{
		"empty":           {Template: "", Type: keys.String, TTL: time.Second, Owner: "x"},
		"bad type":        {Template: "a:{b}", Type: "blob", TTL: time.Second, Owner: "x"},
		"no ttl":          {Template: "a:{b}", Type: keys.String, Owner: "x"},
		"negative ttl":    {Template: "a:{b}", Type: keys.String, TTL: -1, Owner: "x"},
		"no owner":        {Template: "a:{b}", Type: keys.String, TTL: time.Second},
		"leading param":   {Template: "{a}:b", Type: keys.String, TTL: time.Second, Owner: "x"},
		"empty segment":   {Template: "a::{b}", Type: keys.String, TTL: time.Second, Owner: "x"},
		"glob literal":    {Template: "a*:{b}", Type: keys.String, TTL: time.Second, Owner: "x"},
		"brace literal":   {Template: "a{:{b}", Type: keys.String, TTL: time.Second, Owner: "x"},
		"control literal": {Template: "a\n:{b}", Type: keys.String, TTL: time.Second, Owner: "x"},
		"duplicate param": {Template: "a:{b}:{b}", Type: keys.String, TTL: time.Second, Owner: "x"},
		"unknown tag":     {Template: "a:{b}", Type: keys.String, TTL: time.Second, Owner: "x", Tag: "c"},
		"nested braces":   {Template: "a:{{b}}", Type: keys.String, TTL: time.Second, Owner: "x"},
	} {
		_, err := keys.Compile(p)
		assert.ErrorIs(t, err, keys.ErrInvalid, name)
	}
}

func TestParseRejectsForeignKeys(t *testing.T) {
	tm := mustCompile(t, keys.Pattern{Template: "session:user:{user_id}:{session_id}", Tag: "user_id"})
	ns := keys.Namespace{Prefix: "app:"}
	for _, k := range []string{
		"session:user:{u}:s",        // no prefix
		"app:session:user:{u}",      // too few segments
		"app:session:user:{u}:s:x",  // too many
		"app:session:users:{u}:s",   // wrong literal
		"app:session:user:u:s",      // tag missing
		"app:session:user:u}:s",     // half a tag
		"app:session:user:{u:s",     // half a tag
		"app:session:user:{u%zz}:s", // bad escape
		"app:session:user:{}:s",     // empty
	} {
		_, err := tm.Parse(ns, k)
		assert.ErrorIs(t, err, keys.ErrNoMatch, k)
	}
}

func TestNamespace(t *testing.T) {
	require.NoError(t, keys.Namespace{}.Validate())
	require.NoError(t, keys.Namespace{Prefix: "ha:"}.Validate())
	for _, p := range []string{"a{b", "a}b", "a\nb", "\xff"} {
		assert.ErrorIs(t, keys.Namespace{Prefix: p}.Validate(), keys.ErrInvalid, p)
	}
	ns := keys.Namespace{Prefix: "ha:", NoHashTags: true}.Sub("t1:")
	assert.Equal(t, "ha:t1:", ns.Prefix)
	assert.True(t, ns.NoHashTags)
	assert.Equal(t, `we\*ird\?:*`, keys.Namespace{Prefix: "we*ird?:"}.Match())
	assert.Equal(t, `a\[b\]\\c\^`, keys.GlobEscape(`a[b]\c^`))
}

func TestMatch(t *testing.T) {
	tm := mustCompile(t, keys.Pattern{Template: "meta:{sensor_type}:{location}", Tag: "location"})
	ns := keys.Namespace{Prefix: "x*:"}
	assert.Equal(t, `x\*:meta:*:{kitchen}`, tm.Match(ns, map[string]string{"location": "kitchen"}))
	assert.Equal(t, `x\*:meta:*:{*}`, tm.Match(ns, nil))
	assert.Equal(t, `x\*:meta:a%3Ab:*`, tm.Match(keys.Namespace{Prefix: "x*:", NoHashTags: true}, map[string]string{"sensor_type": "a:b"}))
}

func TestSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	assert.Equal(t, 12182, keys.Slot("foo"))
	assert.Equal(t, 5061, keys.Slot("bar"))
	assert.Equal(t, 12739, keys.Slot("123456789")) // CRC16 0x31C3
	assert.Equal(t, keys.Slot("{user1000}.following"), keys.Slot("{user1000}.followers"))
	assert.Equal(t, keys.Slot("foo{}{bar}"), keys.Slot("foo{}{bar}"), "empty first tag hashes the whole key")
	assert.Equal(t, "foo{}{bar}", keys.HashPart("foo{}{bar}"))
	assert.Equal(t, "bar", keys.HashPart("foo{bar}{zap}"))
	assert.Equal(t, "{bar", keys.HashPart("foo{{bar}}zap"))
	assert.True(t, keys.SameSlot("session:user:{42}:a", "session:index:{42}", "x:{42}"))
	assert.False(t, keys.SameSlot("foo", "bar"))
}

func TestDisplayAndTTLText(t *testing.T) {
	tm := mustCompile(t, keys.Pattern{Template: "session:index:{user_id}", Tag: "user_id", Type: keys.Set, TTL: time.Hour})
	assert.Equal(t, "ha:session:index:{{user_id}}", tm.Display(keys.Namespace{Prefix: "ha:"}))
	assert.Equal(t, "session:index:{user_id}", tm.Display(keys.Namespace{NoHashTags: true}))
	assert.Equal(t, []string{"user_id"}, tm.Params())
	assert.Equal(t, "session:index:{user_id}", tm.String())
	assert.Equal(t, time.Hour, tm.TTL())
	for want, p := range map[string]keys.Pattern{
		"7d":                     {TTL: 7 * 24 * time.Hour},
		"1h":                     {TTL: time.Hour},
		"30m":                    {TTL: 30 * time.Minute},
		"3s":                     {TTL: 3 * time.Second},
		"1.5s":                   {TTL: 1500 * time.Millisecond},
		"1m (window duration)":   {TTL: time.Minute, TTLNote: "window duration"},
		"token's validity":       {TTLNote: "token's validity"},
		"none (one key per job)": {Persistent: "one key per job"},
	} {
		p.Template = "a:{b}"
		assert.Equal(t, want, mustCompile(t, p).TTLText())
	}
}
