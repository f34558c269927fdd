// Command testjson reads the JSON stream of "go test -json" on standard
// input and prints what a reader of plain "go test" output needs: one line
// per package, the output of every failed test, and the skipped tests with
// their reasons, counted. It exits 1 when a test or package failed, or
// when more tests were skipped than -max-skips allows: a suite that
// silently skips on a real server proves less than it claims.
//
//	go test -json ./... | go run ./internal/cmd/testjson -backend redis -max-skips 12
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type result struct {
	fails, skips []string
	pkgFails     []string
}

func main() {
	backend := flag.String("backend", "", "the backend's name, for the report")
	maxSkips := flag.Int("max-skips", -1, "fail when more tests than this are skipped (-1: no limit)")
	flag.Parse()
	r, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testjson:", err)
		os.Exit(2)
	}
	code := report(os.Stdout, r, *backend, *maxSkips)
	os.Exit(code)
}

// read consumes the stream; it echoes package result lines as they come.
func read(in io.Reader, out io.Writer) (*result, error) {
	r := &result{}
	outputs := map[string]*strings.Builder{} // package/test -> its output
	running := map[string]map[string]bool{}  // package -> tests started, not ended
	failed := map[string]bool{}              // packages with a failed test
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Not JSON (a build error printed by go test): show it.
			fmt.Fprintln(out, string(line))
			continue
		}
		id := ev.Package + " " + ev.Test
		if ev.Test != "" {
			switch ev.Action {
			case "run":
				if running[ev.Package] == nil {
					running[ev.Package] = map[string]bool{}
				}
				running[ev.Package][ev.Test] = true
			case "pass", "fail", "skip":
				delete(running[ev.Package], ev.Test)
			}
		}
		switch ev.Action {
		case "output":
			b := outputs[id]
			if b == nil {
				b = &strings.Builder{}
				outputs[id] = b
			}
			b.WriteString(ev.Output)
		case "fail":
			if ev.Test == "" {
				r.pkgFails = append(r.pkgFails, ev.Package)
				fmt.Fprintf(out, "FAIL\t%s\t%.3fs\n", ev.Package, ev.Elapsed)
				if !failed[ev.Package] {
					// No test failed: a build failure, a panic, a timeout or a
					// crash. Show the package's output and that of every test
					// that never ended, or the failure has no reason.
					printUnended(out, outputs, ev.Package, running[ev.Package])
				}
				continue
			}
			failed[ev.Package] = true
			r.fails = append(r.fails, id)
			if b := outputs[id]; b != nil {
				fmt.Fprint(out, b.String())
			}
		case "skip":
			if ev.Test == "" {
				continue // a package without tests
			}
			reason := ""
			if b := outputs[id]; b != nil {
				reason = skipReason(b.String())
			}
			r.skips = append(r.skips, fmt.Sprintf("%s %s: %s", ev.Package, ev.Test, reason))
		case "pass":
			if ev.Test == "" {
				fmt.Fprintf(out, "ok\t%s\t%.3fs\n", ev.Package, ev.Elapsed)
			}
		}
	}
	return r, sc.Err()
}

// printUnended prints a failed package's own output, then the output of
// each test in it that started and never ended, in name order.
func printUnended(out io.Writer, outputs map[string]*strings.Builder, pkg string, unended map[string]bool) {
	if b := outputs[pkg+" "]; b != nil {
		fmt.Fprint(out, b.String())
	}
	names := make([]string, 0, len(unended))
	for name := range unended {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "--- %s never ended; its output:\n", name)
		if b := outputs[pkg+" "+name]; b != nil {
			fmt.Fprint(out, b.String())
		}
	}
}

// skipReason finds the message of t.Skip in a skipped test's output.
func skipReason(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		return l
	}
	return "(no reason given)"
}

func report(out io.Writer, r *result, backend string, maxSkips int) int {
	sort.Strings(r.skips)
	fmt.Fprintf(out, "\n%d tests skipped on %s", len(r.skips), backend)
	if maxSkips >= 0 {
		fmt.Fprintf(out, " (ceiling %d)", maxSkips)
	}
	fmt.Fprintln(out, ":")
	for _, s := range r.skips {
		fmt.Fprintln(out, "  "+s)
	}
	code := 0
	if len(r.fails) > 0 || len(r.pkgFails) > 0 {
		fmt.Fprintf(out, "%d tests and %d packages failed on %s\n", len(r.fails), len(r.pkgFails), backend)
		code = 1
	}
	if maxSkips >= 0 && len(r.skips) > maxSkips {
		fmt.Fprintf(out, "too many skips on %s: %d above the ceiling of %d (.ci/skips)\n", backend, len(r.skips), maxSkips)
		code = 1
	}
	return code
}
