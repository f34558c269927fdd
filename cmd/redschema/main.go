// Command redschema prints the library's Redis schema, audits a live
// Redis against it, explains any key and reports what the keyspace holds.
//
//	redschema schema  [-prefix ha:] [-no-tags] [-layout seed] [-owner session] [-json]
//	redschema audit   [-url redis://127.0.0.1:6379/0 | -url host:port,host:port] [-prefix ha:] [-no-tags] [-layout seed] [-all]
//	redschema inspect [-url ...] [-prefix ha:] [-no-tags] [-layout seed] [-json] KEY...
//	redschema stats   [-url ...] [-prefix ha:] [-no-tags] [-layout seed] [-owner lock] [-sample 1000] [-largest 10]
//	redschema serve   [-url ... | -cluster host:port,...] [-prefix ha:] [-no-tags] [-layout seed] [-addr 127.0.0.1:8080] [-write] [-token T] [-refresh 5s]
//
// Install it with "go install github.com/redschema/redschema/cmd/redschema@latest".
// -url defaults to $REDIS_URL. Flags may follow the keys.
//
// schema prints the Markdown table of every registered key pattern and
// channel (-json: a JSON array of keys.SchemaEntry, the same facts in
// fields, for programs). audit scans the keys under the prefix (SCAN, every master of a
// cluster) and prints, per pattern that has keys or problems (every
// pattern with -all), the key count, keys missing their TTL, keys of the
// wrong type, keys outside their area's database and the average memory
// of a sample, then the problems found; it exits 1 when there are
// problems. With -layout seed it audits every database of seed 001's
// allocation in one run (sessions 0, cache 1, queues 2, pub/sub 3, AI
// memory 4, rate limits 5, locks 6, metrics 7) and reports keys found in
// another area's database; on a cluster there is one database. Without
// -layout, audit, inspect and stats use DB 0 (the URL's database number
// is ignored, as Layout.Clients does).
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
// exits 1, naming the reason, for a key no pattern owns, a pub/sub channel
// (channels carry messages, not stored values), a missing key, a key of
// the wrong type or a value its package cannot decode; 2 for bad usage.
//
// stats scans like audit and prints, per database and per pattern with
// keys, the key count, memory (MEMORY USAGE of up to -sample keys per
// pattern; "~" marks an estimate from the sample), keys without their
// TTL and of the wrong type, then the keys matching no pattern and the
// -largest biggest keys probed. It is a report and exits 0; audit is the
// check.
//
// serve runs the web dashboard (package dashboard) on -addr
// (127.0.0.1:8080 by default) until interrupted: the schema with live
// counts, TTL health and a key browser, queues, sessions and users,
// refreshed every -refresh. It is read-only unless -write is given;
// actions then need the token (-token, or $REDSCHEMA_TOKEN, or one made
// up and printed in the URL) and are refused cross-site. A non-loopback
// -addr needs a token. Every action is logged to standard output.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	_ "github.com/redschema/redschema/internal/allpkgs" // every registering package
	"github.com/redschema/redschema/keys"
)

func main() {
	code, err := run(context.Background(), os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redschema:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, args []string, out io.Writer) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("usage: redschema schema|audit|inspect|stats|serve [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(out)
	prefix := fs.String("prefix", "", "key prefix (namespace), e.g. ha:")
	noTags := fs.Bool("no-tags", false, "keys without hash tags (byte-identical to the seeds)")
	layout := fs.String("layout", "", `"seed": seed 001's DB allocation (schema: a DB column; audit: every DB)`)
	owner := fs.String("owner", "", "only this package's patterns")
	all := fs.Bool("all", false, "audit: list every pattern, not only those with keys or problems")
	url := fs.String("url", os.Getenv("REDIS_URL"), "redis://... or a comma-separated cluster address list")
	asJSON := fs.Bool("json", false, "schema, inspect: print JSON instead of Markdown or text")
	sample := fs.Int("sample", 1000, "stats: keys per pattern probed with MEMORY USAGE (the rest estimated from them)")
	largest := fs.Int("largest", 10, "stats: how many of the biggest probed keys to list")
	cluster := fs.String("cluster", "", "serve: cluster node addresses, comma-separated (instead of -url)")
	addr := fs.String("addr", "127.0.0.1:8080", "serve: listen address")
	write := fs.Bool("write", false, "serve: enable actions (requeue, delete, revoke, block)")
	token := fs.String("token", os.Getenv("REDSCHEMA_TOKEN"), "serve: token the API and actions require")
	refresh := fs.Duration("refresh", 5*time.Second, "serve: page refresh interval")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2, err
	}
	ns := keys.Namespace{Prefix: *prefix, NoHashTags: *noTags}
	if err := ns.Validate(); err != nil {
		return 2, err
	}
	if len(pos) > 0 && args[0] != "inspect" {
		return 2, fmt.Errorf("%s takes no arguments, got %q", args[0], pos)
	}
	var lay keys.Layout
	if *layout == "seed" {
		lay = keys.SeedLayout()
	} else if *layout != "" {
		return 2, fmt.Errorf("unknown layout %q: want seed", *layout)
	}
	switch args[0] {
	case "schema":
		opt := keys.TableOptions{Namespace: ns, Owner: *owner, Layout: lay}
		if *asJSON {
			b, err := keys.Default().JSON(opt)
			if err != nil {
				return 2, err
			}
			fmt.Fprintf(out, "%s\n", b)
			return 0, nil
		}
		fmt.Fprint(out, keys.Default().Markdown(opt))
		return 0, nil
	case "inspect":
		if len(pos) == 0 {
			return 2, errors.New("usage: redschema inspect [flags] KEY [KEY ...] (full keys, prefix included)")
		}
		cs, err := openClients(*url, lay, args[0])
		if err != nil {
			return 2, err
		}
		defer cs.Close()
		return inspect(ctx, out, cs, ns, pos, *asJSON)
	case "stats":
		cs, err := openClients(*url, lay, args[0])
		if err != nil {
			return 2, err
		}
		defer cs.Close()
		return stats(ctx, out, cs, keys.AuditOptions{Namespace: ns, Sample: *sample, Largest: *largest}, *owner)
	case "serve":
		var cs *keys.Clients
		if *cluster != "" { // a cluster even when given one node
			if cs, err = lay.Clients(&redis.UniversalOptions{Addrs: strings.Split(*cluster, ","), IsClusterMode: true, ContextTimeoutEnabled: true}); err != nil {
				return 2, err
			}
		} else if cs, err = openClients(*url, lay, args[0]); err != nil {
			return 2, err
		}
		defer cs.Close()
		return serve(ctx, out, cs, ns, serveConfig{addr: *addr, write: *write, token: *token, refresh: *refresh})
	case "audit":
		cs, err := openClients(*url, lay, args[0])
		if err != nil {
			return 2, err
		}
		defer cs.Close()
		reps, err := keys.Default().AuditLayout(ctx, cs, keys.AuditOptions{Namespace: ns})
		if err != nil {
			return 2, err
		}
		var problems []string
		for _, r := range reps {
			table := r.Markdown()
			if *all {
				table = r.MarkdownAll()
			}
			fmt.Fprintf(out, "DB %d: %d keys scanned under %q\n\n%s\n", r.DB, r.Scanned, ns.Prefix, table)
			for _, p := range r.Problems() {
				problems = append(problems, fmt.Sprintf("DB %d: %s", r.DB, p))
			}
		}
		if len(problems) > 0 {
			fmt.Fprintf(out, "problems:\n- %s\n", strings.Join(problems, "\n- "))
			return 1, nil
		}
		fmt.Fprintln(out, "no problems")
		return 0, nil
	}
	return 2, fmt.Errorf("unknown command %q: want schema, audit, inspect, stats or serve", args[0])
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

// openClients connects to -url: one client per database of the layout
// (DB 0 alone without one; one client on a cluster), as audit does.
func openClients(url string, lay keys.Layout, cmd string) (*keys.Clients, error) {
	opts, err := clientOptions(url, cmd)
	if err != nil {
		return nil, err
	}
	return lay.Clients(opts)
}

// clientOptions turns -url into client options: a redis:// URL, or a
// comma-separated list of cluster nodes.
func clientOptions(url, cmd string) (*redis.UniversalOptions, error) {
	switch {
	case url == "":
		return nil, fmt.Errorf("%s needs -url or REDIS_URL", cmd)
	case strings.Contains(url, ",") && !strings.Contains(url, "://"):
		return &redis.UniversalOptions{Addrs: strings.Split(url, ","), IsClusterMode: true, ContextTimeoutEnabled: true}, nil
	}
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{
		Addrs: []string{o.Addr}, DB: o.DB, Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, ContextTimeoutEnabled: true,
	}, nil
}
