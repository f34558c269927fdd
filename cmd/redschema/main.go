// Command redschema prints the library's Redis schema, audits a live
// Redis against it, explains any key and reports what the keyspace holds.
//
//	redschema schema  [-config app.json | -prefix ha: -no-tags -layout seed] [-owner session] [-json]
//	redschema audit   [-url URL] [-prefix ha:] [-no-tags] [-layout seed] [-all]
//	redschema inspect [-url URL] [-prefix ha:] [-no-tags] [-layout seed] [-json] KEY...
//	redschema stats   [-url URL] [-prefix ha:] [-no-tags] [-layout seed] [-owner lock] [-sample 1000] [-largest 10]
//	redschema serve   [-url URL] [-prefix ha:] [-no-tags] [-layout seed] [-addr 127.0.0.1:8080] [-write] [-token-file F] [-tls-cert F -tls-key F] [-refresh 5s]
//	redschema help [command]
//	redschema version
//
// Install it with "go install github.com/redschema/redschema/cmd/redschema@latest".
// "redschema help COMMAND", "redschema COMMAND -h" and "--help" print a
// command's flags (and only those); a flag that another command takes is
// an error here. Flags may follow the keys.
//
// -url names the Redis (default $REDIS_URL): "redis://host:port/db" (or
// "rediss://" for TLS, with go-redis's URL options) is one server and the
// database it names; "host:port" is one server, DB 0;
// "host:port,host:port,..." is a Redis Cluster reached through those
// nodes (-cluster host:port names a cluster through one node). Audit,
// inspect, stats and serve work in the URL's database; with -layout seed
// they work in seed 001's databases instead (sessions 0, cache 1,
// queues 2, pub/sub 3, AI memory 4, rate limits 5, locks 6, metrics 7),
// and the URL's database holds the areas seed 001 does not place
// (presence, chat, sensors, users), as keys.Layout.Clients does. A
// cluster has one database.
//
// -prefix is the key prefix the application uses (seed 000's "ha:"); it
// must end with a separator such as ':'. -config names the application's
// JSON config instead of -prefix, -no-tags and -layout: those three, and
// for serve what no flag can say (its chat tag, presence profile,
// limiters and interval jobs), so that each page shows that
// application's truth (docs/dashboard.md has the format). -owner is one package's name
// (session, presence, ratelimit, lock, queue, cache, metrics, chat,
// sensor, aimemory, pubsub).
//
// schema prints the Markdown table of every registered key pattern and
// channel (-json: a JSON array of objects, the same facts in fields, for
// programs; keys.Registry.JSON lists them).
//
// audit scans the keys under the prefix (SCAN, every master of a
// cluster) and prints, per pattern that has keys or problems (every
// pattern with -all), the key count, keys missing their TTL, keys of the
// wrong type, keys outside their area's database and the average memory
// of a sample, then the problems found; it exits 1 when there are
// problems. When most keys match no pattern it names the prefix (or
// hash-tag setting) under which they would ("did you mean -prefix ha:?").
//
// inspect explains each KEY (the full key, prefix included): the pattern
// and package that own it, its placeholder values, its Redis type and
// remaining TTL against the pattern's, and its value decoded by the
// owning package's decoder (each package registers one per pattern in its
// inspect.go, see keys.Decoder), which shows what the package's API would
// return: a queue job's envelope and payload, a session's fields, a lock's
// owner and lease, readings, messages. Collections show their length and
// first 100 elements. Nothing that grants access is printed: sessions
// never show their refresh-token digests. With -layout seed the key is
// read in its area's database. -json prints a JSON array instead. inspect
// exits 1, naming the reason, for a key that does not exist, a key no
// pattern owns, a pub/sub channel (channels carry messages, not stored
// values), a key of the wrong type or a value its package cannot decode.
//
// stats scans like audit and prints, per database and per pattern with
// keys, the key count, memory (MEMORY USAGE of up to -sample keys per
// pattern, 0 for none; "~" marks an estimate from the sample), keys
// without their TTL and of the wrong type, then the keys matching no
// pattern and the -largest biggest keys probed. It is a report and exits
// 0; audit is the check.
//
// serve runs the web dashboard (package dashboard) on -addr
// (127.0.0.1:8080 by default) until interrupted: the schema with live
// counts, TTL health and a key browser, queues, sessions and users,
// refreshed every -refresh. It is read-only unless -write is given;
// actions then need the token (the first line of -token-file, or
// $REDSCHEMA_TOKEN, or one made up and printed in the URL: only a made-up
// token is printed, and a token is never a flag, which ps would show)
// and are refused cross-site. A non-loopback -addr needs a token of at
// least 16 characters, and should have -tls-cert and -tls-key (HTTPS):
// without them the token crosses the network in clear. Every action is
// logged to standard output with the token's fingerprint.
//
// version prints the module version and the commit it was built from, as
// the Go toolchain recorded them ("(devel)" for a build from a checkout).
//
// Exit status: 0 when the command did its work, 1 for problems found
// (audit) or keys that cannot be explained (inspect), 2 for bad usage or
// a Redis that cannot be reached. Errors are one line on standard error,
// "redschema: ..."; go-redis's own log lines are silenced.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

func main() {
	redis.SetLogger(quietLogger{}) // connection trouble is reported once, by run
	code, err := run(context.Background(), os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redschema:", err)
	}
	os.Exit(code)
}

// quietLogger drops go-redis's log lines (a failed dial logs one per
// attempt, on top of the error the command reports).
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// command is one subcommand: its name, what it takes and its help.
type command struct {
	name  string
	args  string   // its positional arguments, for the usage line
	flags []string // the flags it takes
	short string   // one line for the command list
	long  string   // a paragraph for "redschema help NAME"
}

// connFlags returns the flags of the commands that talk to Redis, and
// more.
func connFlags(more ...string) []string {
	return append([]string{"url", "cluster", "config", "prefix", "no-tags", "layout"}, more...)
}

var commands = []command{
	{name: "schema", flags: []string{"config", "prefix", "no-tags", "layout", "owner", "json"},
		short: "print every key pattern and channel (Markdown, or -json)",
		long: "Prints the Markdown table of every registered key pattern and channel: key, type, TTL,\n" +
			"package and purpose (a DB column with -layout seed). -json prints a JSON array of\n" +
			"objects, the same facts in fields (keys.Registry.JSON lists them)."},
	{name: "audit", flags: connFlags("all"),
		short: "check a live keyspace against the schema; exit 1 on problems",
		long: "Scans the keys under -prefix (SCAN, every master of a cluster) and prints, per pattern\n" +
			"with keys or problems, the key count, keys missing their TTL, keys of the wrong type,\n" +
			"keys outside their area's database and their average memory, then the problems found.\n" +
			"Exits 1 when there are problems. When most keys match no pattern it names the -prefix\n" +
			"under which they would."},
	{name: "inspect", args: "KEY...", flags: connFlags("json"),
		short: "explain keys: owner, placeholders, type, TTL, decoded value",
		long: "Explains each KEY (the full key, prefix included): the pattern and package that own it,\n" +
			"its placeholder values, its type and TTL against the pattern's, and its value as the\n" +
			"owning package reads it. Exits 1 for a key that does not exist, that no pattern owns,\n" +
			"or whose value does not decode."},
	{name: "stats", flags: connFlags("owner", "sample", "largest"),
		short: "keys, memory and TTL health per pattern",
		long: "Scans like audit and prints, per database and pattern, the key count, memory (measured\n" +
			"on -sample keys per pattern, the rest estimated), keys without their TTL or of the wrong\n" +
			"type, the keys matching no pattern and the -largest biggest keys. Exits 0: audit is the\n" +
			"check."},
	{name: "serve", flags: connFlags("addr", "write", "token-file", "tls-cert", "tls-key", "refresh"),
		short: "run the web dashboard",
		long: "Runs the web dashboard on -addr until interrupted: the schema with live counts, TTL\n" +
			"health and a key browser, queues, sessions and users. Read-only unless -write; actions\n" +
			"then need the token (-token-file, $REDSCHEMA_TOKEN, or one made up and printed in the\n" +
			"URL). A non-loopback -addr needs a token of 16 characters or more, and -tls-cert and\n" +
			"-tls-key to keep it off the wire in clear."},
	{name: "help", args: "[COMMAND]", short: "show the commands, or one command's flags",
		long: "Prints the list of commands, or what COMMAND does and the flags it takes."},
	{name: "version", short: "print the version", long: "Prints the module version and the commit it was built from."},
}

func lookup(name string) (*command, bool) {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i], true
		}
	}
	return nil, false
}

// options are the values of every flag; each command reads its own.
type options struct {
	prefix, layout, owner, url, cluster, addr string
	tokenFile, tlsCert, tlsKey, config        string
	noTags, all, asJSON, write                bool
	sample, largest                           int
	refresh                                   time.Duration
}

// define adds to fs the flags keep accepts (every flag for nil), bound to
// o.
func (o *options) define(fs *flag.FlagSet, keep func(string) bool) {
	str := func(p *string, name, def, usage string) {
		if keep == nil || keep(name) {
			fs.StringVar(p, name, def, usage)
		}
	}
	boolean := func(p *bool, name, usage string) {
		if keep == nil || keep(name) {
			fs.BoolVar(p, name, false, usage)
		}
	}
	integer := func(p *int, name string, def int, usage string) {
		if keep == nil || keep(name) {
			fs.IntVar(p, name, def, usage)
		}
	}
	duration := func(p *time.Duration, name string, def time.Duration, usage string) {
		if keep == nil || keep(name) {
			fs.DurationVar(p, name, def, usage)
		}
	}
	str(&o.url, "url", "", "the Redis: redis://host:port/db, rediss://..., host:port, or host:port,host:port,...\n(a cluster); default $REDIS_URL")
	str(&o.cluster, "cluster", "", "a cluster's node addresses, comma-separated (one is enough), instead of -url")
	str(&o.config, "config", "", "the application's JSON config: prefix, hash tags, layout, and for serve its chat tag,\npresence profile, limiters and interval jobs (docs/dashboard.md); instead of -prefix,\n-no-tags and -layout")
	str(&o.prefix, "prefix", "", "the key prefix, ending with a separator, e.g. ha:")
	boolean(&o.noTags, "no-tags", "keys without hash tags (byte-identical to the seeds)")
	str(&o.layout, "layout", "", `"seed": seed 001's databases (sessions 0, cache 1, queues 2, pub/sub 3, AI memory 4,`+
		"\nrate limits 5, locks 6, metrics 7)")
	str(&o.owner, "owner", "", "only this package's patterns: "+strings.Join(owners(), ", "))
	boolean(&o.all, "all", "list every pattern, not only those with keys or problems")
	boolean(&o.asJSON, "json", "print JSON")
	integer(&o.sample, "sample", 1000, "keys per pattern probed with MEMORY USAGE, the rest estimated from them (0: none)")
	integer(&o.largest, "largest", 10, "how many of the biggest probed keys to list")
	str(&o.addr, "addr", "127.0.0.1:8080", "listen address")
	boolean(&o.write, "write", "enable actions (requeue, delete, revoke, block)")
	str(&o.tokenFile, "token-file", "", "a file whose first line is the token the API and actions require;\ndefault $REDSCHEMA_TOKEN")
	str(&o.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (with -tls-key)")
	str(&o.tlsKey, "tls-key", "", "the PEM private key of -tls-cert")
	duration(&o.refresh, "refresh", 5*time.Second, "page refresh interval")
}

// owners returns the packages that own patterns, sorted.
func owners() []string {
	seen := map[string]bool{}
	for _, t := range library().Templates() {
		seen[t.Pattern().Owner] = true
	}
	out := make([]string, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// usage prints the command list.
func usage(w io.Writer) {
	fmt.Fprint(w, "redschema prints redschema's Redis schema, audits a live Redis against it,\n"+
		"explains any key and reports what the keyspace holds.\n\n"+
		"usage: redschema COMMAND [flags] [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s  %s\n", c.name, c.short)
	}
	fmt.Fprint(w, "\n\"redschema help COMMAND\" (or \"redschema COMMAND -h\") lists a command's flags.\n"+
		"-url (default $REDIS_URL) takes redis://host:port/db, rediss://..., host:port, or\n"+
		"host:port,host:port,... for a cluster.\n"+
		"Exit status: 0 done, 1 problems found (audit) or keys not explained (inspect),\n"+
		"2 bad usage or Redis unreachable.\n")
}

// commandUsage prints what c does and its flags.
func commandUsage(w io.Writer, c *command) {
	line := "redschema " + c.name
	if len(c.flags) > 0 {
		line += " [flags]"
	}
	if c.args != "" {
		line += " " + c.args
	}
	fmt.Fprintf(w, "usage: %s\n\n%s\n", line, c.long)
	if len(c.flags) == 0 {
		return
	}
	fmt.Fprint(w, "\nflags:\n")
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	new(options).define(fs, func(name string) bool { return contains(c.flags, name) })
	fs.PrintDefaults()
}

// run runs the command line args (without the program's name), writing
// its output to out, and returns the exit status and the error main
// prints on standard error.
func run(ctx context.Context, args []string, out io.Writer) (int, error) {
	if len(args) == 0 {
		return 2, errors.New(`no command: want one of schema, audit, inspect, stats, serve, help, version ("redschema help" describes them)`)
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name, args = "help", args[1:]
	case "-version", "--version":
		name, args = "version", args[1:]
	default:
		args = args[1:]
	}
	c, ok := lookup(name)
	if !ok {
		if strings.HasPrefix(name, "-") {
			return 2, fmt.Errorf(`%s before the command: the command comes first, then its flags ("redschema help" lists the commands)`, name)
		}
		return 2, fmt.Errorf(`unknown command %q: want one of schema, audit, inspect, stats, serve, help, version ("redschema help" describes them)`, name)
	}
	o, pos, code, err := parseFlags(c, args, out)
	if o == nil {
		return code, err
	}
	if c.args == "" && len(pos) > 0 {
		return 2, fmt.Errorf("%s takes no arguments, got %q", c.name, pos)
	}
	switch c.name {
	case "help":
		if len(pos) == 0 {
			usage(out)
			return 0, nil
		}
		h, ok := lookup(pos[0])
		if !ok || len(pos) > 1 {
			return 2, fmt.Errorf(`help %s: want one command of schema, audit, inspect, stats, serve, help, version`, strings.Join(pos, " "))
		}
		commandUsage(out, h)
		return 0, nil
	case "version":
		fmt.Fprintln(out, version())
		return 0, nil
	}

	var app *appConfig
	if o.config != "" {
		if o.prefix != "" || o.noTags || o.layout != "" {
			return 2, errors.New("-config gives the prefix, hash-tag setting and layout: drop -prefix, -no-tags and -layout, or -config")
		}
		if app, err = readConfig(o.config); err != nil {
			return 2, err
		}
		o.prefix, o.noTags, o.layout = app.Prefix, app.NoHashTags, app.Layout
	}
	ns := keys.Namespace{Prefix: o.prefix, NoHashTags: o.noTags}
	if err := checkPrefix(ns); err != nil {
		return 2, err
	}
	var lay keys.Layout
	switch o.layout {
	case "":
	case "seed":
		lay = keys.SeedLayout()
	default:
		return 2, fmt.Errorf("-layout %q: want seed (seed 001's databases) or none", o.layout)
	}
	if o.owner != "" && !contains(owners(), o.owner) {
		return 2, fmt.Errorf("-owner %q: no such package; want one of %s", o.owner, strings.Join(owners(), ", "))
	}
	if o.sample < 0 || o.largest < 0 {
		return 2, fmt.Errorf("-sample and -largest must not be negative (got %d, %d)", o.sample, o.largest)
	}

	if c.name == "schema" {
		return schema(out, keys.TableOptions{Namespace: ns, Owner: o.owner, Layout: lay}, o.asJSON)
	}
	if c.name == "inspect" && len(pos) == 0 {
		return 2, errors.New(`inspect needs a KEY, the full key with its prefix ("redschema help inspect")`)
	}
	cs, err := connect(ctx, o, lay)
	if err != nil {
		return 2, err
	}
	defer cs.Close()
	switch c.name {
	case "audit":
		code, err = audit(ctx, out, cs, ns, o.all)
	case "inspect":
		code, err = inspect(ctx, out, cs, ns, pos, o.asJSON)
	case "stats":
		sample := o.sample
		if sample == 0 {
			sample = -1 // keys.AuditOptions: negative disables the probe
		}
		code, err = stats(ctx, out, cs, keys.AuditOptions{Namespace: ns, Sample: sample, Largest: o.largest}, o.owner)
	default: // serve: its errors are the listener's, not Redis's
		token, from, err := readToken(o.tokenFile)
		if err != nil {
			return 2, err
		}
		cfg := serveConfig{addr: o.addr, write: o.write, token: token, from: from,
			refresh: o.refresh, tlsCert: o.tlsCert, tlsKey: o.tlsKey}
		if app != nil {
			opts, lims, err := app.dashboardOptions(cs, ns)
			if err != nil {
				return 2, fmt.Errorf("-config %s: %v", o.config, err)
			}
			defer func() {
				for _, l := range lims {
					_ = l.Close()
				}
			}()
			cfg.app = opts
		}
		return serve(ctx, out, cs, ns, cfg)
	}
	return code, shorten(err, cs)
}

// parseFlags parses c's flags from args and returns the options and the
// positional arguments; a nil options means run returns code and err:
// 0 after -h (c's usage printed to out), 2 for a bad flag.
func parseFlags(c *command, args []string, out io.Writer) (*options, []string, int, error) {
	o := &options{}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o.define(fs, nil) // every flag, so that another command's is named as such
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(out, c)
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 2, fmt.Errorf(`%s: %v ("redschema help %s" lists its flags)`, c.name, err, c.name)
	}
	var wrong error
	fs.Visit(func(f *flag.Flag) {
		if wrong == nil && !contains(c.flags, f.Name) {
			var takers []string
			for _, o := range commands {
				if contains(o.flags, f.Name) {
					takers = append(takers, o.name)
				}
			}
			wrong = fmt.Errorf(`-%s does not apply to %s (it is a flag of %s; "redschema help %s" lists %s's flags)`,
				f.Name, c.name, strings.Join(takers, ", "), c.name, c.name)
		}
	})
	if wrong != nil {
		return nil, nil, 2, wrong
	}
	return o, pos, 0, nil
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments ("inspect KEY -url ..."), and returns those.
// A lone "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// checkPrefix refuses a prefix the library refuses, and one that does not
// end with a separator: "ha" for "ha:" would match no key of any pattern.
func checkPrefix(ns keys.Namespace) error {
	if err := ns.Validate(); err != nil {
		return fmt.Errorf("-prefix: %w", err)
	}
	p := ns.Prefix
	if p == "" {
		return nil
	}
	if last := p[len(p)-1]; last >= 'a' && last <= 'z' || last >= 'A' && last <= 'Z' || last >= '0' && last <= '9' {
		return fmt.Errorf(`-prefix %q does not end with a separator: did you mean -prefix %s:? (a prefix ends with ':' or another separator such as '.', '-', '_' or '/'; -prefix "" is none)`, p, p)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// schema prints the schema table, or its JSON.
func schema(out io.Writer, opt keys.TableOptions, asJSON bool) (int, error) {
	if asJSON {
		b, err := library().JSON(opt)
		if err != nil {
			return 2, err
		}
		fmt.Fprintf(out, "%s\n", b)
		return 0, nil
	}
	fmt.Fprint(out, library().Markdown(opt))
	return 0, nil
}

// library is the registry of every package's patterns, composed once from
// dashboard.Schemas: what audit, inspect, schema, stats and serve know.
var library = sync.OnceValue(func() *keys.Registry {
	r, err := keys.Compose(dashboard.Schemas()...)
	if err != nil {
		panic(err) // two packages declare the same pattern: the tests catch it
	}
	return r
})
