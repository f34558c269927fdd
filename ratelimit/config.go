package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Config is the runtime configuration of one API key, stored in seed 001's
// hash ratelimit:config:{api_key_id} with the fields per_minute, per_hour,
// per_day and burst (decimal strings). A zero field means "no override":
// the limiter's policy applies. Limiters built WithRuntimeConfig read it in
// the same script as the check.
type Config struct {
	PerMinute int `json:"per_minute"`
	PerHour   int `json:"per_hour"`
	PerDay    int `json:"per_day"`
	Burst     int `json:"burst"`
}

var configFields = [4]string{"per_minute", "per_hour", "per_day", "burst"}

func (c Config) values() [4]int { return [4]int{c.PerMinute, c.PerHour, c.PerDay, c.Burst} }

// SetConfig stores c for apiKeyID, replacing the previous config: positive
// fields are written, zero fields removed, and an all-zero Config deletes
// the hash. The hash has no TTL (it is operator data, one per API key).
// Negative values fail with ErrInvalidLimit before anything is written.
// One round trip (MULTI/EXEC on one key).
func (l *Limiter) SetConfig(ctx context.Context, apiKeyID string, c Config) error {
	k, err := configKey.Key(l.ns, apiKeyID)
	if err != nil {
		return fmt.Errorf("ratelimit: set config: %w", err)
	}
	vals := c.values()
	var set []any
	var del []string
	for i, v := range vals {
		switch {
		case v < 0 || v > maxRate:
			return fmt.Errorf("ratelimit: set config %q: %w: %s = %d", apiKeyID, ErrInvalidLimit, configFields[i], v)
		case v == 0:
			del = append(del, configFields[i])
		default:
			set = append(set, configFields[i], strconv.Itoa(v))
		}
	}
	_, err = l.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(set) == 0 {
			p.Del(ctx, k)
			return nil
		}
		p.HSet(ctx, k, set...)
		if len(del) > 0 {
			p.HDel(ctx, k, del...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ratelimit: set config %q: %w", apiKeyID, err)
	}
	return nil
}

// Config returns the stored config of apiKeyID; a zero Config when there is
// none. A field that is not a positive integer gives a keys.ErrCorrupt error
// naming the key. One round trip (HMGET).
func (l *Limiter) Config(ctx context.Context, apiKeyID string) (Config, error) {
	k, err := configKey.Key(l.ns, apiKeyID)
	if err != nil {
		return Config{}, fmt.Errorf("ratelimit: config: %w", err)
	}
	vs, err := l.client.HMGet(ctx, k, configFields[:]...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		err = keys.Corrupt(k, err)
	}
	if err != nil {
		return Config{}, fmt.Errorf("ratelimit: config %q: %w", apiKeyID, err)
	}
	var out [4]int
	for i, v := range vs {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		n, perr := strconv.Atoi(s)
		if !ok || perr != nil || n < 1 || n > maxRate {
			return Config{}, fmt.Errorf("ratelimit: config %q: %w", apiKeyID,
				keys.Corrupt(k, fmt.Errorf("field %s = %v is not a positive integer", configFields[i], v)))
		}
		out[i] = n
	}
	return Config{PerMinute: out[0], PerHour: out[1], PerDay: out[2], Burst: out[3]}, nil
}

// DeleteConfig removes the config of apiKeyID, so the policy's limits apply
// again. One round trip (DEL).
func (l *Limiter) DeleteConfig(ctx context.Context, apiKeyID string) error {
	k, err := configKey.Key(l.ns, apiKeyID)
	if err != nil {
		return fmt.Errorf("ratelimit: delete config: %w", err)
	}
	if err := l.client.Del(ctx, k).Err(); err != nil {
		return fmt.Errorf("ratelimit: delete config %q: %w", apiKeyID, err)
	}
	return nil
}
