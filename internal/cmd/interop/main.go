// Command interop is the interop tier: it proves that the library and the
// reference systems' own Node.js services can share one Redis during a
// migration. For every flow it runs each reference system's own
// JavaScript (interop/flows/<area>.js, the seed's snippets transcribed
// literally) with node-redis 4, node-redis 6 or ioredis 6, and the
// library's packages in the seed-compatible mode, on the same keys, in
// both directions: Node writes and the library reads and acts; the
// library writes and Node reads, and the Go side checks what Node saw.
//
// It prints one line per flow and Node client: PASS, DOCUMENTED (a
// divergence the package's docs page describes, with the reason), or FAIL
// (the error), then a summary, and exits 1 on any FAIL. A documented flow
// that passes prints PASS and a note to remove the documentation.
//
// It FLUSHes the database it is given (-db) before every flow: give it one
// of its own. It refuses database 0 unless -force.
//
//	cd interop && npm ci && cd ..
//	go run ./internal/cmd/interop -addr 127.0.0.1:6379 -db 15 [-run regexp]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/redis/go-redis/v9"
)

// flow is one interop check, run once per Node client.
type flow struct {
	seed       string                                  // "000".."004"
	name       string                                  // e.g. "metrics connections node->go"
	area       string                                  // the JS file under interop/flows
	clients    []string                                // the Node clients that run it ("redis4","redis6","ioredis6")
	documented string                                  // non-empty: an accepted divergence, its reason and the docs page saying so
	run        func(ctx context.Context, e *env) error // nil error = the flow holds
}

// env is what a flow runs with.
type env struct {
	rdb    *redis.Client // the tier's own DB, flushed before the flow
	client string        // the Node client: "redis4", "redis6" or "ioredis6"
	area   string
	run    nodeRunner
}

// nodeRunner runs one function of an area's flow file with a Node client
// and returns its stdout (one JSON line).
type nodeRunner func(ctx context.Context, client, area, fn string, params []byte) ([]byte, error)

// node runs fn of the flow's area with the env's client, passing params
// (JSON-encoded), and decodes the function's result into out (nil: ignored).
func (e *env) node(ctx context.Context, fn string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("node %s.%s: params: %w", e.area, fn, err)
	}
	stdout, err := e.run(ctx, e.client, e.area, fn, p)
	if err != nil {
		return fmt.Errorf("node %s.%s: %w", e.area, fn, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout), out); err != nil {
		return fmt.Errorf("node %s.%s: result %q: %w", e.area, fn, stdout, err)
	}
	return nil
}

// errDiverges marks the divergence a flow checks for: with documented set
// it is reported as DOCUMENTED; any other error, or a divergence of a flow
// that documents none, is a FAIL.
var errDiverges = errors.New("diverges")

// diverge reports that the two sides disagree on what the flow checks.
func diverge(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errDiverges, fmt.Sprintf(format, args...))
}

// The outcomes of a flow run.
const (
	pass       = "PASS"
	documented = "DOCUMENTED"
	fail       = "FAIL"
)

// classify turns a flow's result into its outcome and the text printed
// after it.
func classify(f flow, err error) (outcome, detail string) {
	switch {
	case err == nil && f.documented != "":
		return pass, "(documented divergence no longer seen: remove it from the flow and its docs page)"
	case err == nil:
		return pass, ""
	case f.documented != "" && errors.Is(err, errDiverges):
		return documented, "(" + f.documented + ")"
	default:
		return fail, err.Error()
	}
}

// allFlows lists every area's flows.
func allFlows() [][]flow {
	return [][]flow{
		sessionFlows(),
		ratelimitFlows(),
		presenceFlows(),
		chatFlows(),
		lockFlows(),
		metricsFlows(),
		sensorFlows(),
		queueFlows(),
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("interop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "the Redis server (standalone)")
	db := fs.Int("db", 15, "the database; FLUSHDB before every flow")
	force := fs.Bool("force", false, "allow -db 0")
	pattern := fs.String("run", "", "run only the flows whose \"seed name client\" matches this regexp")
	nodeBin := fs.String("node", "node", "the node binary")
	dir := fs.String("dir", "interop", "the interop directory (run.js, flows/, node_modules/)")
	timeout := fs.Duration("timeout", 30*time.Second, "the time limit of one flow")
	spawn := fs.Bool("spawn", false, "start node once per call (run.js's plain form) instead of once per client (--serve)")
	verbose := fs.Bool("v", false, "print the divergence a DOCUMENTED flow saw, under its line")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: interop [flags]\n\n"+
			"Runs the interop tier: the reference systems' own Node.js code (node-redis 4 and 6,\n"+
			"ioredis 6) and the library on the same keys, both ways. It FLUSHes -db before\n"+
			"every flow: give it a database of its own.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "interop: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *db == 0 && !*force {
		fmt.Fprintln(stderr, "interop: refusing -db 0 (every flow FLUSHes it): give a database of its own, or -force")
		return 2
	}
	var re *regexp.Regexp
	if *pattern != "" {
		var err error
		if re, err = regexp.Compile(*pattern); err != nil {
			fmt.Fprintf(stderr, "interop: -run: %v\n", err)
			return 2
		}
	}
	runJS, err := filepath.Abs(filepath.Join(*dir, "run.js"))
	if err == nil {
		_, err = os.Stat(runJS)
	}
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v (-dir names the interop directory)\n", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join(*dir, "node_modules")); err != nil {
		fmt.Fprintf(stderr, "interop: no %s/node_modules: run npm ci there first\n", *dir)
		return 2
	}

	rdb := redis.NewClient(&redis.Options{Addr: *addr, DB: *db, ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		fmt.Fprintf(stderr, "interop: %s: %v\n", *addr, err)
		return 2
	}
	n := &nodes{bin: *nodeBin, runJS: runJS, url: fmt.Sprintf("redis://%s/%d", *addr, *db), spawn: *spawn}
	defer n.close()

	start := time.Now()
	counts := map[string]int{}
	for _, area := range allFlows() {
		for _, f := range area {
			for _, client := range f.clients {
				if re != nil && !re.MatchString(f.seed+" "+f.name+" "+client) {
					continue
				}
				outcome, detail, err := runOne(ctx, rdb, f, client, n.run, *timeout)
				counts[outcome]++
				fmt.Fprintf(stdout, "%-10s seed %s  %-44s %-8s %s\n", outcome, f.seed, f.name, client, detail)
				if *verbose && outcome == documented {
					fmt.Fprintf(stdout, "           seen: %v\n", err)
				}
			}
		}
	}
	fmt.Fprintf(stdout, "interop: %d runs: %d pass, %d documented, %d fail (%.1fs)\n",
		counts[pass]+counts[documented]+counts[fail], counts[pass], counts[documented], counts[fail],
		time.Since(start).Seconds())
	if counts[fail] > 0 {
		return 1
	}
	return 0
}

// runOne flushes the DB and runs one flow with one client.
func runOne(ctx context.Context, rdb *redis.Client, f flow, client string, runner nodeRunner, timeout time.Duration) (outcome, detail string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return fail, "FLUSHDB: " + err.Error(), err
	}
	err = f.run(ctx, &env{rdb: rdb, client: client, area: f.area, run: runner})
	outcome, detail = classify(f, err)
	return outcome, detail, err
}
