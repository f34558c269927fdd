package connecttest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redschema/redschema/connect"
)

func TestURLFollowsTheSuitesBackend(t *testing.T) {
	cases := []struct {
		cluster, addr string
		want          string
	}{
		{"", "", ""},
		{"", "h:1", "redis://h:1/3"},
		{"a:1,b:2", "h:1", "a:1,b:2"}, // a cluster has database 0 only
	}
	for _, c := range cases {
		t.Setenv("REDIS_CLUSTER_ADDRS", c.cluster)
		t.Setenv("REDIS_ADDR", c.addr)
		if got := URL(3); got != c.want {
			t.Errorf("cluster %q, addr %q: URL(3) = %q, want %q", c.cluster, c.addr, got, c.want)
		}
		if Cluster() != (c.cluster != "") {
			t.Errorf("cluster %q: Cluster() = %v", c.cluster, Cluster())
		}
	}
}

func TestPrefixesAreNewAndNamed(t *testing.T) {
	a, b := Prefix("demo"), Prefix("demo")
	if a == b || !strings.HasPrefix(a, "demo-test-") || !strings.HasSuffix(a, ":") || len(a) != len("demo-test-12345678:") {
		t.Errorf("Prefix gave %q and %q", a, b)
	}
}

// TestOpenDeletesItsKeys writes under an inner test's namespace; on a
// named backend the keys are gone once the inner test ended.
func TestOpenDeletesItsKeys(t *testing.T) {
	ctx := context.Background()
	var key string
	t.Run("inner", func(t *testing.T) {
		rdb, ns := Open(t, "connecttest")
		key = ns.Prefix + "k"
		if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v := rdb.Get(ctx, key).Val(); v != "v" {
			t.Fatalf("read %q back", v)
		}
	})
	if URL(0) == "" {
		return // the embedded server closed with the inner test
	}
	rdb, closeRedis, err := connect.Open(ctx, URL(0))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis()
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("%s outlived its test", key)
	}
}

func TestBufferIsSafeForConcurrentUse(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := len(b.String()); n != 5000 {
		t.Errorf("%d bytes, want 5000", n)
	}
}
