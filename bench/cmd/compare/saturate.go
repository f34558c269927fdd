package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The saturation rows' limit: redis-benchmark sending the EVALSHA of a
// two-command script (INCR and PEXPIRE of one key, what a fixed-window
// check needs at least) over 1,000 keys, 16 calls per pipeline, from as
// many connections as the row's goroutines, to the run's own standalone
// server, right after the run's benchmarks.
const (
	satScript   = "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], '3600000') return n"
	satPipeline = 16
	satKeys     = 1000
	satPrefix   = "redis-benchmark/"
)

// satName is the result name of redis-benchmark's run at clients
// connections.
func satName(clients int) string {
	return satPrefix + "evalsha-incr-pexpire/c=" + strconv.Itoa(clients) + "/P=" + strconv.Itoa(satPipeline)
}

// satClients lists the connection counts the rows' limits need.
func satClients(rs []row) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range rs {
		if r.sat > 0 && !seen[r.sat] {
			seen[r.sat] = true
			out = append(out, r.sat)
		}
	}
	sort.Ints(out)
	return out
}

// satRequests is how many calls redis-benchmark sends: about as long as
// one benchmark of -benchtime runs at 300k calls/s, at least 20,000 (for
// a count such as "100x" too).
func satRequests(benchtime string) int {
	d, err := time.ParseDuration(benchtime)
	if err != nil {
		return 20000
	}
	return max(20000, int(d.Seconds()*300000))
}

// saturate loads the script on addr, runs redis-benchmark and returns its
// figures as a benchmark result (see rbench).
func saturate(ctx context.Context, bin, addr string, clients int, benchtime string) (result, error) {
	sha := strings.TrimSpace(info(addr, "script", "load", satScript))
	if len(sha) != 40 {
		return nil, fmt.Errorf("SCRIPT LOAD on %s: %q", addr, sha)
	}
	return rbench(ctx, bin, addr, clients, satPipeline, satRequests(benchtime), "evalsha", sha, "1", "bench-saturation:__rand_int__")
}

// rbench runs redis-benchmark's one command (over satKeys keys) at
// clients connections, pipeline calls per round trip, n calls, and
// returns its figures as a benchmark result: ns/op from its calls per
// second, redis-us/op from the server's CPU time (INFO cpu) over the run,
// client-us/op from redis-benchmark's own CPU time.
func rbench(ctx context.Context, bin, addr string, clients, pipeline, n int, command ...string) (result, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	cpu0, err := serverCPU(addr)
	if err != nil {
		return nil, err
	}
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-P", strconv.Itoa(pipeline),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(satKeys), "--csv"}
	cmd := exec.CommandContext(ctx, bin, append(args, command...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", bin, err, errOut.String())
	}
	cpu1, err := serverCPU(addr)
	if err != nil {
		return nil, err
	}
	rps, err := csvRPS(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	self := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return result{
		"ns/op":        1e9 / rps,
		"redis-us/op":  (cpu1 - cpu0) * 1e6 / float64(n),
		"client-us/op": float64(self.Microseconds()) / float64(n),
		"trips/op":     1.0 / float64(pipeline),
	}, nil
}

// csvRPS reads the requests per second of redis-benchmark --csv's one
// test: a header line ("test","rps",...) and a line of figures.
func csvRPS(b []byte) (float64, error) {
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if len(r) > 1 && r[0] != "test" {
			if v, err := strconv.ParseFloat(r[1], 64); err == nil && v > 0 {
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("no requests per second in %q", b)
}

// serverCPU returns the server's CPU time in seconds (INFO cpu, user +
// system).
func serverCPU(addr string) (float64, error) {
	var sum float64
	found := 0
	for _, l := range strings.Split(info(addr, "info", "cpu"), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			sum += f
			found++
		}
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu of %s: no used_cpu_user and used_cpu_sys", addr)
	}
	return sum, nil
}
