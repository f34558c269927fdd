package keys_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Inspecting 300,000-element collections sends no command that the
// server logs as slower than 10 ms: a map hash and a set are read a page
// at a time (HSCAN, SSCAN), and a record hash that big is refused after
// HLEN, never read with HGETALL. Real Redis only: it reads the SLOWLOG,
// keeping the entries that name this test's keys (other tests share the
// server).
func TestInspectHugeCollectionsStayOutOfSlowlog(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Mini {
		t.Skip("miniredis has no SLOWLOG")
	}
	if testing.Short() {
		t.Skip("writes 900,000 elements")
	}
	ctx := e.Ctx()
	c := e.Client
	r := &keys.Registry{}
	reg := func(template string, typ keys.Type) *keys.Template {
		return r.MustRegister(keys.Pattern{Template: template, Type: typ, TTL: time.Hour, Tag: "id", Owner: "demo", Purpose: template})
	}
	jobs, record, members := reg("jobs:{id}", keys.Hash), reg("record:{id}", keys.Hash), reg("members:{id}", keys.Set)
	r.SetDecoder(jobs, keys.FieldsDecoder(func(_ keys.Ref, f, _ string) (any, error) { return f, nil }))
	r.SetDecoder(record, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) { return len(m), nil }))
	r.SetDecoder(members, keys.SetMembersDecoder(func(_ keys.Ref, m string) (any, error) { return m, nil }))
	key := func(tp *keys.Template) string {
		k, err := tp.Key(e.NS, "big")
		require.NoError(t, err)
		return k
	}
	t.Cleanup(func() { _ = c.Unlink(context.Background(), key(jobs), key(record), key(members)).Err() })

	// The fill: 1,000 elements per command, 100 commands per pipeline,
	// before the slowlog is reset.
	const n, per = 300_000, 1000
	for start := 0; start < n; start += 100 * per {
		pipe := c.Pipeline()
		for b := start; b < min(n, start+100*per); b += per {
			hash := make([]any, 0, 2*per)
			set := make([]any, 0, per)
			for i := b; i < b+per; i++ {
				f := fmt.Sprintf("f%06d", i)
				hash = append(hash, f, "v")
				set = append(set, f)
			}
			pipe.HSet(ctx, key(jobs), hash...)
			pipe.HSet(ctx, key(record), hash...)
			pipe.SAdd(ctx, key(members), set...)
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
	}
	for _, tp := range []*keys.Template{jobs, record} {
		require.EqualValues(t, n, c.HLen(ctx, key(tp)).Val())
	}

	var mu sync.Mutex
	old := map[string]string{}
	require.NoError(t, keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		v, err := node.ConfigGet(ctx, "slowlog-log-slower-than").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		old[node.(*redis.Client).Options().Addr] = v["slowlog-log-slower-than"]
		mu.Unlock()
		return node.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err()
	}))
	t.Cleanup(func() {
		_ = keys.ForEachNode(context.Background(), c, func(ctx context.Context, node redis.UniversalClient) error {
			if v := old[node.(*redis.Client).Options().Addr]; v != "" {
				return node.ConfigSet(ctx, "slowlog-log-slower-than", v).Err()
			}
			return nil
		})
	})
	require.NoError(t, keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		return node.Do(ctx, "SLOWLOG", "RESET").Err()
	}))

	for _, tp := range []*keys.Template{jobs, members} {
		in, err := r.Inspect(ctx, c, e.NS, key(tp), "")
		require.NoError(t, err)
		require.NoError(t, in.DecodeErr)
		col := in.Value.(keys.Collection)
		assert.EqualValues(t, n, col.Len)
		assert.Len(t, col.Items, keys.InspectLimit, tp.String())
		require.NotEmpty(t, col.Next, tp.String())
		in, err = r.Inspect(ctx, c, e.NS, key(tp), col.Next)
		require.NoError(t, err)
		require.NoError(t, in.DecodeErr)
		next := in.Value.(keys.Collection)
		assert.NotEmpty(t, next.Items, tp.String())
		assert.LessOrEqual(t, len(next.Items), keys.InspectLimit, tp.String())
		assert.NotContains(t, next.Items, col.Items[0], "%s: the second page is another", tp)
	}
	for _, cursor := range []string{"", "0"} {
		in, err := r.Inspect(ctx, c, e.NS, key(record), cursor)
		require.NoError(t, err)
		assert.ErrorIs(t, in.DecodeErr, keys.ErrCorrupt)
		assert.ErrorContains(t, in.DecodeErr, key(record))
	}

	require.NoError(t, keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		logs, err := node.SlowLogGet(ctx, 128).Result()
		if err != nil {
			return err
		}
		for _, l := range logs {
			if strings.Contains(strings.Join(l.Args, " "), e.NS.Prefix) {
				t.Errorf("slow command (%v) on this test's keys: %q", l.Duration, l.Args)
			}
		}
		return nil
	}))
}
