package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

// layout is one way a limiter reaches one of the package's key patterns.
type layout struct {
	key    string // the key of identifier "c", without the namespace
	policy ratelimit.Policy
	opts   []ratelimit.Option
}

// layouts reaches every key pattern the package registers.
func layouts() map[string]layout {
	fixed := one(ratelimit.FixedWindow, ratelimit.PerMinute(5))
	log := one(ratelimit.Sliding, ratelimit.PerMinute(1))
	swc := one(ratelimit.SlidingCounter, ratelimit.PerMinute(5))
	gcra := one(ratelimit.GCRA, ratelimit.PerMinute(5))
	end := ratelimit.WithEndpoint("/x")
	return map[string]layout{
		"rate_limit:{identifier}":                            {"rate_limit:{c}", log, []ratelimit.Option{ratelimit.WithRateLimitKey()}},
		"sliding_limit:{identifier}":                         {"sliding_limit:{c}", log, []ratelimit.Option{ratelimit.WithWindowlessLogKey()}},
		"sliding_limit:{identifier}:{window}":                {"sliding_limit:{c}:minute", log, nil},
		"ratelimit:sliding:{identifier}:{endpoint}":          {"ratelimit:sliding:{c}:/x", log, []ratelimit.Option{end, ratelimit.WithWindowlessLogKey()}},
		"ratelimit:sliding:{identifier}:{endpoint}:{window}": {"ratelimit:sliding:{c}:/x:minute", log, []ratelimit.Option{end}},
		"ratelimit:api:{api_key_id}:{window}":                {"ratelimit:api:{c}:minute", fixed, nil},
		"ratelimit:ip:{ip_address}:{endpoint}:{window}":      {"ratelimit:ip:{c}:/x:minute", fixed, []ratelimit.Option{end}},
		"ratelimit:swc:{identifier}:{window}":                {"ratelimit:swc:{c}:minute", swc, nil},
		"ratelimit:swc:{identifier}:{endpoint}:{window}":     {"ratelimit:swc:{c}:/x:minute", swc, []ratelimit.Option{end}},
		"ratelimit:gcra:{identifier}:{window}":               {"ratelimit:gcra:{c}:minute", gcra, nil},
		"ratelimit:gcra:{identifier}:{endpoint}:{window}":    {"ratelimit:gcra:{c}:/x:minute", gcra, []ratelimit.Option{end}},
		"ratelimit:config:{api_key_id}": {"ratelimit:config:{c}", ratelimit.Policy{
			{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(5)},
			{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerHour(5)},
		}, []ratelimit.Option{ratelimit.WithRuntimeConfig()}},
		"ratelimit:block:{identifier}": {"ratelimit:block:{c}", fixed, nil},
		// read only by a refused check, Refund and Penalize, and the
		// channel: tested on their own (TestCorruptRefusals, ...)
		"ratelimit:refusals:{identifier}":            {"ratelimit:refusals:{c}", fixed, nil},
		"ratelimit:adjust:{identifier}:{request_id}": {"ratelimit:adjust:{c}:r", fixed, nil},
		"ratelimit:events":                           {"ratelimit:events", fixed, nil},
		"ratelimit:instances":                        {"ratelimit:instances", fixed, nil},
	}
}

// badValue puts something this package does not write at key k.
type badValue struct {
	name  string
	write func(ctx context.Context, c redis.UniversalClient, k string, now time.Time) error
}

func setStr(v string, ttl time.Duration) func(context.Context, redis.UniversalClient, string, time.Time) error {
	return func(ctx context.Context, c redis.UniversalClient, k string, _ time.Time) error {
		return c.Set(ctx, k, v, ttl).Err()
	}
}

var (
	wrongString = badValue{"wrong type: string", setStr("x", time.Minute)}
	wrongHash   = badValue{"wrong type: hash", func(ctx context.Context, c redis.UniversalClient, k string, _ time.Time) error {
		return c.HSet(ctx, k, "a", "b").Err()
	}}
	wrongList = badValue{"wrong type: list", func(ctx context.Context, c redis.UniversalClient, k string, _ time.Time) error {
		return c.RPush(ctx, k, "x").Err()
	}}
	// an entry scored a year ahead of server time, or at +inf
	futureEntry = badValue{"entry scored a year ahead", func(ctx context.Context, c redis.UniversalClient, k string, now time.Time) error {
		return c.ZAdd(ctx, k, redis.Z{Score: float64(now.Add(366 * 24 * time.Hour).UnixMilli()), Member: "x"}).Err()
	}}
	infEntry = badValue{"entry scored +inf", func(ctx context.Context, c redis.UniversalClient, k string, _ time.Time) error {
		return c.ZAdd(ctx, k, redis.Z{Score: math.Inf(1), Member: "x"}).Err()
	}}
)

// badValues lists, per key pattern, wrong types, garbage and values out of
// range.
func badValues() map[string][]badValue {
	logs := []badValue{wrongString, wrongHash, futureEntry, infEntry}
	counters := []badValue{wrongHash, {"garbage", setStr("abc", time.Minute)}, {"fraction", setStr("1.5", time.Minute)},
		{"negative", setStr("-5", time.Minute)}, {"above 2^40", setStr("1099511627777", time.Minute)},
		{"TTL longer than the window", setStr("2", time.Hour)}}
	swc := []badValue{wrongList, {"garbage", setStr("1:2", time.Minute)}, {"letters", setStr("a:b:c", time.Minute)},
		{"bucket ahead of server time", setStr("99999999999:1:1", time.Minute)},
		{"count above 2^40", setStr("0:1099511627777:0", time.Minute)},
		{"signed", setStr("-1:1:1", time.Minute)}}
	gcra := []badValue{wrongHash, {"garbage", setStr("soon", time.Minute)}, {"negative", setStr("-5", time.Minute)},
		{"exponent", setStr("1e3", time.Minute)}, {"20 digits", setStr("99999999999999999999", time.Minute)},
		{"a year ahead of its TTL", func(ctx context.Context, c redis.UniversalClient, k string, now time.Time) error {
			return c.Set(ctx, k, strconv.FormatInt(now.Add(366*24*time.Hour).UnixMicro(), 10), time.Minute).Err()
		}},
		{"10 minutes ahead without a TTL", func(ctx context.Context, c redis.UniversalClient, k string, now time.Time) error {
			return c.Set(ctx, k, strconv.FormatInt(now.Add(10*time.Minute).UnixMicro(), 10), 0).Err()
		}}}
	hset := func(field, v string) func(context.Context, redis.UniversalClient, string, time.Time) error {
		return func(ctx context.Context, c redis.UniversalClient, k string, _ time.Time) error {
			return c.HSet(ctx, k, field, v).Err()
		}
	}
	config := []badValue{wrongString, {"garbage", hset("per_minute", "abc")}, {"leading zero", hset("per_hour", "05")},
		{"zero", hset("burst", "0")}, {"negative", hset("per_minute", "-1")}, {"above 2^40", hset("per_day", "1099511627777")},
		{"log rate above 100000", hset("per_minute", "5000000")}, {"GCRA faster than 10µs", hset("per_hour", "360000001")}}
	block := []badValue{wrongList, {"garbage", setStr("not a block!", time.Minute)},
		{"TTL above 366 days", setStr("1", 367*24*time.Hour)}}
	out := map[string][]badValue{
		"ratelimit:config:{api_key_id}": config,
		"ratelimit:block:{identifier}":  block,
	}
	for p := range layouts() {
		switch {
		case p == "ratelimit:config:{api_key_id}" || p == "ratelimit:block:{identifier}":
		case p == "ratelimit:refusals:{identifier}" || p == "ratelimit:adjust:{identifier}:{request_id}" || p == "ratelimit:events" || p == "ratelimit:instances":
		case strings.HasPrefix(p, "rate_") || strings.HasPrefix(p, "sliding_") || strings.HasPrefix(p, "ratelimit:sliding:"):
			out[p] = logs
		case strings.HasPrefix(p, "ratelimit:api:") || strings.HasPrefix(p, "ratelimit:ip:"):
			out[p] = counters
		case strings.HasPrefix(p, "ratelimit:swc:"):
			out[p] = swc
		default:
			out[p] = gcra
		}
	}
	return out
}

// snapshot renders a key's type, value and whether it has a TTL.
func snapshot(t *testing.T, e *harness.Env, k string) string {
	t.Helper()
	ctx := e.Ctx()
	typ, err := e.Client.Type(ctx, k).Result()
	require.NoError(t, err)
	ttl, err := e.Client.PTTL(ctx, k).Result()
	require.NoError(t, err)
	var v any
	switch typ {
	case "string":
		v, err = e.Client.Get(ctx, k).Result()
	case "hash":
		var m map[string]string
		m, err = e.Client.HGetAll(ctx, k).Result()
		ks := make([]string, 0, len(m))
		for f, x := range m {
			ks = append(ks, f+"="+x)
		}
		sort.Strings(ks)
		v = ks
	case "zset":
		v, err = e.Client.ZRangeWithScores(ctx, k, 0, -1).Result()
	case "list":
		v, err = e.Client.LRange(ctx, k, 0, -1).Result()
	}
	require.NoError(t, err)
	return fmt.Sprintf("%s %v ttl=%v", typ, v, ttl > 0)
}

// Every key pattern of the package, with a wrong type, garbage and values
// out of range: every operation that reads the key fails with
// keys.ErrCorrupt naming that exact key, and leaves it as it was.
func TestCorruptionTable(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ls, bad := layouts(), badValues()
	var registered []string
	for _, tm := range harness.Registry(t, ratelimit.Schema()).Owned("ratelimit") {
		registered = append(registered, tm.String())
	}
	require.Len(t, ls, len(registered))
	for _, p := range registered {
		require.Contains(t, ls, p, "every registered pattern has a layout")
	}
	n := 0
	for p, lay := range ls {
		for _, b := range bad[p] {
			t.Run(p+"/"+b.name, func(t *testing.T) {
				k := e.NS.Prefix + lay.key
				require.NoError(t, b.write(ctx, e.Client, k, e.Now()))
				defer e.Client.Del(ctx, k)
				before := snapshot(t, e, k)
				lean := newLimiter(t, e, lay.policy, lay.opts...)
				general := newLimiter(t, e, lay.policy, append([]ratelimit.Option{ratelimit.WithRuntimeConfig()}, lay.opts...)...)
				ops := map[string]func() error{
					"allow":         func() error { _, err := lean.Allow(ctx, "c"); return err },
					"peek":          func() error { _, err := lean.Peek(ctx, "c"); return err },
					"general allow": func() error { _, err := general.AllowN(ctx, "c", 1); return err },
				}
				switch p {
				case "ratelimit:block:{identifier}":
					ops["block"] = func() error { return lean.Block(ctx, "c", time.Second) }
				case "ratelimit:config:{api_key_id}":
					if b.name != "log rate above 100000" && b.name != "GCRA faster than 10µs" {
						ops["config"] = func() error { _, err := general.Config(ctx, "c"); return err }
					}
					if b.name == wrongString.name {
						ops["set config"] = func() error { return general.SetConfig(ctx, "c", ratelimit.Config{PerMinute: 3}) }
					}
				}
				for name, f := range ops {
					err := f()
					require.ErrorIs(t, err, keys.ErrCorrupt, "%s: %v", name, err)
					var ce *keys.CorruptError
					require.True(t, errors.As(err, &ce), name)
					require.Equal(t, k, ce.Key, "%s names the key: %v", name, err)
					require.Equal(t, before, snapshot(t, e, k), "%s left the key as it was", name)
				}
				n++
			})
		}
	}
	t.Logf("%d corrupt values over %d key patterns", n, len(ls))
	require.Empty(t, e.Keys(), "nothing else written")
}
