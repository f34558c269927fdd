package bench

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/bench/benchutil"
)

// The AI memory benchmarks compare aimemory's append (one script: push,
// cap, TTLs, request ID, daily tokens, conversation list) and windows
// (one MULTI/EXEC of plain reads at the default cap) with the naive sequence LangChain-style Redis
// histories run: a pipelined RPUSH, LTRIM, EXPIRE per message, and LRANGE
// for reading (the whole list for a token budget, selected in Go). Both
// sides store the same JSON messages in conversations at the cap (50), so
// every append evicts.
const (
	aiParallel = 8
	aiConvs    = 200 // conversations, 10 per user
	aiCap      = 50
	aiTokens   = 50 // per message
)

var aiContent = strings.Repeat("a sentence of a chat message, ", 7) // 210 bytes

// aiSide is one implementation under benchmark.
type aiSide struct {
	name   string
	append func(ctx context.Context, conv int) error
	last   func(ctx context.Context, conv, n int) ([]aimemory.Message, error)
	budget func(ctx context.Context, conv, tokens int) ([]aimemory.Message, error)
}

func aiUserConv(conv int) (string, string) {
	return "user-" + strconv.Itoa(conv/10), "conv-" + strconv.Itoa(conv)
}

func aiSides(b *testing.B, e *benchutil.Env) []aiSide {
	mem, err := aimemory.New(e.Client, aimemory.WithNamespace(e.NS))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mem.Close() })
	naiveKey := func(conv int) string { return e.NS.Prefix + "naive:conv:" + strconv.Itoa(conv) }
	msgJSON, err := json.Marshal(map[string]any{"role": "user", "content": aiContent, "timestamp": "2026-01-16T10:00:00.000Z", "tokens": aiTokens})
	if err != nil {
		b.Fatal(err)
	}
	decode := func(raw []string) ([]aimemory.Message, error) {
		out := make([]aimemory.Message, len(raw))
		for i, s := range raw {
			var w struct {
				Role      aimemory.Role `json:"role"`
				Content   string        `json:"content"`
				Timestamp time.Time     `json:"timestamp"`
				Tokens    int           `json:"tokens"`
			}
			if err := json.Unmarshal([]byte(s), &w); err != nil {
				return nil, err
			}
			out[i] = aimemory.Message{Role: w.Role, Content: w.Content, Timestamp: w.Timestamp, Tokens: w.Tokens}
		}
		return out, nil
	}
	return []aiSide{
		{
			name: "redschema",
			append: func(ctx context.Context, conv int) error {
				u, c := aiUserConv(conv)
				_, err := mem.Append(ctx, u, c, []aimemory.Message{{Role: aimemory.User, Content: aiContent, Tokens: aiTokens}})
				return err
			},
			last: func(ctx context.Context, conv, n int) ([]aimemory.Message, error) {
				u, c := aiUserConv(conv)
				w, err := mem.Window(ctx, u, c, aimemory.WithLastN(n))
				return w.Messages, err
			},
			budget: func(ctx context.Context, conv, tokens int) ([]aimemory.Message, error) {
				u, c := aiUserConv(conv)
				w, err := mem.Window(ctx, u, c, aimemory.WithTokenBudget(tokens))
				return w.Messages, err
			},
		},
		{
			name: "naive",
			append: func(ctx context.Context, conv int) error {
				k := naiveKey(conv)
				pipe := e.Client.Pipeline()
				pipe.RPush(ctx, k, msgJSON)
				pipe.LTrim(ctx, k, -aiCap, -1)
				pipe.Expire(ctx, k, time.Hour)
				_, err := pipe.Exec(ctx)
				return err
			},
			last: func(ctx context.Context, conv, n int) ([]aimemory.Message, error) {
				raw, err := e.Client.LRange(ctx, naiveKey(conv), int64(-n), -1).Result()
				if err != nil {
					return nil, err
				}
				return decode(raw)
			},
			budget: func(ctx context.Context, conv, tokens int) ([]aimemory.Message, error) {
				raw, err := e.Client.LRange(ctx, naiveKey(conv), 0, -1).Result()
				if err != nil {
					return nil, err
				}
				all, err := decode(raw)
				if err != nil {
					return nil, err
				}
				used, i := 0, len(all)
				for i > 0 && used+all[i-1].Tokens <= tokens {
					i--
					used += all[i].Tokens
				}
				return slices.Clone(all[i:]), nil
			},
		},
	}
}

// aiCommands are the commands each side runs, for Redis CPU (a script's
// own commands are inside its EVALSHA time; windows without a large cap
// are a MULTI/EXEC of plain reads).
var aiCommands = map[string][]string{
	"redschema": {"evalsha", "eval", "multi", "exec", "llen", "lindex", "lrange", "hmget"},
	"naive":     {"rpush", "ltrim", "expire", "lrange"},
}

// BenchmarkAIMemory: append (one message into a full conversation),
// window-last20 (the 20 newest messages), window-budget (the newest
// messages within 2,000 tokens: 40 messages), each side by side with the
// naive commands. Metrics: ns/op, allocs/op, trips/op (round trips),
// ops/s, redis-µs/op (INFO commandstats µs of the side's commands).
func BenchmarkAIMemory(b *testing.B) {
	e := benchutil.New(b)
	ctx := context.Background()
	sides := aiSides(b, e)
	for _, s := range sides {
		for conv := 0; conv < aiConvs; conv++ {
			for i := 0; i < aiCap; i++ {
				if err := s.append(ctx, conv); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	type op func(ctx context.Context, s aiSide, conv int) error
	for _, o := range []struct {
		name string
		run  op
	}{
		{"append", func(ctx context.Context, s aiSide, conv int) error { return s.append(ctx, conv) }},
		{"window-last20", func(ctx context.Context, s aiSide, conv int) error {
			ms, err := s.last(ctx, conv, 20)
			if err == nil && len(ms) != 20 {
				b.Fatalf("%s: %d messages", s.name, len(ms))
			}
			return err
		}},
		{"window-budget", func(ctx context.Context, s aiSide, conv int) error {
			ms, err := s.budget(ctx, conv, 2000)
			if err == nil && len(ms) != 2000/aiTokens {
				b.Fatalf("%s: %d messages", s.name, len(ms))
			}
			return err
		}},
	} {
		for _, s := range sides {
			b.Run(o.name+"/"+s.name, func(b *testing.B) {
				var next atomic.Int64
				e.Warm(b)
				usec := sensorUsec(ctx, e.Client, aiCommands[s.name])
				b.ReportAllocs()
				b.SetParallelism(aiParallel)
				start := time.Now()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := o.run(ctx, s, int(next.Add(1)%aiConvs)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				elapsed := time.Since(start)
				e.ReportTrips(b)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
				b.ReportMetric((sensorUsec(ctx, e.Client, aiCommands[s.name])-usec)/float64(b.N), "redis-µs/op")
			})
		}
	}
}

var _ redis.UniversalClient // the sides use the benchmark's client
