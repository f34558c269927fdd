package bench

import (
	"strconv"
	"testing"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

// BenchmarkSchemaMatch prices classifying one scanned key against every
// package's patterns (keys.Registry.Match, what the dashboard's schema
// page and `redschema audit` do for each key a SCAN returns): a key that
// matches no pattern, the common case on a shared Redis, tries them all.
// No Redis is involved:
//
//	cd bench && go test -run '^$' -bench BenchmarkSchemaMatch .
func BenchmarkSchemaMatch(b *testing.B) {
	reg, err := keys.Compose(dashboard.Schemas()...)
	if err != nil {
		b.Fatal(err)
	}
	ns := keys.Namespace{Prefix: "app:"}
	for _, c := range []struct{ name, key string }{
		{"stray", "app:zentoria:jobs:" + strconv.Itoa(12345)},
		{"stray-deep", "app:a:b:c:d:e"},
		{"session", "app:session:user:{u1}:c2Vzc2lvbi1pZA"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				reg.Match(ns, c.key)
			}
		})
	}
}
