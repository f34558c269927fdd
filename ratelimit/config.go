package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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
//
// Each field is validated against the rules of this limiter it overrides,
// with the limits New enforces (Rate up to 2^40, a Sliding rate up to
// 100 000, a GCRA interval Period/Rate of at least 10µs, Burst up to 2^40):
// a negative or out-of-range value fails with ErrInvalidLimit naming the
// field, before anything is written. The checks re-validate the stored
// config in the script, so a hash written by other means cannot bypass
// these limits either. On a Limiter built without WithRuntimeConfig,
// SetConfig fails with ErrNoRuntimeConfig (its checks would never read the
// config). One round trip (MULTI/EXEC on one key).
func (l *Limiter) SetConfig(ctx context.Context, apiKeyID string, c Config) error {
	if l.cfgIdx == 0 {
		return fmt.Errorf("ratelimit: set config %q: %w", apiKeyID, ErrNoRuntimeConfig)
	}
	k, err := configKey.Key(l.ns, apiKeyID)
	if err != nil {
		return fmt.Errorf("ratelimit: set config: %w", err)
	}
	if err := l.checkConfig(c); err != nil {
		return fmt.Errorf("ratelimit: set config %q: %w", apiKeyID, err)
	}
	vals := c.values()
	var set []any
	var del []string
	for i, v := range vals {
		switch {
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

// checkConfig validates c against the rules it overrides, as New would.
func (l *Limiter) checkConfig(c Config) error {
	vals := c.values()
	for i, v := range vals {
		if v < 0 || v > maxRate {
			return fmt.Errorf("%w: %s = %d must be between 0 and 2^40", ErrInvalidLimit, configFields[i], v)
		}
	}
	for i, r := range l.policy {
		f := -1
		switch r.Limit.Period {
		case time.Minute:
			f = 0
		case time.Hour:
			f = 1
		case 24 * time.Hour:
			f = 2
		}
		lim := r.Limit
		if f >= 0 && vals[f] > 0 {
			lim.Rate = vals[f]
			if r.Algorithm == Sliding && lim.Rate > maxSlidingRate {
				return fmt.Errorf("%w: %s = %d: rule %d is a Sliding log, at most %d", ErrInvalidLimit, configFields[f], lim.Rate, i, maxSlidingRate)
			}
			if err := lim.validate(r.Algorithm); err != nil {
				return fmt.Errorf("%s = %d (rule %d, %v): %w", configFields[f], lim.Rate, i, r.Algorithm, err)
			}
		}
		if r.Algorithm == GCRA && vals[3] > 0 {
			lim.Burst = vals[3]
			if err := lim.validate(r.Algorithm); err != nil {
				return fmt.Errorf("burst = %d (rule %d, %v): %w", lim.Burst, i, r.Algorithm, err)
			}
		}
	}
	return nil
}

// isCount reports whether s is what SetConfig writes: a decimal integer
// without sign, spaces or leading zeros (the scripts accept nothing else).
func isCount(s string) bool {
	if s == "" || len(s) > 13 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Config returns the stored config of apiKeyID; a zero Config when there is
// none. A field that is not a decimal integer in 1..2^40 written as
// SetConfig writes it (no sign, spaces, leading zeros, exponent or hex)
// gives a keys.ErrCorrupt error naming the key; the scripts reject exactly
// the same values. ErrNoRuntimeConfig on a Limiter built without
// WithRuntimeConfig. One round trip (HMGET).
func (l *Limiter) Config(ctx context.Context, apiKeyID string) (Config, error) {
	if l.cfgIdx == 0 {
		return Config{}, fmt.Errorf("ratelimit: config %q: %w", apiKeyID, ErrNoRuntimeConfig)
	}
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
		if !ok || !isCount(s) || perr != nil || n < 1 || n > maxRate {
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
