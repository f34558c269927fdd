package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

// TestMain runs the command's main instead of the tests when
// REDSCHEMA_TEST_MAIN is set: execMain runs the test binary so, to see
// what a user sees (standard output, standard error, exit status).
func TestMain(m *testing.M) {
	if os.Getenv("REDSCHEMA_TEST_MAIN") == "1" {
		main()
	}
	redis.SetLogger(quietLogger{}) // as main does, for the tests that call run
	os.Exit(m.Run())
}

// execMain runs "redschema args..." in a process of its own.
func execMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "REDSCHEMA_TEST_MAIN=1", "REDIS_URL=", "REDSCHEMA_TOKEN=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), o.String(), e.String()
	}
	require.NoError(t, err)
	return 0, o.String(), e.String()
}

// cli runs "redschema args..." in this process.
func cli(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	var out bytes.Buffer
	code, err := run(context.Background(), args, &out)
	return code, out.String(), err
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// flagsListed returns the flags a usage text lists.
func flagsListed(usage string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// "redschema -h", "--help" and "help" list the commands; "help COMMAND",
// "COMMAND -h" and "COMMAND --help" list that command's flags and no
// other; all exit 0.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}} {
		code, out, err := cli(t, args...)
		require.NoError(t, err, args)
		assert.Equal(t, 0, code, args)
		for _, c := range []string{"schema", "audit", "inspect", "stats", "serve", "help", "version"} {
			assert.Regexp(t, `(?m)^  `+c+` `, out, "%v lists %s", args, c)
		}
	}
	want := map[string][]string{
		"schema":  {"config", "json", "layout", "no-tags", "owner", "prefix"},
		"audit":   {"all", "cluster", "config", "layout", "no-tags", "prefix", "url"},
		"inspect": {"cluster", "config", "json", "layout", "no-tags", "prefix", "url"},
		"stats":   {"cluster", "config", "largest", "layout", "no-tags", "owner", "prefix", "sample", "url"},
		"serve":   {"addr", "cluster", "config", "layout", "no-tags", "prefix", "refresh", "tls-cert", "tls-key", "token-file", "url", "write"},
		"help":    nil,
		"version": nil,
	}
	for name, flags := range want {
		for _, args := range [][]string{{"help", name}, {name, "-h"}, {name, "--help"}, {name, "-help"}} {
			code, out, err := cli(t, args...)
			require.NoError(t, err, args)
			assert.Equal(t, 0, code, args)
			assert.True(t, strings.HasPrefix(out, "usage: redschema "+name), "%v: %s", args, out)
			assert.Equal(t, flags, flagsListed(out), "%v lists %s's flags and only those", args, name)
		}
	}
	// Help of a command comes before its flags' checks: -h with bad or
	// foreign flags still helps.
	code, out, err := cli(t, "audit", "-prefix", "ha", "-h")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: redschema audit")

	for _, args := range [][]string{{"help", "nosuch"}, {"help", "audit", "serve"}} {
		code, _, err := cli(t, args...)
		assert.Equal(t, 2, code, args)
		assert.ErrorContains(t, err, "want one command of", args)
	}
}

// version and --version print the module version and the Go version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, err := cli(t, args...)
		require.NoError(t, err, args)
		assert.Equal(t, 0, code)
		assert.Regexp(t, `^redschema \S+ .*`+regexp.QuoteMeta(runtime.Version())+` `+runtime.GOOS+`/`+runtime.GOARCH+"\n$", out)
		assert.NotContains(t, out, "(unknown version) (unknown version)")
	}
	code, _, err := cli(t, "version", "extra")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "version takes no arguments")
}

// A flag of another command is an error naming the commands that take
// it; an unknown flag, command or argument is an error too. All exit 2.
func TestFlagsThatDoNotApply(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "-write"}, "-write does not apply to audit (it is a flag of serve;"},
		{[]string{"audit", "-url", "127.0.0.1:1", "-sample", "5"}, "-sample does not apply to audit (it is a flag of stats;"},
		{[]string{"schema", "-url", "redis://x"}, "-url does not apply to schema (it is a flag of audit, inspect, stats, serve;"},
		{[]string{"schema", "-refresh", "1s"}, "-refresh does not apply to schema (it is a flag of serve;"},
		{[]string{"inspect", "-all", "k"}, "-all does not apply to inspect (it is a flag of audit;"},
		{[]string{"stats", "-json"}, "-json does not apply to stats (it is a flag of schema, inspect;"},
		{[]string{"serve", "-owner", "lock"}, "-owner does not apply to serve (it is a flag of schema, stats;"},
		{[]string{"version", "-prefix", "ha:"}, "-prefix does not apply to version"},
		{[]string{"schema", "-bogus"}, `schema: flag provided but not defined: -bogus ("redschema help schema" lists its flags)`},
		{[]string{"stats", "-sample", "many"}, `invalid value "many" for flag -sample`},
		{[]string{"nope"}, `unknown command "nope": want one of schema, audit, inspect, stats, serve, help, version`},
		{[]string{"-prefix", "ha:", "audit"}, "-prefix before the command"},
		{[]string{"audit", "extra"}, `audit takes no arguments, got ["extra"]`},
		{[]string{"inspect", "-url", "127.0.0.1:1"}, "inspect needs a KEY"},
		{nil, "no command: want one of"},
	} {
		code, out, err := cli(t, tc.args...)
		assert.Equal(t, 2, code, tc.args)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
		assert.Empty(t, out, "%v: nothing on standard output", tc.args)
	}
}

// -prefix must end with a separator, -owner must name a package, -layout
// must be seed: each error names the valid choices.
func TestPrefixOwnerLayoutChecks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schema", "-prefix", "ha"}, `-prefix "ha" does not end with a separator: did you mean -prefix ha:?`},
		{[]string{"schema", "-prefix", "app1"}, `did you mean -prefix app1:?`},
		{[]string{"schema", "-prefix", "a{b:"}, "-prefix: keys: invalid namespace"},
		{[]string{"schema", "-owner", "nosuch"}, `-owner "nosuch": no such package; want one of aimemory, cache, chat, lock, metrics, presence, pubsub, queue, ratelimit, sensor, session`},
		{[]string{"stats", "-owner", "locks", "-url", "127.0.0.1:1"}, `-owner "locks": no such package`},
		{[]string{"schema", "-layout", "seeds"}, `-layout "seeds": want seed`},
		{[]string{"stats", "-sample", "-1", "-url", "127.0.0.1:1"}, "must not be negative"},
	} {
		code, _, err := cli(t, tc.args...)
		assert.Equal(t, 2, code, tc.args)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
	for _, p := range []string{"ha:", "ha.", "ha-", "ha/", ""} {
		code, _, err := cli(t, "schema", "-prefix", p, "-owner", "lock")
		assert.NoError(t, err, p)
		assert.Equal(t, 0, code, p)
	}
}

// -url takes a redis:// or rediss:// URL, host:port, or a list of
// host:port (a cluster), and says so for anything else.
func TestURLForms(t *testing.T) {
	for _, tc := range []struct {
		url     string
		addrs   []string
		db      int
		cluster bool
		tls     bool
	}{
		{"redis://127.0.0.1:6379/3", []string{"127.0.0.1:6379"}, 3, false, false},
		{"redis://user:pw@host:1", []string{"host:1"}, 0, false, false},
		{"rediss://host:6380/2", []string{"host:6380"}, 2, false, true},
		{"127.0.0.1:6461", []string{"127.0.0.1:6461"}, 0, false, false},
		{"[::1]:6379", []string{"[::1]:6379"}, 0, false, false},
		{"a:7001,b:7002", []string{"a:7001", "b:7002"}, 0, true, false},
		{" a:7001 , b:7002 ", []string{"a:7001", "b:7002"}, 0, true, false},
	} {
		o, err := parseURL("-url", tc.url)
		require.NoError(t, err, tc.url)
		assert.Equal(t, tc.addrs, o.Addrs, tc.url)
		assert.Equal(t, tc.db, o.DB, tc.url)
		assert.Equal(t, tc.cluster, o.IsClusterMode, tc.url)
		assert.Equal(t, tc.tls, o.TLSConfig != nil, tc.url)
		assert.True(t, o.ContextTimeoutEnabled, tc.url)
	}
	o, err := parseURL("-url", "redis://user:pw@host:1/0?dial_timeout=7s&client_name=ops")
	require.NoError(t, err)
	assert.Equal(t, "user", o.Username)
	assert.Equal(t, "pw", o.Password)
	assert.Equal(t, 7*time.Second, o.DialTimeout, "URL options are kept")
	assert.Equal(t, "ops", o.ClientName)

	for _, bad := range []string{"http://x", "unix:///tmp/redis.sock", "foo", "127.0.0.1", "host:port", "host:0", ":6379",
		"a:7001,foo", "redis://host/x", "redis://:s3cret@host:1/x"} {
		_, err := parseURL("-url", bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), urlForms, bad)
		assert.NotContains(t, err.Error(), "s3cret", "a password is never printed")
		assert.NotContains(t, err.Error(), "\n", bad)
	}
	_, err = parseURL("-url", "a:7001,foo")
	assert.ErrorContains(t, err, `"foo" is not host:port`)

	t.Setenv("REDIS_URL", "http://x")
	code, _, err := cli(t, "audit")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, `REDIS_URL http://x: scheme "http"`, "the variable is named")
	t.Setenv("REDIS_URL", "")
	code, _, err = cli(t, "audit")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "no Redis: give -url or set REDIS_URL")
	code, _, err = cli(t, "audit", "-url", "a:1", "-cluster", "b:2")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "-url and -cluster both given")
	code, _, err = cli(t, "audit", "-cluster", "nohost")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, `-cluster "nohost": want host:port,host:port,...`)
}

// Every command that talks to Redis reports a server it cannot reach in
// one line naming the address and the cause, exits 2, and go-redis's own
// log lines do not reach standard error.
func TestUnreachable(t *testing.T) {
	addr, other := closedAddr(t), closedAddr(t)
	for _, args := range [][]string{
		{"audit", "-url", addr},
		{"audit", "-url", "redis://" + addr + "/3"},
		{"audit", "-url", "redis://:s3cret@" + addr + "/0", "-layout", "seed"},
		{"inspect", "-url", addr, "presence:{1}"},
		{"stats", "-url", addr},
		{"serve", "-url", addr, "-addr", "127.0.0.1:0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel() // each waits out go-redis's dial retries
			code, stdout, stderr := execMain(t, args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "redschema: cannot reach "+addr+": connection refused\n", stderr)
		})
	}
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		code, _, stderr := execMain(t, "audit", "-url", addr+","+other)
		assert.Equal(t, 2, code)
		assert.Equal(t, "redschema: cannot reach cluster "+addr+","+other+": connection refused\n", stderr)
	})
	t.Run("in process", func(t *testing.T) {
		t.Parallel()
		// The same error for a program (or a test) that calls run.
		code, _, err := cli(t, "audit", "-url", addr)
		assert.Equal(t, 2, code)
		assert.EqualError(t, err, "cannot reach "+addr+": connection refused")
	})
}

// What a user sees of help, usage errors and problems: where it goes and
// the exit status.
func TestMainStreams(t *testing.T) {
	code, stdout, stderr := execMain(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "usage: redschema COMMAND")
	assert.Empty(t, stderr)

	code, stdout, stderr = execMain(t, "audit", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "usage: redschema audit")
	assert.NotContains(t, stdout+stderr, "flag: help requested")
	assert.Empty(t, stderr)

	code, stdout, stderr = execMain(t)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Regexp(t, "^redschema: no command: [^\n]*\n$", stderr)

	code, stdout, stderr = execMain(t, "audit", "-write")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Regexp(t, "^redschema: -write does not apply to audit [^\n]*\n$", stderr)

	code, stdout, stderr = execMain(t, "--version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "redschema "), stdout)
	assert.Empty(t, stderr)
}

// dbServer is a server with databases (REDIS_ADDR's, else miniredis) and
// a key prefix of the test's own; its keys in DBs 0 and 3 are deleted at
// the end.
func dbServer(t *testing.T) (addr, prefix string) {
	t.Helper()
	addr = os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = miniredis.RunT(t).Addr()
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix = "rsdb:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		for _, db := range []int{0, 3} {
			c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
			it := c.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 100).Iterator()
			for it.Next(ctx) {
				c.Del(ctx, it.Val())
			}
			_ = c.Close()
		}
	})
	return addr, prefix
}

// -url's database is the one audit, stats, inspect and serve work in, on
// miniredis and on a real server (REDIS_ADDR); -layout seed still spans
// DBs 0-7, the URL's database holding the areas seed 001 does not place.
func TestURLDatabase(t *testing.T) {
	addr, p := dbServer(t)
	ctx := context.Background()
	db0 := redis.NewClient(&redis.Options{Addr: addr, DB: 0})
	defer db0.Close()
	db3 := redis.NewClient(&redis.Options{Addr: addr, DB: 3})
	defer db3.Close()
	require.NoError(t, db3.Set(ctx, p+"presence:{42}", `{"status":"online"}`, time.Minute).Err())
	require.NoError(t, db3.Set(ctx, p+"lock:file:{a.pdf}", "o:1:60000", time.Minute).Err())
	require.NoError(t, db0.Set(ctx, p+"presence:{43}", `{"status":"online"}`, time.Minute).Err())
	url3 := "redis://" + addr + "/3"

	code, out, err := cli(t, "audit", "-url", url3, "-prefix", p)
	require.NoError(t, err)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "DB 3: 2 keys scanned under "+`"`+p+`"`)
	assert.Contains(t, out, "| `presence:{user_id}` | 1 |")
	assert.NotContains(t, out, "DB 0:")

	t.Setenv("REDIS_URL", url3)
	code, out, err = cli(t, "audit", "-prefix", p)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "DB 3: 2 keys scanned", "REDIS_URL's database too")
	t.Setenv("REDIS_URL", "")

	code, out, err = cli(t, "audit", "-url", addr, "-prefix", p)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "DB 0: 1 keys scanned", "host:port is DB 0")

	code, out, err = cli(t, "stats", "-url", url3, "-prefix", p)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "DB 3: 2 keys scanned")
	assert.Contains(t, out, "| `lock:file:{file_id}` | lock | 1 |")

	code, out, err = cli(t, "inspect", "-json", "-url", url3, "-prefix", p, p+"lock:file:{a.pdf}")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	var got []inspection
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 1)
	assert.Equal(t, 3, got[0].DB)
	assert.Equal(t, "lock:file:{file_id}", got[0].Pattern)

	code, _, err = cli(t, "inspect", "-url", url3, "-prefix", p, p+"presence:{43}")
	assert.Equal(t, 1, code)
	assert.ErrorIs(t, err, keys.ErrNotFound)
	assert.ErrorContains(t, err, `key "`+p+`presence:{43}" does not exist in DB 3`)

	// -layout seed: DBs 0-7; presence belongs in the URL's DB 3, locks in 6.
	code, out, err = cli(t, "audit", "-url", url3, "-prefix", p, "-layout", "seed")
	require.NoError(t, err)
	assert.Equal(t, 1, code, out)
	for db := range 8 {
		assert.Regexp(t, `(?m)^DB `+string(rune('0'+db))+`: `, out)
	}
	assert.Contains(t, out, `DB 3: 1 "lock:file:{file_id}" keys are outside DB 6`)
	assert.Contains(t, out, `DB 0: 1 "presence:{user_id}" keys are outside DB 3`)
	assert.NotContains(t, out, `DB 3: 1 "presence:{user_id}"`)

	cfg := serveAndConfig(t, "-url", url3)
	assert.Equal(t, []int{3}, cfg.DBs, "the dashboard serves the URL's database")
	cfg = serveAndConfig(t, "-url", url3, "-layout", "seed")
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, cfg.DBs)
}

// When most keys match no pattern, audit and stats name the flags under
// which they would.
func TestAuditHint(t *testing.T) {
	m := miniredis.RunT(t)
	for _, k := range []string{"ha:presence:{1}", "ha:presence:{2}", "ha:presence:{3}", "ha:stray"} {
		require.NoError(t, m.Set(k, `{"status":"online"}`))
		m.SetTTL(k, time.Minute)
	}
	url := "redis://" + m.Addr()
	code, out, err := cli(t, "audit", "-url", url)
	require.NoError(t, err)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `hint: DB 0: 4 of the 4 keys under -prefix "" match no pattern; did you mean -prefix ha:? (3 of the 4 unmatched keys examined match a pattern under it)`)

	code, out, err = cli(t, "stats", "-url", url)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "did you mean -prefix ha:?")

	code, out, err = cli(t, "audit", "-url", url, "-prefix", "ha:")
	require.NoError(t, err)
	assert.Equal(t, 1, code, "the stray key is a problem")
	assert.NotContains(t, out, "hint:", "most keys match")

	m2 := miniredis.RunT(t)
	for _, k := range []string{"presence:1", "presence:2"} { // the seeds' bytes: no hash tags
		require.NoError(t, m2.Set(k, `{"status":"online"}`))
	}
	code, out, err = cli(t, "audit", "-url", "redis://"+m2.Addr())
	require.NoError(t, err)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `did you mean -no-tags?`)

	m3 := miniredis.RunT(t)
	require.NoError(t, m3.Set("something:else", "x"))
	_, out, err = cli(t, "audit", "-url", "redis://"+m3.Addr())
	require.NoError(t, err)
	assert.Contains(t, out, "nor would they under a longer prefix or the other hash-tag setting")
}

// A key name is data any client may write: stats and inspect print one
// that holds a control character or invalid UTF-8 Go-quoted, so that a
// terminal escape sequence in it is shown, never obeyed by the
// operator's terminal.
func TestKeyNamesPrintedInert(t *testing.T) {
	m := miniredis.RunT(t)
	hostile := []string{"presence:\x1b]0;owned\x07", "session:\x1b[2J", "sensor:\xff\xfe"}
	for _, k := range hostile {
		require.NoError(t, m.Set(k, "x"))
	}
	require.NoError(t, m.Set("plain:key", "x"))
	code, out, err := cli(t, "stats", "-url", "redis://"+m.Addr())
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\xff")
	for _, k := range hostile {
		assert.Contains(t, out, "- "+strconv.Quote(k)+"\n")
	}
	assert.Contains(t, out, "- plain:key\n", "a printable key is printed as it is")

	assert.Equal(t, "`a\\|b`", shownCode("a|b"))
	assert.Equal(t, "`\"q:\\x1b\"`", shownCode("q:\x1b"))
	assert.Equal(t, "`` a`b ``", shownCode("a`b"))
	assert.Equal(t, "``` a``b`c ```", shownCode("a``b`c"))

	// a guessed prefix is a piece of a key name: a hint quotes it too
	assert.Equal(t, `-prefix "\x1bc:"`, change(keys.Namespace{}, keys.Namespace{Prefix: "\x1bc:"}))
	assert.Equal(t, `-prefix "\u009b2J:"`, change(keys.Namespace{}, keys.Namespace{Prefix: "\u009b2J:"}))
	assert.Equal(t, "-prefix ha:", change(keys.Namespace{}, keys.Namespace{Prefix: "ha:"}))
}
