// Command redschema prints the library's Redis schema and audits a live
// Redis against it.
//
//	redschema schema [-prefix ha:] [-no-tags] [-layout seed] [-owner session]
//	redschema audit  [-url redis://127.0.0.1:6379/0 | -url host:port,host:port] [-prefix ha:] [-no-tags] [-layout seed] [-all]
//
// schema prints the Markdown table of every registered key pattern and
// channel. audit scans the keys under the prefix (SCAN, every master of a
// cluster) and prints, per pattern that has keys or problems (every
// pattern with -all), the key count, keys missing their TTL, keys of the
// wrong type, keys outside their area's database and the average memory
// of a sample, then the problems found; it exits 1 when there are
// problems. With -layout seed it audits every database of seed 001's
// allocation in one run (sessions 0, cache 1, queues 2, pub/sub 3, AI
// memory 4, rate limits 5, locks 6, metrics 7) and reports keys found in
// another area's database; on a cluster there is one database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

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
		return 2, errors.New("usage: redschema schema|audit [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(out)
	prefix := fs.String("prefix", "", "key prefix (namespace), e.g. ha:")
	noTags := fs.Bool("no-tags", false, "keys without hash tags (byte-identical to the seeds)")
	layout := fs.String("layout", "", `"seed": seed 001's DB allocation (schema: a DB column; audit: every DB)`)
	owner := fs.String("owner", "", "only this package's patterns")
	all := fs.Bool("all", false, "audit: list every pattern, not only those with keys or problems")
	url := fs.String("url", os.Getenv("REDIS_URL"), "redis://... or a comma-separated cluster address list")
	if err := fs.Parse(args[1:]); err != nil {
		return 2, err
	}
	ns := keys.Namespace{Prefix: *prefix, NoHashTags: *noTags}
	if err := ns.Validate(); err != nil {
		return 2, err
	}
	switch args[0] {
	case "schema":
		opt := keys.TableOptions{Namespace: ns, Owner: *owner}
		if *layout == "seed" {
			opt.Layout = keys.SeedLayout()
		}
		fmt.Fprint(out, keys.Default().Markdown(opt))
		return 0, nil
	case "audit":
		opts, err := clientOptions(*url)
		if err != nil {
			return 2, err
		}
		var lay keys.Layout
		if *layout == "seed" {
			lay = keys.SeedLayout()
		}
		cs := lay.Clients(opts)
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
	return 2, fmt.Errorf("unknown command %q: want schema or audit", args[0])
}

// clientOptions turns -url into client options: a redis:// URL, or a
// comma-separated list of cluster nodes.
func clientOptions(url string) (*redis.UniversalOptions, error) {
	switch {
	case url == "":
		return nil, errors.New("audit needs -url or REDIS_URL")
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
