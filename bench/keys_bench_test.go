package bench

import (
	"testing"
	"time"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
)

var benchSession = keys.MustCompile(keys.Pattern{Template: "session:user:{user_id}:{session_id}", Tag: "user_id", Type: keys.Hash, TTL: time.Hour, Owner: "bench"})

// BenchmarkKey measures building a two-placeholder key with a hash tag
// against the hand-written concatenation it replaces.
func BenchmarkKey(b *testing.B) {
	ns := keys.Namespace{Prefix: "ha:"}
	b.Run("redschema", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := benchSession.Key(ns, "user-123", "sess-abc"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("concat", func(b *testing.B) {
		b.ReportAllocs()
		u, s := "user-123", "sess-abc"
		for i := 0; i < b.N; i++ {
			sink = ns.Prefix + "session:user:{" + u + "}:" + s
		}
	})
}

var sink string

// BenchmarkRoundTripCounter checks the counter itself: one SET is one trip,
// one pipeline of three commands is one trip.
func BenchmarkRoundTripCounter(b *testing.B) {
	e := benchutil.New(b)
	ctx := b.Context()
	k := e.NS.Prefix + "rtt"
	e.Warm(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pipe := e.Client.Pipeline()
		pipe.Set(ctx, k, "1", time.Minute)
		pipe.Get(ctx, k)
		pipe.Del(ctx, k)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	got := e.Trips.Total()
	e.ReportTrips(b)
	if got != int64(b.N) {
		b.Fatalf("counted %d trips for %d pipelines", got, b.N)
	}
}
