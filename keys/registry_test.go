package keys_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func testRegistry(t *testing.T) (*keys.Registry, map[string]*keys.Template) {
	r := &keys.Registry{}
	out := map[string]*keys.Template{}
	for _, p := range []keys.Pattern{
		{Template: "sensor:{sensor_type}:{location}", Type: keys.List, TTL: 24 * time.Hour, Tag: "location", Owner: "sensor", Area: keys.Sensors, Purpose: "generic readings"},
		{Template: "sensor:motion:{location}", Type: keys.ZSet, TTL: 24 * time.Hour, Tag: "location", Owner: "sensor", Area: keys.Sensors, Purpose: "motion events"},
		{Template: "cron:last-run:{jobName}", Type: keys.String, Persistent: "one key per job", Owner: "lock", Area: keys.Locks, Purpose: "last run, Unix ms | string"},
		{Template: "session:index:{user_id}", Type: keys.Set, TTLNote: "outlives the last session", Tag: "user_id", Owner: "session", Area: keys.Sessions, Purpose: "session IDs of a user"},
	} {
		tm, err := r.Register(p)
		require.NoError(t, err)
		out[p.Template] = tm
	}
	return r, out
}

func TestRegistry(t *testing.T) {
	r, ts := testRegistry(t)
	_, err := r.Register(ts["cron:last-run:{jobName}"].Pattern())
	assert.ErrorIs(t, err, keys.ErrInvalid, "duplicate template")
	assert.Panics(t, func() { r.MustRegister(keys.Pattern{Template: "bad"}) })

	got, ok := r.Lookup("sensor:motion:{location}")
	require.True(t, ok)
	assert.Same(t, ts["sensor:motion:{location}"], got)

	ns := keys.Namespace{Prefix: "ha:"}
	k, _ := ts["sensor:motion:{location}"].Key(ns, "study")
	m, args, ok := r.Match(ns, k)
	require.True(t, ok)
	assert.Same(t, ts["sensor:motion:{location}"], m, "the more specific template wins")
	assert.Equal(t, []string{"study"}, args)
	k, _ = ts["sensor:{sensor_type}:{location}"].Key(ns, "pressure", "kitchen")
	m, args, ok = r.Match(ns, k)
	require.True(t, ok)
	assert.Same(t, ts["sensor:{sensor_type}:{location}"], m)
	assert.Equal(t, []string{"pressure", "kitchen"}, args)
	_, _, ok = r.Match(ns, "ha:nothing:here")
	assert.False(t, ok)
	// A key that matches nothing tries every template and builds no error
	// for any (the schema page classifies every scanned key this way).
	for _, stray := range []string{"ha:nothing:here", "other:sensor:x:y", "ha:sensor:{x}:y:z", "ha:session:index:nobrace"} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { r.Match(ns, stray) }), stray)
	}

	owned := r.Owned("sensor")
	require.Len(t, owned, 2)
	assert.Equal(t, "sensor:motion:{location}", owned[0].String())
	assert.Len(t, r.Templates(), 4)
}

func TestMarkdown(t *testing.T) {
	r, _ := testRegistry(t)
	md := r.Markdown(keys.TableOptions{Namespace: keys.Namespace{Prefix: "ha:"}, Layout: keys.SeedLayout()})
	lines := strings.Split(strings.TrimSpace(md), "\n")
	require.Len(t, lines, 6)
	assert.Equal(t, "| Key pattern | Type | TTL | DB | Package | Description |", lines[0])
	assert.Contains(t, md, "| `ha:cron:last-run:{jobName}` | STRING | none (one key per job) | 6 | lock | last run, Unix ms \\| string |")
	assert.Contains(t, md, "| `ha:session:index:{{user_id}}` | SET | outlives the last session | 0 | session |")
	assert.Contains(t, md, "| `ha:sensor:motion:{{location}}` | ZSET | 1d | 0 | sensor | motion events |")

	md = r.Markdown(keys.TableOptions{Owner: "session", Namespace: keys.Namespace{NoHashTags: true}})
	assert.Equal(t, 3, strings.Count(md, "\n"))
	assert.Contains(t, md, "`session:index:{user_id}`")
	assert.NotContains(t, md, "DB")
}

func TestLayout(t *testing.T) {
	l := keys.SeedLayout()
	assert.Equal(t, 0, l.DB(keys.Sessions))
	assert.Equal(t, 1, l.DB(keys.Cache))
	assert.Equal(t, 2, l.DB(keys.Queues))
	assert.Equal(t, 3, l.DB(keys.PubSub))
	assert.Equal(t, 4, l.DB(keys.AIMemory))
	assert.Equal(t, 5, l.DB(keys.RateLimits))
	assert.Equal(t, 6, l.DB(keys.Locks))
	assert.Equal(t, 7, l.DB(keys.Metrics))
	assert.Equal(t, 0, l.DB(keys.Presence), "unnamed areas are in DB 0")
	assert.Equal(t, 0, keys.Layout(nil).DB(keys.Locks))

	cs, err := l.Clients(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, cs.DBs())
	assert.Equal(t, 6, cs.For(keys.Locks).(*redis.Client).Options().DB)
	assert.Equal(t, 0, cs.For(keys.Presence).(*redis.Client).Options().DB)
	assert.Same(t, cs.For(keys.Presence), cs.For(keys.Sessions))
	require.NoError(t, cs.Close())

	cs, err = l.Clients(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}})
	require.NoError(t, err)
	assert.True(t, cs.Cluster())
	assert.Equal(t, []int{0}, cs.DBs())
	_, isCluster := cs.For(keys.Locks).(*redis.ClusterClient)
	assert.True(t, isCluster)
	assert.Same(t, cs.For(keys.Locks), cs.For(keys.Metrics))
	require.NoError(t, cs.Close())
}

func TestLayoutClientsSelectDB(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("a cluster has only DB 0; covered by TestLayout and TestLayoutClientsRefuse")
	}
	ctx := e.Ctx()
	cs, err := keys.SeedLayout().Clients(&redis.UniversalOptions{Addrs: []string{e.Addr}})
	require.NoError(t, err)
	defer cs.Close()
	key := e.NS.Prefix + "layout"
	require.NoError(t, cs.For(keys.Locks).Set(ctx, key, "in-6", time.Minute).Err())
	defer cs.For(keys.Locks).Del(ctx, key)
	v, err := cs.For(keys.Locks).Get(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, "in-6", v)
	assert.ErrorIs(t, cs.For(keys.Sessions).Get(ctx, key).Err(), redis.Nil, "DB 0 does not see DB 6")

	// Without a layout every area is in the options' database.
	cs3, err := keys.Layout(nil).Clients(&redis.UniversalOptions{Addrs: []string{e.Addr}, DB: 3})
	require.NoError(t, err)
	defer cs3.Close()
	db3 := redis.NewClient(&redis.Options{Addr: e.Addr, DB: 3})
	defer db3.Close()
	key3 := e.NS.Prefix + "in-3"
	require.NoError(t, cs3.For(keys.Locks).Set(ctx, key3, "x", time.Minute).Err())
	defer db3.Del(ctx, key3)
	v, err = db3.Get(ctx, key3).Result()
	require.NoError(t, err, "the key is in DB 3")
	assert.Equal(t, "x", v)
	assert.ErrorIs(t, e.Client.Get(ctx, key3).Err(), redis.Nil, "and not in DB 0")
}

func TestAudit(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r, ts := testRegistry(t)
	ns := e.NS
	c := e.Client
	for _, loc := range []string{"study", "hall", "a:b"} {
		k, err := ts["sensor:motion:{location}"].Key(ns, loc)
		require.NoError(t, err)
		require.NoError(t, c.ZAdd(ctx, k, redis.Z{Score: 1, Member: "x"}).Err())
		require.NoError(t, c.Expire(ctx, k, time.Hour).Err())
	}
	k, _ := ts["sensor:{sensor_type}:{location}"].Key(ns, "pressure", "kitchen")
	require.NoError(t, c.RPush(ctx, k, "1").Err()) // no TTL: a problem
	k, _ = ts["sensor:{sensor_type}:{location}"].Key(ns, "humidity", "kitchen")
	require.NoError(t, c.Set(ctx, k, "1", time.Hour).Err()) // wrong type
	k, _ = ts["cron:last-run:{jobName}"].Key(ns, "unread-reminder")
	require.NoError(t, c.Set(ctx, k, "1704067200000", 0).Err()) // persistent: fine
	require.NoError(t, c.Set(ctx, ns.Prefix+"stray:key", "1", time.Hour).Err())

	rep, err := r.Audit(ctx, c, keys.AuditOptions{Namespace: ns, ScanCount: 2})
	require.NoError(t, err)
	assert.EqualValues(t, 7, rep.Scanned)
	stats := map[string]keys.PatternStats{}
	for _, s := range rep.Patterns {
		stats[s.Template.String()] = s
	}
	motion := stats["sensor:motion:{location}"]
	assert.EqualValues(t, 3, motion.Keys)
	assert.EqualValues(t, 0, motion.NoTTL)
	generic := stats["sensor:{sensor_type}:{location}"]
	assert.EqualValues(t, 2, generic.Keys)
	assert.EqualValues(t, 1, generic.NoTTL)
	assert.EqualValues(t, 1, generic.WrongType)
	assert.EqualValues(t, 1, stats["cron:last-run:{jobName}"].Keys)
	assert.EqualValues(t, 0, stats["cron:last-run:{jobName}"].NoTTL)
	assert.EqualValues(t, 1, rep.Unmatched)
	assert.Equal(t, []string{ns.Prefix + "stray:key"}, rep.UnmatchedKeys)
	if motion.Sampled > 0 {
		assert.Positive(t, motion.AvgBytes())
	}
	probs := rep.Problems()
	require.Len(t, probs, 3)
	assert.Contains(t, probs[0]+probs[1]+probs[2], "have no TTL")
	assert.Contains(t, rep.Markdown(), "| `sensor:motion:{location}` | 3 | 0 | 0 |")
	sum := rep.Summary(ns)
	assert.Equal(t, keys.AuditSummary{Namespace: ns.Prefix, Scanned: 7, Problems: probs, Patterns: map[string]int64{
		"sensor:motion:{location}": 3, "sensor:{sensor_type}:{location}": 2, "cron:last-run:{jobName}": 1,
	}}, sum)

	rep, err = r.Audit(ctx, c, keys.AuditOptions{Namespace: ns, Sample: -1})
	require.NoError(t, err)
	assert.EqualValues(t, 0, (keys.PatternStats{}).AvgBytes())
	assert.Equal(t, []string{}, (&keys.AuditReport{}).Summary(ns).Problems, "an empty list, not null, in JSON")
	for _, s := range rep.Patterns {
		assert.Zero(t, s.Sampled)
	}
}

func TestCorruptError(t *testing.T) {
	assert.NoError(t, keys.Corrupt("k", nil))
	inner := assert.AnError
	err := keys.Corrupt("presence:{1}", inner)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	assert.ErrorIs(t, err, inner)
	assert.Contains(t, err.Error(), `"presence:{1}"`)
	_, se := keys.MustCompile(keys.Pattern{Template: "a:{b}", Type: keys.String, TTL: 1, Owner: "t"}).Key(keys.Namespace{}, "")
	assert.ErrorIs(t, se, keys.ErrInvalid)
	assert.NotErrorIs(t, se, keys.ErrCorrupt)
}

// TestSlotMatchesServer compares our CRC16 with CLUSTER KEYSLOT on real
// servers (miniredis answers a fake constant).
func TestSlotMatchesServer(t *testing.T) {
	e := harness.New(t)
	if !e.Real() {
		t.Skip("miniredis has no real CLUSTER KEYSLOT")
	}
	tm, err := keys.Compile(keys.Pattern{Template: "session:user:{user_id}:{session_id}", Tag: "user_id", Type: keys.Hash, TTL: time.Hour, Owner: "t"})
	require.NoError(t, err)
	for _, id := range []string{"42", "a:b", "{x}", "é", "GET /api", "2001:db8::1", strings.Repeat("z", 300)} {
		for _, ns := range []keys.Namespace{{}, {Prefix: "ha:"}, {NoHashTags: true}} {
			k, err := tm.Key(ns, id, "s1")
			require.NoError(t, err)
			want, err := e.Client.ClusterKeySlot(e.Ctx(), k).Result()
			if err != nil && strings.Contains(err.Error(), "cluster support disabled") {
				t.Skip("standalone server without cluster support")
			}
			require.NoError(t, err)
			assert.EqualValues(t, want, keys.Slot(k), k)
		}
	}
}

func TestOverlaps(t *testing.T) {
	r := &keys.Registry{}
	p := func(tmpl, tag string) keys.Pattern {
		return keys.Pattern{Template: tmpl, Tag: tag, Type: keys.String, TTL: time.Second, Owner: "t"}
	}
	for _, pt := range []keys.Pattern{
		p("lock:{type}:{id}", "id"),
		p("lock:file:{file_id}", "file_id"),        // alias of the above
		p("lock:queue:{type}:{id}", "id"),          // 4 segments
		p("lock:{type}:{id}:fence", "id"),          // collides with the queue when tags are off
		p("typing:{conv}:{user}", "conv"),          // 3 segments
		p("typing:throttle:{conv}:{user}", "conv"), // 4 segments
		p("x:{a}", ""),
		p("x:y", ""), // the value "y" spells it
	} {
		r.MustRegister(pt)
	}
	names := func(ov [][2]*keys.Template) []string {
		var out []string
		for _, o := range ov {
			out = append(out, o[0].String()+" ~ "+o[1].String())
		}
		return out
	}
	assert.ElementsMatch(t, []string{
		"lock:file:{file_id} ~ lock:{type}:{id}",
		"x:y ~ x:{a}",
	}, names(r.Overlaps(keys.Namespace{})))
	assert.ElementsMatch(t, []string{
		"lock:file:{file_id} ~ lock:{type}:{id}",
		"lock:queue:{type}:{id} ~ lock:{type}:{id}:fence",
		"x:y ~ x:{a}",
	}, names(r.Overlaps(keys.Namespace{NoHashTags: true})))
}

// failTypeHook fails the TYPE probe of one key inside pipelines, as a
// connection lost mid-pipeline would.
type failTypeHook struct{ key string }

func (failTypeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (failTypeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h failTypeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if a := c.Args(); c.Name() == "type" && len(a) == 2 && a[1] == h.key {
				c.SetErr(errors.New("broken pipe"))
			}
		}
		return err
	}
}

// A probe that fails for another reason than expiry fails the audit instead
// of counting the key without its TTL and type checks.
func TestAuditProbeFailure(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("the hook is installed on a standalone client")
	}
	ctx := e.Ctx()
	r, ts := testRegistry(t)
	c := redis.NewClient(&redis.Options{Addr: e.Addr})
	defer c.Close()
	var bad string
	for _, loc := range []string{"study", "hall"} {
		k, err := ts["sensor:motion:{location}"].Key(e.NS, loc)
		require.NoError(t, err)
		require.NoError(t, c.ZAdd(ctx, k, redis.Z{Score: 1, Member: "x"}).Err())
		bad = k
	}
	c.AddHook(failTypeHook{key: bad})
	_, err := r.Audit(ctx, c, keys.AuditOptions{Namespace: e.NS})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "broken pipe")
}

// A pattern written into another area's database too (AlsoIn: package
// cache's tag keys beside aimemory's cached entries) is listed with each
// database, and the audit accepts its keys in any of them and only there.
func TestAlsoIn(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := &keys.Registry{}
	tag, err := r.Register(keys.Pattern{Template: "cache:tag:{tag_name}", Type: keys.ZSet, TTLNote: "its members'", Tag: "tag_name",
		Owner: "cache", Area: keys.Cache, Purpose: "tag"})
	require.NoError(t, err)
	_, err = r.AlsoIn("cache:nope:{x}", keys.AIMemory)
	assert.ErrorIs(t, err, keys.ErrInvalid, "not registered")
	assert.Equal(t, []keys.Area{keys.Cache}, r.Areas(tag))
	for range 2 {
		got, err := r.AlsoIn("cache:tag:{tag_name}", keys.AIMemory)
		require.NoError(t, err)
		assert.Same(t, tag, got)
	}
	_, err = r.AlsoIn("cache:tag:{tag_name}", keys.Cache)
	require.NoError(t, err)
	assert.Equal(t, []keys.Area{keys.Cache, keys.AIMemory}, r.Areas(tag), "each area once, its own first")
	assert.Contains(t, r.Markdown(keys.TableOptions{Layout: keys.SeedLayout()}), "| `cache:tag:{{tag_name}}` | ZSET | its members' | 1, 4 | cache | tag |")

	k, err := tag.Key(e.NS, "ai-rag:u")
	require.NoError(t, err)
	require.NoError(t, e.Client.ZAdd(ctx, k, redis.Z{Score: 1, Member: "x"}).Err())
	require.NoError(t, e.Client.Expire(ctx, k, time.Hour).Err())
	for db, wrong := range map[int]int64{1: 0, 4: 0, 2: 1} {
		// The audit compares the database it is told with the layout's.
		rep, err := r.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS, Layout: keys.SeedLayout(), DB: db})
		require.NoError(t, err)
		assert.Equal(t, wrong, rep.Patterns[0].WrongDB, "DB %d", db)
		if wrong > 0 {
			assert.Equal(t, []string{`1 "cache:tag:{tag_name}" keys are outside DB 1 or 4`}, rep.Problems())
		}
	}
}
