package scanmany_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// Every key of each pattern is found on every master, across several
// SCAN steps for the large pattern while the small one is done.
func TestKeys(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	p := e.NS.Prefix
	var a, b []string
	pipe := e.Client.Pipeline()
	for i := range 2500 {
		k := fmt.Sprintf("%sa:%d", p, i)
		pipe.Set(ctx, k, "x", 0)
		a = append(a, k)
		if i < 30 {
			kb := fmt.Sprintf("%sb:%d", p, i)
			pipe.Set(ctx, kb, "x", 0)
			b = append(b, kb)
		}
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = e.Client.Pipelined(context.Background(), func(pipe redis.Pipeliner) error {
			for _, k := range append(a, b...) {
				pipe.Del(context.Background(), k)
			}
			return nil
		})
	})
	var mu sync.Mutex
	var gotA, gotB []string
	match := func(sub string) string { return keys.Namespace{Prefix: p + sub}.Match() }
	require.NoError(t, keys.ForEachNode(ctx, e.Client, func(ctx context.Context, n redis.UniversalClient) error {
		ks, err := scanmany.Keys(ctx, n, []string{match("a:"), match("b:"), match("none:")})
		if err != nil {
			return err
		}
		if len(ks[2]) != 0 {
			return fmt.Errorf("found %v", ks[2])
		}
		mu.Lock()
		defer mu.Unlock()
		gotA, gotB = append(gotA, ks[0]...), append(gotB, ks[1]...)
		return nil
	}))
	for _, s := range [][]string{a, b, gotA, gotB} {
		slices.Sort(s)
	}
	require.Equal(t, a, gotA, "each key once")
	require.Equal(t, b, gotB, "each key once")
}

// repeatScan makes every SCAN page return its first key twice, as SCAN
// may when the keyspace is resized between steps.
type repeatScan struct{}

func (repeatScan) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (repeatScan) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (repeatScan) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if sc, ok := c.(*redis.ScanCmd); ok {
				page, cursor := sc.Val()
				if len(page) > 0 {
					sc.SetVal(append(page, page[0]), cursor)
				}
			}
		}
		return err
	}
}

// A key that SCAN returns twice is returned once.
func TestKeysDropsRepeats(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	p := e.NS.Prefix
	var want []string
	for i := range 40 {
		k := fmt.Sprintf("%sr:{t}:%d", p, i)
		require.NoError(t, e.Client.Set(ctx, k, "x", time.Minute).Err())
		want = append(want, k)
	}
	var got []string
	var mu sync.Mutex
	require.NoError(t, keys.ForEachNode(ctx, e.Client, func(ctx context.Context, n redis.UniversalClient) error {
		c := redis.NewClient(n.(*redis.Client).Options())
		defer c.Close()
		c.AddHook(repeatScan{})
		ks, err := scanmany.Keys(ctx, c, []string{keys.Namespace{Prefix: p + "r:"}.Match()})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ks[0]...)
		return nil
	}))
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
}
