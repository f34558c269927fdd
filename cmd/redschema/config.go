package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
)

// appConfig is an application's own options, read from -config: what
// the flags cannot say, so that every page of the dashboard shows that
// application's truth (its chat tag, its presence lifetimes, its
// limiters, its interval jobs), and its prefix, hash-tag setting and
// layout for every command. docs/dashboard.md documents the format.
type appConfig struct {
	Prefix     string                   `json:"prefix"`
	NoHashTags bool                     `json:"no_hash_tags"`
	Layout     string                   `json:"layout"` // "" or "seed"
	Chat       *chatConfig              `json:"chat"`
	Queue      *queueConfig             `json:"queue"`
	Metrics    *metricsConfig           `json:"metrics"`
	Presence   *presenceConfig          `json:"presence"`
	Limiters   map[string]limiterConfig `json:"limiters"`
	Intervals  map[string]duration      `json:"intervals"` // interval job -> its interval
}

type chatConfig struct {
	Tag        string `json:"tag"`         // the deployment hash tag (chat.WithTag)
	WithoutTag bool   `json:"without_tag"` // the backend's own keys (chat.WithoutTag)
	Capacity   int    `json:"capacity"`    // an admin's default capacity (chat.WithCapacity)
}

type metricsConfig struct {
	// SharedKeys reads the counters the home-automation backend's Node
	// service also writes (metrics.WithSharedKeys).
	SharedKeys bool `json:"shared_keys"`
}

type queueConfig struct {
	// SeedConsumers keeps the actions' wake-up token off the executions
	// list the AI platform's Node consumers pop (queue.WithSeedConsumers).
	SeedConsumers bool `json:"seed_consumers"`
}

type presenceConfig struct {
	Profile   string   `json:"profile"` // "detailed" (default) or "compact"
	TTL       duration `json:"ttl"`     // overrides the profile's
	Retention duration `json:"retention"`
	Layout    string   `json:"layout"` // "hash" (default) or "single-key"
}

type limiterConfig struct {
	Rules         []ruleConfig `json:"rules"`
	RuntimeConfig bool         `json:"runtime_config"` // ratelimit.WithRuntimeConfig
}

type ruleConfig struct {
	Algorithm string   `json:"algorithm"` // fixed, sliding, swc or gcra
	Rate      int      `json:"rate"`
	Per       duration `json:"per"`
	Burst     int      `json:"burst"`
}

// duration is a time.Duration written as Go spells it ("90s", "1h").
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// readConfig reads and checks the -config file: unknown fields, a bad
// algorithm, profile or layout are errors naming the file.
func readConfig(file string) (*appConfig, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-config: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	c := &appConfig{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("-config %s: %v", file, err)
	}
	if _, err := c.presenceOptions(); err != nil {
		return nil, fmt.Errorf("-config %s: %v", file, err)
	}
	for _, name := range c.limiterNames() {
		if _, err := c.Limiters[name].policy(); err != nil {
			return nil, fmt.Errorf("-config %s: limiter %q: %v", file, name, err)
		}
	}
	return c, nil
}

func (c *appConfig) limiterNames() []string {
	names := make([]string, 0, len(c.Limiters))
	for n := range c.Limiters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (l limiterConfig) policy() (ratelimit.Policy, error) {
	if len(l.Rules) == 0 {
		return nil, fmt.Errorf("no rules")
	}
	var p ratelimit.Policy
	for _, r := range l.Rules {
		var a ratelimit.Algorithm
		for _, cand := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding, ratelimit.SlidingCounter, ratelimit.GCRA} {
			if cand.String() == r.Algorithm {
				a = cand
			}
		}
		if a == 0 {
			return nil, fmt.Errorf("algorithm %q: want fixed, sliding, swc or gcra", r.Algorithm)
		}
		p = append(p, ratelimit.Rule{Algorithm: a, Limit: ratelimit.Limit{Rate: r.Rate, Period: time.Duration(r.Per), Burst: r.Burst}})
	}
	return p, nil
}

func (c *appConfig) presenceOptions() ([]presence.Option, error) {
	if c.Presence == nil {
		return nil, nil
	}
	p := c.Presence
	var prof presence.Profile
	switch p.Profile {
	case "", "detailed":
		prof = presence.DetailedProfile()
	case "compact":
		prof = presence.CompactProfile()
	default:
		return nil, fmt.Errorf("presence profile %q: want detailed or compact", p.Profile)
	}
	if p.TTL != 0 {
		prof.TTL = time.Duration(p.TTL)
	}
	if p.Retention != 0 {
		prof.Retention = time.Duration(p.Retention)
	}
	opts := []presence.Option{presence.WithProfile(prof)}
	switch p.Layout {
	case "", "hash":
	case "single-key":
		opts = append(opts, presence.WithLayout(presence.LayoutSingleKey))
	default:
		return nil, fmt.Errorf("presence layout %q: want hash or single-key", p.Layout)
	}
	return opts, nil
}

// dashboardOptions are the dashboard options the config gives: chat,
// presence, limiters (built over cs, returned to be closed) and
// intervals. The options' own checks (in dashboard.New and the packages'
// New) report bad values.
func (c *appConfig) dashboardOptions(cs *keys.Clients, ns keys.Namespace) (out []dashboard.Option, lims []*ratelimit.Limiter, err error) {
	defer func() {
		if err != nil {
			for _, l := range lims {
				_ = l.Close()
			}
		}
	}()
	po, err := c.presenceOptions()
	if err != nil {
		return nil, nil, err
	}
	if po != nil {
		out = append(out, dashboard.WithPresence(po...))
	}
	if ch := c.Chat; ch != nil {
		var co []chat.Option
		if ch.Tag != "" {
			co = append(co, chat.WithTag(ch.Tag))
		}
		if ch.WithoutTag {
			co = append(co, chat.WithoutTag())
		}
		if ch.Capacity != 0 {
			co = append(co, chat.WithCapacity(ch.Capacity))
		}
		if po != nil {
			co = append(co, chat.WithPresence(po...))
		}
		out = append(out, dashboard.WithChat(co...))
	}
	if c.Queue != nil && c.Queue.SeedConsumers {
		out = append(out, dashboard.WithQueue(queue.WithSeedConsumers()))
	}
	if c.Metrics != nil && c.Metrics.SharedKeys {
		out = append(out, dashboard.WithMetricsReader(metrics.WithSharedKeys()))
	}
	for _, name := range c.limiterNames() {
		l := c.Limiters[name]
		p, err := l.policy()
		if err != nil {
			return nil, lims, fmt.Errorf("limiter %q: %v", name, err)
		}
		opts := []ratelimit.Option{ratelimit.WithNamespace(ns)}
		if l.RuntimeConfig {
			opts = append(opts, ratelimit.WithRuntimeConfig())
		}
		lim, err := ratelimit.New(cs.For(keys.RateLimits), p, opts...)
		if err != nil {
			return nil, lims, fmt.Errorf("limiter %q: %v", name, strings.TrimPrefix(err.Error(), "ratelimit: "))
		}
		lims = append(lims, lim)
		out = append(out, dashboard.WithLimiter(name, lim))
	}
	for job, d := range c.Intervals {
		out = append(out, dashboard.WithInterval(job, time.Duration(d)))
	}
	return out, lims, nil
}
