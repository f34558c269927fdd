// Command redschema prints the library's Redis schema and audits a live
// Redis against it.
//
//	redschema schema [-prefix ha:] [-no-tags] [-layout seed] [-owner session]
//	redschema audit  [-url redis://127.0.0.1:6379/0 | -url host:port,host:port] [-prefix ha:] [-no-tags]
//
// schema prints the Markdown table of every registered key pattern. audit
// scans the keys under the prefix (SCAN, every master of a cluster) and
// prints, per pattern, the key count, keys missing their TTL, keys of the
// wrong type and the average memory of a sample, then the problems found;
// it exits 1 when there are problems.
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

	"github.com/redschema/redschema/keys"
	_ "github.com/redschema/redschema/lock"
	_ "github.com/redschema/redschema/presence"
	_ "github.com/redschema/redschema/queue"
	_ "github.com/redschema/redschema/ratelimit"
	_ "github.com/redschema/redschema/session"
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
	layout := fs.String("layout", "", `"seed" adds seed 001's DB column`)
	owner := fs.String("owner", "", "only this package's patterns")
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
		c, err := connect(*url)
		if err != nil {
			return 2, err
		}
		defer c.Close()
		rep, err := keys.Default().Audit(ctx, c, keys.AuditOptions{Namespace: ns})
		if err != nil {
			return 2, err
		}
		fmt.Fprintf(out, "%d keys scanned under %q\n\n%s", rep.Scanned, ns.Prefix, rep.Markdown())
		if p := rep.Problems(); len(p) > 0 {
			fmt.Fprintf(out, "\nproblems:\n- %s\n", strings.Join(p, "\n- "))
			return 1, nil
		}
		return 0, nil
	}
	return 2, fmt.Errorf("unknown command %q: want schema or audit", args[0])
}

func connect(url string) (redis.UniversalClient, error) {
	switch {
	case url == "":
		return nil, errors.New("audit needs -url or REDIS_URL")
	case strings.Contains(url, ",") && !strings.Contains(url, "://"):
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(url, ",")}), nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}
