package docgen_test

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestScriptsBuildNoKeys fails when a script of the module builds a key
// with "..": every key a script touches is declared in a package's keys
// templates and passed in KEYS, so that the schema knows it, the cluster
// can route it and no script can address a key its caller did not name.
// The scanner flags a concatenation in the first argument after the
// command of a redis.call or redis.pcall, and KEYS[...] joined to a
// string that starts or ends with the key separator ':'. One form is
// allowed: KEYS[i] .. name, a declared key family's prefix passed in KEYS
// (keys.Template.Prefix) completed with a value the script learns as it
// runs (the queue's group keys).
func TestScriptsBuildNoKeys(t *testing.T) {
	for rel, src := range luaFiles(t) {
		for _, f := range builtKeys(src) {
			t.Errorf("%s: a key built in Lua (declare it and pass it in KEYS): %s", rel, f)
		}
	}
}

// TestBuiltKeys checks the scanner the test above relies on.
func TestBuiltKeys(t *testing.T) {
	src := `redis.call('GET', KEYS[1])
redis.call('ZADD', lim.ga .. g, '1', m)
local k = KEYS[2] .. ':' .. id
redis.pcall('SET', KEYS[1], a .. b)
redis.call('HGET', prefix..id, 'x') -- redis.call('DEL', a .. b) in a comment
redis.call('SET', 'a..b', v)
local s = x .. ':' .. KEYS [3]
redis.call('PUBLISH', ARGV[1], 'k ' .. KEYS[1])
redis.call('PEXPIRE', KEYS[14] .. b.g, ARGV[7])
redis.call('PEXPIRE', KEYS[14] .. b.g .. x, ARGV[7])`
	got := builtKeys(src)
	want := []string{"line 2: lim.ga .. g", "line 3: KEYS[2] ..", "line 5: prefix..id", "line 7: .. KEYS [3]", "line 10: KEYS[14] .. b.g .. x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// familyKey is the one concatenation allowed in a key argument: a
// family's prefix passed in KEYS and a name ("KEYS[14] .. b.g").
var familyKey = regexp.MustCompile(`^KEYS\[\d+\]\s*\.\.\s*[A-Za-z_][\w.]*$`)

var keysConcat = regexp.MustCompile(`KEYS\s*\[[^\]]*\]\s*\.\.|\.\.\s*KEYS\s*\[[^\]]*\]`)

// builtKeys returns "line N: text" for each key-building concatenation in
// src (see TestScriptsBuildNoKeys), comments and string contents ignored.
func builtKeys(src string) []string {
	code := blank(src)
	var out []string
	lineOf := func(i int) string { return "line " + strconv.Itoa(strings.Count(code[:i], "\n")+1) }
	for _, m := range callStart.FindAllStringIndex(code, -1) {
		// The first key is the call's second top-level argument.
		depth, arg, start := 1, 0, 0
		for i := m[1]; i < len(code) && depth > 0; i++ {
			switch code[i] {
			case '(', '{':
				depth++
			case ')', '}':
				depth--
			}
			if depth == 0 || (depth == 1 && code[i] == ',') {
				if arg == 1 {
					if a := strings.TrimSpace(code[start:i]); strings.Contains(a, "..") && !familyKey.MatchString(a) {
						out = append(out, lineOf(m[0])+": "+a)
					}
					break
				}
				arg, start = arg+1, i+1
			}
		}
	}
	for _, m := range keysConcat.FindAllStringIndex(code, -1) {
		after := strings.TrimLeft(src[m[1]:], " ")
		before := strings.TrimRight(src[:m[0]], " ")
		if (strings.HasSuffix(code[m[0]:m[1]], "..") && (strings.HasPrefix(after, "':") || strings.HasPrefix(after, `":`))) ||
			(strings.HasPrefix(code[m[0]:m[1]], "..") && (strings.HasSuffix(before, ":'") || strings.HasSuffix(before, `:"`))) {
			out = append(out, lineOf(m[0])+": "+strings.TrimSpace(code[m[0]:m[1]]))
		}
	}
	return sortByLine(out)
}

// sortByLine orders "line N: ..." entries by N, stably.
func sortByLine(s []string) []string {
	n := func(x string) int {
		v, _ := strconv.Atoi(strings.TrimPrefix(x[:strings.Index(x, ":")], "line "))
		return v
	}
	sort.SliceStable(s, func(i, j int) bool { return n(s[i]) < n(s[j]) })
	return s
}
