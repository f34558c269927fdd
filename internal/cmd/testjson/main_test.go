package main

import (
	"strings"
	"testing"
)

const stream = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: needs a cluster\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: boom\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Elapsed":0.5}
{"Action":"skip","Package":"q"}
{"Action":"pass","Package":"r","Elapsed":0.1}
`

func TestReport(t *testing.T) {
	var out strings.Builder
	r, err := read(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.skips) != 1 || !strings.Contains(r.skips[0], "needs a cluster") {
		t.Errorf("skips %q", r.skips)
	}
	if len(r.fails) != 1 || len(r.pkgFails) != 1 {
		t.Errorf("fails %q %q", r.fails, r.pkgFails)
	}
	if !strings.Contains(out.String(), "boom") || !strings.Contains(out.String(), "ok\tr") {
		t.Errorf("output:\n%s", out.String())
	}
	if code := report(&out, r, "x", 5); code != 1 {
		t.Errorf("a failure must exit 1, got %d", code)
	}
	r.fails, r.pkgFails = nil, nil
	if code := report(&out, r, "x", 1); code != 0 {
		t.Errorf("within the ceiling: got %d", code)
	}
	if code := report(&out, r, "x", 0); code != 1 {
		t.Errorf("above the ceiling: got %d", code)
	}
}

// TestPackageFailureWithoutFailedTest: a package that fails while no test
// failed (a panic, a timeout) shows its output and the unended test's.
func TestPackageFailureWithoutFailedTest(t *testing.T) {
	const crash = `{"Action":"run","Package":"p","Test":"TestDone"}
{"Action":"output","Package":"p","Test":"TestDone","Output":"quiet pass\n"}
{"Action":"pass","Package":"p","Test":"TestDone"}
{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"goroutine 7 [chan receive]:\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 10m0s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t600.0s\n"}
{"Action":"fail","Package":"p","Elapsed":600}
`
	var out strings.Builder
	r, err := read(strings.NewReader(crash), &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"test timed out", "TestHang never ended", "chan receive"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet pass") {
		t.Errorf("a passed test's output is shown:\n%s", got)
	}
	if len(r.pkgFails) != 1 || len(r.fails) != 0 {
		t.Errorf("fails %q %q", r.fails, r.pkgFails)
	}
}
