package calltest

import (
	"reflect"
	"testing"

	"github.com/redschema/redschema/internal/call"
)

func TestHelperMisses(t *testing.T) {
	for _, c := range []struct {
		needs []call.Helper
		code  string
		want  []string
	}{
		{nil, "return {'ok', int_str(now_ms())}", nil},
		{[]call.Helper{call.JSONStr}, "return json_str(ARGV[1])", nil},
		{nil, "return json_str(ARGV[1])", []string{"calls json_str from json_str.lua, which it does not name with call.Needs"}},
		{[]call.Helper{call.ScoreMS}, "return score_digits(s)", nil},
		{[]call.Helper{call.Batched}, "-- batched(...) in a comment is not a call\nreturn 1",
			[]string{"names batched.lua with call.Needs but calls none of its functions"}},
		{nil, "return t.batched(1), x:to_num(2)", nil},
	} {
		if got := helperMisses(c.needs, c.code); !reflect.DeepEqual(got, c.want) {
			t.Errorf("helperMisses(%v, %q) = %q, want %q", c.needs, c.code, got, c.want)
		}
	}
}
