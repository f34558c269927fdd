package calltest

import (
	"reflect"
	"testing"
)

func TestHeaderMisses(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"-- KEYS[1] a hash\n-- ARGV[1..2] two numbers\n-- Returns 'ok'.\nreturn redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])", nil},
		{"-- KEYS[1] a hash\n-- Returns 'ok'.\nreturn redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])", []string{"name ARGV[1]", "name ARGV[2]"}},
		{"-- KEYS[1] a hash\nredis.call('DEL', KEYS[1], KEYS[1])\n-- KEYS[2] named below the header does not count\nredis.call('DEL', KEYS[2])",
			[]string{"name KEYS[2]", "say what it returns"}},
		{"-- ARGV[2..] pairs\n-- Returns the count.\nreturn #ARGV[2] + #ARGV[7]", nil},
		{"", nil},
	} {
		if got := headerMisses(c.src); !reflect.DeepEqual(got, c.want) {
			t.Errorf("headerMisses(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}
