package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	plain := flow{name: "plain"}
	doc := flow{name: "doc", documented: "the seed's race: docs/x.md"}
	other := errors.New("node: boom")
	for _, c := range []struct {
		f       flow
		err     error
		outcome string
		detail  string
	}{
		{plain, nil, pass, ""},
		{plain, diverge("a != b"), fail, "diverges: a != b"},
		{plain, other, fail, "node: boom"},
		{doc, diverge("a != b"), documented, "(the seed's race: docs/x.md)"},
		{doc, other, fail, "node: boom"}, // a documented flow still fails on anything but its divergence
		{doc, nil, pass, "(documented divergence no longer seen: remove it from the flow and its docs page)"},
	} {
		outcome, detail := classify(c.f, c.err)
		if outcome != c.outcome || detail != c.detail {
			t.Errorf("classify(%s, %v) = %s %q, want %s %q", c.f.name, c.err, outcome, detail, c.outcome, c.detail)
		}
	}
}

// TestFlowsAreWellFormed: every flow names a seed, a unique name, known
// clients and an area whose JS file exists, and every Node function a
// flow file calls through e.node is exported by it.
func TestFlowsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	exported := map[string]string{}
	for _, area := range allFlows() {
		for _, f := range area {
			if !regexp.MustCompile(`^00[0-4]$`).MatchString(f.seed) || f.name == "" || f.run == nil || len(f.clients) == 0 {
				t.Errorf("flow %+v: seed, name, run and clients are required", f)
			}
			if seen[f.name] {
				t.Errorf("flow %q twice", f.name)
			}
			seen[f.name] = true
			for _, c := range f.clients {
				if !slices.Contains([]string{"redis4", "redis6", "ioredis6"}, c) {
					t.Errorf("flow %q: unknown client %q", f.name, c)
				}
			}
			if _, ok := exported[f.area]; !ok {
				b, err := os.ReadFile(filepath.Join("..", "..", "..", "interop", "flows", f.area+".js"))
				if err != nil {
					t.Fatalf("flow %q: %v", f.name, err)
				}
				exported[f.area] = string(b)
			}
		}
	}
	// e.node(ctx, "fn", ...) in a flows_<area>.go file calls flows/<area>.js's
	// fn, or another area's (chat calls presence's): it must be exported by one.
	files, _ := filepath.Glob("flows_*.go")
	call := regexp.MustCompile(`e\.node\(ctx, "(\w+)"`)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			found := false
			for _, js := range exported {
				if strings.Contains(js, "async "+m[1]+" (") {
					found = true
				}
			}
			if !found {
				t.Errorf("%s calls Node function %s, which no flow file exports", file, m[1])
			}
		}
	}
}

func TestRefusesDB0(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-db", "0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "refusing -db 0") {
		t.Errorf("-db 0: exit %d, %q", code, errb.String())
	}
}
