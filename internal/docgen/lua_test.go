package docgen_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestScriptsPassNoNumberLiterals fails when a script of the module passes
// a number literal as an argument of redis.call or redis.pcall. Redis
// formats every Lua number argument with "%.17g" (about 2,000 instructions
// on Redis 7.0, see internal/call's int_str); a string literal is passed
// as it is. Write '0', '-1', '1000'.
func TestScriptsPassNoNumberLiterals(t *testing.T) {
	for rel, src := range luaFiles(t) {
		for _, lit := range numberArgs(src) {
			t.Errorf("a number literal passed to Redis (write it as a string): %s: %s", rel, lit)
		}
	}
}

// luaFiles returns every .lua file of the repository (hidden directories
// skipped) by its path relative to the root, with slashes.
func luaFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".lua") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = string(src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d .lua files, want the repository's", len(out))
	}
	return out
}

// TestNumberArgs checks the scanner the test above relies on.
func TestNumberArgs(t *testing.T) {
	src := `redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
redis.call('LTRIM', k, n + 1, '-1')
redis.pcall('SET', k, string.sub(x, 1, 3), 'PX', math.min(ttl, 10000))
redis.call('HSET', k, 'a,b', 5, "it's", {1, 2})
-- redis.call('DEL', k, 7) in a comment
redis.call('LRANGE', k, --[[ from ]] 0,
  99) --[[ redis.call('DEL', k, 8) ]] redis.call('INCRBY', k, 2.5)`
	got := numberArgs(src)
	want := []string{"line 1: 0", "line 1: -1", "line 4: 5", "line 6: 0", "line 6: 99", "line 7: 2.5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

var (
	callStart = regexp.MustCompile(`redis\.p?call\(`)
	numberArg = regexp.MustCompile(`^\s*(-?[0-9]+(\.[0-9]+)?)\s*[,)]`)
)

// numberArgs returns "line N: literal" (N the line of the call) for every
// argument of a redis.call or redis.pcall in src that is a bare number
// literal, not one inside a nested call, a table or an expression.
func numberArgs(src string) []string {
	code := blank(src)
	var out []string
	for _, m := range callStart.FindAllStringIndex(code, -1) {
		line := strconv.Itoa(strings.Count(code[:m[0]], "\n") + 1)
		depth := 1
		for i := m[1] - 1; i < len(code) && depth > 0; i++ {
			switch c := code[i]; {
			case (c == '(' && i >= m[1]) || c == '{':
				depth++
			case c == ')' || c == '}':
				depth--
			}
			if c := code[i]; (c == ',' || i == m[1]-1) && depth == 1 {
				if n := numberArg.FindStringSubmatch(code[i+1:]); n != nil {
					out = append(out, "line "+line+": "+n[1])
				}
			}
		}
	}
	return out
}

// blank returns src with its Lua comments (-- to the end of the line,
// --[[ ... ]]) and the insides of its string literals turned into spaces,
// quotes and newlines kept: what is left is the code's structure.
func blank(src string) string {
	b := []byte(src)
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				continue
			}
			if c == '\\' && i+1 < len(b) {
				b[i] = ' '
				i++
			}
			b[i] = ' '
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && i+1 < len(b) && b[i+1] == '-':
			end := len(b)
			if strings.HasPrefix(src[i+2:], "[[") {
				if j := strings.Index(src[i:], "]]"); j >= 0 {
					end = i + j + 2
				}
			} else if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
				end = i + j
			}
			for ; i < end; i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			i--
		}
	}
	return string(b)
}
