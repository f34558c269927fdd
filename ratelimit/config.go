package ratelimit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redschema/redschema/keys"
)

// Config is the runtime configuration of one API key, stored in the hash
// ratelimit:config:{api_key_id} with the fields per_minute, per_hour,
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
// a negative or out-of-range value fails with ErrInvalid naming the field,
// before anything is written. The checks re-validate the stored config in
// the script, so a hash written by other means cannot bypass these limits
// either (it is reported as corrupt). On a Limiter built without
// WithRuntimeConfig, SetConfig fails with ErrNoRuntimeConfig (its checks
// would never read the config).
//
// One round trip (a script). The script announces apiKeyID on the events
// channel, as Reset does, so that every instance's deny cache
// (WithDenyCache) drops the refusals it cached under the old config.
// Writing the same fields again changes nothing, so a call that go-redis
// resends after losing its reply has the first call's outcome. keys.ErrCorrupt naming the key when it is not a
// hash (nothing written).
func (l *Limiter) SetConfig(ctx context.Context, apiKeyID string, c Config) error {
	const op = "set config"
	if l.cfgIdx == 0 {
		return pkg.Fail(op, "", ErrNoRuntimeConfig, nil)
	}
	k, err := pkg.Key(op, configKey, l.opt.ns, apiKeyID)
	if err != nil {
		return err
	}
	if err := l.checkConfig(op, c); err != nil {
		return err
	}
	vals := c.values()
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = strconv.Itoa(v)
	}
	_, err = l.run.Run(ctx, setConfigOp, []string{k}, append(args, l.channel, apiKeyID)...)
	if err == nil {
		l.forget(apiKeyID)
	}
	return err
}

// checkConfig validates c against the rules it overrides, as New would.
func (l *Limiter) checkConfig(op string, c Config) error {
	vals := c.values()
	for i, v := range vals {
		if v < 0 || v > maxRate {
			return pkg.Invalidf(op, "%s = %d outside 0..2^40", configFields[i], v)
		}
	}
	for i, r := range l.policy {
		lim := r.Limit
		if f := configField(r.Limit.Period); f >= 0 && vals[f] > 0 {
			lim.Rate = vals[f]
			if err := lim.validate(r.Algorithm); err != nil {
				return pkg.Invalidf(op, "%s = %d (rule %d, %v): %v", configFields[f], lim.Rate, i, r.Algorithm, err)
			}
		}
		if r.Algorithm == GCRA && vals[3] > 0 {
			lim.Burst = vals[3]
			if err := lim.validate(r.Algorithm); err != nil {
				return pkg.Invalidf(op, "burst = %d (rule %d, %v): %v", lim.Burst, i, r.Algorithm, err)
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
// SetConfig writes it (no sign, spaces, leading zeros, exponent or hex),
// or a key that is not a hash, gives a keys.ErrCorrupt error naming the
// key; the scripts reject exactly the same values. ErrNoRuntimeConfig on a
// Limiter built without WithRuntimeConfig. One round trip (HMGET).
func (l *Limiter) Config(ctx context.Context, apiKeyID string) (Config, error) {
	const op = "config"
	if l.cfgIdx == 0 {
		return Config{}, pkg.Fail(op, "", ErrNoRuntimeConfig, nil)
	}
	k, err := pkg.Key(op, configKey, l.opt.ns, apiKeyID)
	if err != nil {
		return Config{}, err
	}
	vs, err := l.run.Client().HMGet(ctx, k, configFields[:]...).Result()
	if err != nil {
		return Config{}, pkg.Wrap(ctx, op, k, err)
	}
	var out [4]int
	for i, v := range vs {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		n, perr := strconv.Atoi(s)
		if !ok || !isCount(s) || perr != nil || n < 1 || n > maxRate {
			return Config{}, pkg.Fail(op, k, nil, keys.Corrupt(k, fmt.Errorf("field %s = %.32q is not an integer in 1..2^40", configFields[i], fmt.Sprint(v))))
		}
		out[i] = n
	}
	return Config{PerMinute: out[0], PerHour: out[1], PerDay: out[2], Burst: out[3]}, nil
}

// DeleteConfig removes the config of apiKeyID, so the policy's limits apply
// again. One round trip (a script that deletes the hash and announces
// apiKeyID on the events channel, so that every instance's deny cache
// drops its refusals, as SetConfig does); deleting twice is deleting once.
// ErrInvalid for an unusable apiKeyID.
func (l *Limiter) DeleteConfig(ctx context.Context, apiKeyID string) error {
	const op = "delete config"
	k, err := pkg.Key(op, configKey, l.opt.ns, apiKeyID)
	if err != nil {
		return err
	}
	_, err = l.run.Run(ctx, delConfigOp, []string{k}, l.channel, apiKeyID)
	if err == nil {
		l.forget(apiKeyID)
	}
	return err
}
