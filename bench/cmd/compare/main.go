// Command compare regenerates bench/RESULTS.md: it starts a Redis of its
// own (with -cluster, a 3-master Redis Cluster too), runs the benchmarks
// of every ours/peer pair n times, and prints per pair the median ratio of
// throughput (peer ns/op ÷ ours) with its min–max over the runs, the round
// trips per operation, the allocations, and the Redis CPU time per
// operation of each side (INFO cpu of the private servers, which nothing
// else uses).
//
//	cd bench && go run ./cmd/compare                   # 5 runs, 2s each, standalone
//	cd bench && go run ./cmd/compare -cluster -n 5     # and the cluster rows
//	cd bench && go run ./cmd/compare -out RESULTS.md   # rewrite the results file
//	cd bench && go run ./cmd/compare -append -out RESULTS-goals.md  # add this run's tables
//
// The header and every table's heading name the host (CPU model, kernel,
// CPUs) and the date, so that results from different hosts can be told
// apart; -append adds a run's tables to the end of -out instead of
// rewriting it, one section per run.
//
// Each run executes every benchmark once, ours and the peer's back to
// back, so that both see the same load; the runs repeat that n times.
// Ratios from the same run are what count on a shared, noisy machine: the
// median over runs, with its spread, is what the table reports.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 5, "runs")
	benchtime := flag.String("benchtime", "2s", "go test -benchtime of each benchmark")
	cluster := flag.Bool("cluster", false, "also run every pair on a 3-master cluster")
	only := flag.String("only", "", "regexp: keep the rows whose operation matches")
	out := flag.String("out", "", "write the Markdown report to this file (default: stdout)")
	appendOut := flag.Bool("append", false, "add the report to the end of -out (one section per run) instead of rewriting it")
	server := flag.String("redis-server", "redis-server", "the redis-server binary")
	rbench := flag.String("redis-benchmark", "redis-benchmark", "the redis-benchmark binary (the saturation rows' limit)")
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config{runs: *n, benchtime: *benchtime, server: *server, rbench: *rbench}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fail(err)
		}
		cfg.only = re
	}
	rep, err := compare(ctx, cfg, *cluster)
	if err != nil {
		fail(err)
	}
	w := io.Writer(os.Stdout)
	continued := false
	if *out != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if *appendOut {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
			if st, err := os.Stat(*out); err == nil && st.Size() > 0 {
				continued = true
			}
		}
		f, err := os.OpenFile(*out, flags, 0o644)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		w = f
	}
	rep.write(w, continued)
	if !rep.met() {
		fmt.Fprintln(os.Stderr, "compare: some rows miss their goal (see the table)")
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(1)
}

type config struct {
	runs      int
	benchtime string
	server    string
	rbench    string
	only      *regexp.Regexp
}

// row is one line of the summary: our benchmark against a peer's.
type row struct {
	op, peer    string
	ours, their string  // benchmark names without the -GOMAXPROCS suffix
	goal        float64 // the median ratio the row must reach
	noPeer      string  // why the peer's side may not run (on a cluster), if it may not
	// sat > 0 makes a saturation row: the peer is redis-benchmark at
	// -c sat -P 16 running satScript's EVALSHA on the standalone server
	// in the same run (their is satName(sat)), the ratio is our rate as
	// a fraction of that limit, and only the ratio is judged.
	sat int
}

// backend is where one set of runs went.
type backend struct {
	name    string
	addr    string   // a standalone server's address, "" for a cluster
	env     []string // REDIS_ADDR=... or REDIS_CLUSTER_ADDRS=...
	version string
	runs    []map[string]result // per run: benchmark name -> result
}

type result map[string]float64 // unit -> value, e.g. "ns/op" -> 12345

type report struct {
	cfg      config
	rows     []row
	backends []*backend
	started  time.Time
	goVer    string
	command  string
	host     host
}

func compare(ctx context.Context, cfg config, withCluster bool) (*report, error) {
	rep := &report{cfg: cfg, started: time.Now().UTC(), command: "cd bench && go run ./cmd/compare " + strings.Join(os.Args[1:], " ")}
	for _, r := range rows {
		if cfg.only == nil || cfg.only.MatchString(r.op) {
			rep.rows = append(rep.rows, r)
		}
	}
	if len(rep.rows) == 0 {
		return nil, errors.New("no row matches -only")
	}
	v, _ := exec.Command("go", "version").Output()
	rep.goVer = strings.TrimSpace(string(v))
	rep.host = thisHost()
	dir, err := os.MkdirTemp("", "compare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bench.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the benchmarks: %w", err)
	}
	sa, stop, err := startServers(ctx, cfg.server, dir, 1)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep.backends = append(rep.backends, &backend{name: "standalone", addr: sa[0], env: []string{"REDIS_ADDR=" + sa[0]}, version: serverVersion(sa[0])})
	if withCluster {
		ca, stopc, err := startCluster(ctx, cfg.server, dir)
		if err != nil {
			return nil, err
		}
		defer stopc()
		rep.backends = append(rep.backends, &backend{name: "3-master cluster", env: []string{"REDIS_CLUSTER_ADDRS=" + strings.Join(ca, ",")}, version: serverVersion(ca[0])})
	}
	pattern := benchPattern(rep.rows)
	for i := 0; i < cfg.runs; i++ {
		for _, b := range rep.backends {
			fmt.Fprintf(os.Stderr, "compare: run %d/%d on %s\n", i+1, cfg.runs, b.name)
			res, err := runOnce(ctx, bin, b.env, pattern, cfg.benchtime)
			if err != nil {
				return nil, err
			}
			if b.addr != "" {
				if err := hostCosts(ctx, cfg.rbench, b.addr, res); err != nil {
					return nil, err
				}
				for _, c := range satClients(rep.rows) {
					r, err := saturate(ctx, cfg.rbench, b.addr, c, cfg.benchtime)
					if err != nil {
						return nil, err
					}
					res[satName(c)] = r
				}
			}
			b.runs = append(b.runs, res)
		}
	}
	return rep, nil
}

// benchPattern is the -test.bench regexp of the top-level benchmarks the
// rows need (all their sub-benchmarks run).
func benchPattern(rs []row) string {
	seen := map[string]bool{}
	var tops []string
	for _, r := range rs {
		for _, name := range []string{r.ours, r.their} {
			if strings.HasPrefix(name, satPrefix) {
				continue // not a go benchmark
			}
			top := strings.SplitN(strings.TrimPrefix(name, "Benchmark"), "/", 2)[0]
			if !seen[top] {
				seen[top] = true
				tops = append(tops, regexp.QuoteMeta(top))
			}
		}
	}
	sort.Strings(tops)
	return "^Benchmark(" + strings.Join(tops, "|") + ")$"
}

var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// runOnce runs the benchmark binary once and parses its results.
func runOnce(ctx context.Context, bin string, env []string, pattern, benchtime string) (map[string]result, error) {
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime, "-test.benchmem", "-test.timeout", "60m")
	cmd.Dir = "."
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		os.Stderr.Write(out.Bytes())
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	res := map[string]result{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		r := result{}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				r[f[i+1]] = v
			}
		}
		res[m[1]] = r
	}
	return res, sc.Err()
}

// startServers starts n standalone Redis servers on free loopback ports,
// keeping nothing on disk, with extra arguments; stop shuts them down.
func startServers(ctx context.Context, server, dir string, n int, extra ...string) ([]string, func(), error) {
	var addrs []string
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for i := 0; i < n; i++ {
		port, err := freePort()
		if err != nil {
			stop()
			return nil, nil, err
		}
		d := filepath.Join(dir, "redis-"+strconv.Itoa(port))
		if err := os.MkdirAll(d, 0o755); err != nil {
			stop()
			return nil, nil, err
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", d}, extra...)
		c := exec.CommandContext(ctx, server, args...)
		if err := c.Start(); err != nil {
			stop()
			return nil, nil, fmt.Errorf("starting %s: %w", server, err)
		}
		cmds = append(cmds, c)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitPing(addr); err != nil {
			stop()
			return nil, nil, err
		}
		addrs = append(addrs, addr)
	}
	return addrs, stop, nil
}

func startCluster(ctx context.Context, server, dir string) ([]string, func(), error) {
	addrs, stop, err := startServers(ctx, server, dir, 3, "--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		stop()
		return nil, nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		for !strings.Contains(info(a, "cluster", "info"), "cluster_state:ok") {
			if time.Now().After(deadline) {
				stop()
				return nil, nil, fmt.Errorf("cluster not ok on %s", a)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs, stop, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitPing(addr string) error {
	for i := 0; i < 100; i++ {
		if strings.TrimSpace(info(addr, "ping")) == "PONG" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no Redis answers on %s", addr)
}

// info runs redis-cli against addr and returns its output.
func info(addr string, args ...string) string {
	host, port, _ := net.SplitHostPort(addr)
	out, _ := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).Output()
	return string(out)
}

func serverVersion(addr string) string {
	for _, l := range strings.Split(info(addr, "info", "server"), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// summary is one row's figures over the runs of one backend.
type summary struct {
	ratio, lo, hi           float64 // median, min, max of peer ns/op ÷ ours
	trips                   float64 // ours, median
	allocsOurs, allocsTheir float64
	cpuOurs, cpuTheir       float64 // redis µs/op, medians
	selfOurs, selfTheir     float64 // client µs/op, medians
	nsOurs, nsTheir         float64
	runs                    int
}

func (b *backend) summarize(r row) (summary, bool) {
	var ratios, trips, ao, at, co, ct, so, st, no, nt []float64
	for _, run := range b.runs {
		o, ok1 := run[r.ours]
		t, ok2 := run[r.their]
		if !ok1 || !ok2 || o["ns/op"] == 0 {
			continue
		}
		ratios = append(ratios, t["ns/op"]/o["ns/op"])
		trips = append(trips, o["trips/op"])
		ao, at = append(ao, o["allocs/op"]), append(at, t["allocs/op"])
		co, ct = append(co, o["redis-us/op"]), append(ct, t["redis-us/op"])
		so, st = append(so, o["client-us/op"]), append(st, t["client-us/op"])
		no, nt = append(no, o["ns/op"]), append(nt, t["ns/op"])
	}
	if len(ratios) == 0 {
		return summary{}, false
	}
	s := summary{ratio: median(ratios), trips: median(trips), allocsOurs: median(ao), allocsTheir: median(at),
		cpuOurs: median(co), cpuTheir: median(ct), selfOurs: median(so), selfTheir: median(st), nsOurs: median(no), nsTheir: median(nt), runs: len(ratios)}
	s.lo, s.hi = minmax(ratios)
	return s, true
}

// meets reports whether a row reaches its goal: the median ratio, and a
// Redis CPU time per operation no higher than the peer's (for a goal
// below 1, no higher than the peer's divided by the goal: a goal of 0.5
// allows twice the peer's) where the peer uses Redis on that path at all
// (0.05 µs/op: noise). A saturation row is judged on its ratio alone.
func (s summary) meets(r row) bool {
	return s.ratio >= r.goal && (r.sat > 0 || s.cpuTheir < 0.05 || s.cpuOurs*min(r.goal, 1) <= s.cpuTheir)
}

// num formats a positive figure with three significant digits.
func num(f float64) string {
	if f >= 100 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minmax(v []float64) (float64, float64) {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// met reports whether every row that ran meets its goal on every backend,
// in throughput and in Redis CPU per operation.
func (r *report) met() bool {
	for _, b := range r.backends {
		for _, row := range r.rows {
			s, ok := b.summarize(row)
			if ok && row.goal > 0 && !s.meets(row) {
				return false
			}
		}
	}
	return true
}

func (r *report) write(w io.Writer, continued bool) {
	when := r.started.Format("2006-01-02 15:04 UTC")
	if continued {
		// A later run's section: its own heading; the legend is the
		// file's first section's.
		fmt.Fprintf(w, "\n---\n\n# Run of %s on %s\n\n", when, r.host)
	} else {
		fmt.Fprintf(w, "# Benchmark results\n\n")
	}
	fmt.Fprintf(w, "Generated by `%s` on %s (%s, %d CPUs, %s, %s), %d runs of `-benchtime %s` each; the benchmarks are bench/*_test.go.\n\n",
		strings.TrimSpace(r.command), when, r.host, runtime.NumCPU(), runtime.GOARCH, r.goVer, r.cfg.runs, r.cfg.benchtime)
	if !continued {
		fmt.Fprintf(w, "Ratio: the peer's ns/op ÷ ours from the same run (above 1: we serve more operations per second), median over the runs with min–max. Redis µs/op: the private servers' CPU time (INFO cpu, user + system) per operation, median; it decides how many operations one Redis serves and barely depends on client noise. Client µs/op: the benchmark process's CPU time (getrusage, every goroutine and the GC) per operation, median: the client's work, which on a busy machine moves far less than µs/op. Trips/op: round trips per operation (auto-pipelined calls share them, so below 1). Goal: the median ratio a row must reach; a row also misses when our Redis µs/op is above the peer's (above the peer's ÷ the goal for a goal below 1: a goal of 0.5 allows twice the peer's Redis µs/op). Saturation rows: the peer column is redis-benchmark's EVALSHA rate on the same server in the same run, and the ratio is our operations per second as a fraction of it. Each table's heading names the host it ran on; a file written with `-append` holds one section per run.\n\n")
	}
	for _, b := range r.backends {
		fmt.Fprintf(w, "## %s (Redis %s), %s, %d CPUs, %s\n\n", b.name, b.version, r.host, runtime.NumCPU(), when)
		b.writeHostCosts(w)
		fmt.Fprintf(w, "| Operation | Peer | Ratio (min–max) | Goal | Ours µs/op | Peer µs/op | Redis µs/op ours | Redis µs/op peer | Client µs/op ours | Client µs/op peer | Trips/op | Allocs/op ours | Allocs/op peer | Met |\n")
		fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, row := range r.rows {
			s, ok := b.summarize(row)
			if !ok {
				o, ran := b.alone(row.ours)
				if !ran || row.noPeer == "" {
					fmt.Fprintf(w, "| %s | %s | (not run) | | | | | | | | | | | |\n", row.op, row.peer)
					continue
				}
				// Ours alone, and why the peer has no figures.
				fmt.Fprintf(w, "| %s | %s | (no peer: %s) | | %s | — | %s | — | %s | — | %.2f | %.0f | — | — |\n",
					row.op, row.peer, row.noPeer, num(o["ns/op"]/1e3), num(o["redis-us/op"]), num(o["client-us/op"]), o["trips/op"], o["allocs/op"])
				continue
			}
			met, goal := "yes", fmt.Sprintf("%.2f", row.goal)
			switch {
			case row.goal == 0:
				met, goal = "(no goal)", "—"
			case !s.meets(row):
				met = "**no**"
			}
			fmt.Fprintf(w, "| %s | %s | %.2f (%.2f–%.2f) | %s | %s | %s | %s | %s | %s | %s | %.2f | %.0f | %.0f | %s |\n",
				row.op, row.peer, s.ratio, s.lo, s.hi, goal, num(s.nsOurs/1e3), num(s.nsTheir/1e3), num(s.cpuOurs), num(s.cpuTheir), num(s.selfOurs), num(s.selfTheir), s.trips, s.allocsOurs, s.allocsTheir, met)
		}
		fmt.Fprintln(w)
		b.writeAll(w)
	}
}

// alone returns the medians of benchmark name's metrics over the runs
// where it ran, and whether it ran.
func (b *backend) alone(name string) (map[string]float64, bool) {
	all := map[string][]float64{}
	for _, run := range b.runs {
		if r, ok := run[name]; ok {
			for _, m := range []string{"ns/op", "redis-us/op", "client-us/op", "trips/op", "allocs/op"} {
				all[m] = append(all[m], r[m])
			}
		}
	}
	if len(all) == 0 {
		return nil, false
	}
	out := map[string]float64{}
	for m, v := range all {
		out[m] = median(v)
	}
	return out, true
}

// writeAll lists every benchmark that ran (the variants too), medians.
func (b *backend) writeAll(w io.Writer) {
	names := map[string]bool{}
	for _, run := range b.runs {
		for n := range run {
			names[n] = true
		}
	}
	var list []string
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	fmt.Fprintf(w, "<details><summary>Every benchmark on %s (medians)</summary>\n\n| Benchmark | µs/op | Redis µs/op | Client µs/op | Trips/op | B/op | Allocs/op |\n|---|---:|---:|---:|---:|---:|---:|\n", b.name)
	for _, n := range list {
		var ns, cpu, self, trips, bytes, allocs []float64
		for _, run := range b.runs {
			if r, ok := run[n]; ok {
				ns, cpu, trips = append(ns, r["ns/op"]), append(cpu, r["redis-us/op"]), append(trips, r["trips/op"])
				self = append(self, r["client-us/op"])
				bytes, allocs = append(bytes, r["B/op"]), append(allocs, r["allocs/op"])
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f | %.0f | %.0f |\n", n, num(median(ns)/1e3), num(median(cpu)), num(median(self)), median(trips), median(bytes), median(allocs))
	}
	fmt.Fprintf(w, "\n</details>\n\n")
}

// host names the machine a report ran on: its CPU model and kernel.
type host struct{ cpu, kernel string }

func (h host) String() string { return h.cpu + ", kernel " + h.kernel }

// thisHost reads the CPU model (/proc/cpuinfo "model name", else the
// first of "Hardware", "CPU part" or "cpu" that names one) and the kernel
// release (/proc/sys/kernel/osrelease, else uname -r); "?" for what it
// cannot tell.
func thisHost() host {
	h := host{cpu: "?", kernel: "?"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		found := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if ok && v != "" && found[k] == "" {
				found[k] = v
			}
		}
		for _, k := range []string{"model name", "Hardware", "CPU part", "cpu"} {
			if v := found[k]; v != "" {
				h.cpu = v
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil && len(bytes.TrimSpace(b)) > 0 {
		h.kernel = string(bytes.TrimSpace(b))
	} else if b, err := exec.Command("uname", "-r").Output(); err == nil && len(bytes.TrimSpace(b)) > 0 {
		h.kernel = string(bytes.TrimSpace(b))
	}
	return h
}
