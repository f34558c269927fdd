package cache

import (
	"strings"
	"time"
)

// Rule gives the endpoints that match Endpoint their freshness. Endpoint
// is a path pattern: literal segments match themselves, "{name}" matches
// any one segment, and a final "*" matches one or more segments
// ("/api/v1/settings/*").
type Rule struct {
	Endpoint string
	TTL      time.Duration
	// Grace is the stale-while-revalidate window of these endpoints; 0
	// means the Cache's WithGrace.
	Grace time.Duration
}

// Policy maps endpoints to freshness: the first Rule that matches wins;
// other endpoints get Default (0 means 60s, the AI platform's default).
type Policy struct {
	Rules   []Rule
	Default time.Duration
}

// SeedPolicy returns the AI platform's TTL table (docs/ai-platform.md):
// /api/v1/files/list 30s, /api/v1/files/{id} 300s, /api/v1/settings/*
// 3600s, /api/v1/workflows/list 60s, /api/v1/ai/models 86400s, default
// 60s.
func SeedPolicy() Policy {
	return Policy{
		Rules: []Rule{
			{Endpoint: "/api/v1/files/list", TTL: 30 * time.Second},
			{Endpoint: "/api/v1/files/{id}", TTL: 300 * time.Second},
			{Endpoint: "/api/v1/settings/*", TTL: 3600 * time.Second},
			{Endpoint: "/api/v1/workflows/list", TTL: 60 * time.Second},
			{Endpoint: "/api/v1/ai/models", TTL: 86400 * time.Second},
		},
		Default: defaultTTL,
	}
}

// Rule returns the rule for endpoint (a rule with Default's TTL and no
// Endpoint when none matches).
func (p Policy) Rule(endpoint string) Rule {
	if i := p.index(endpoint); i >= 0 {
		return p.Rules[i]
	}
	d := p.Default
	if d == 0 {
		d = defaultTTL
	}
	return Rule{TTL: d}
}

// index returns the index of endpoint's rule, or -1 for the default.
func (p Policy) index(endpoint string) int {
	for i, r := range p.Rules {
		if matchEndpoint(r.Endpoint, endpoint) {
			return i
		}
	}
	return -1
}

func matchEndpoint(pattern, endpoint string) bool {
	ps := strings.Split(pattern, "/")
	es := strings.Split(endpoint, "/")
	for i, p := range ps {
		if p == "*" && i == len(ps)-1 {
			return len(es) > i && es[i] != ""
		}
		if i >= len(es) {
			return false
		}
		if len(p) > 2 && p[0] == '{' && p[len(p)-1] == '}' {
			if es[i] == "" {
				return false
			}
			continue
		}
		if p != es[i] {
			return false
		}
	}
	return len(es) == len(ps)
}

// check validates the policy against the max TTL.
func (p Policy) check(op string, maxTTL time.Duration) error {
	if p.Default < 0 || p.Default > maxTTL {
		return pkg.Invalidf(op, "policy default %v outside [0, %v]", p.Default, maxTTL)
	}
	for _, r := range p.Rules {
		switch {
		case r.Endpoint == "":
			return pkg.Invalidf(op, "policy rule without an endpoint")
		case strings.Contains(strings.TrimSuffix(r.Endpoint, "*"), "*"):
			return pkg.Invalidf(op, "policy rule %q: '*' only as the last segment", r.Endpoint)
		case r.TTL < time.Millisecond || r.TTL > maxTTL:
			return pkg.Invalidf(op, "policy rule %q: TTL %v outside [1ms, %v]", r.Endpoint, r.TTL, maxTTL)
		case r.Grace < 0 || r.Grace > maxTTL:
			return pkg.Invalidf(op, "policy rule %q: grace %v outside [0, %v]", r.Endpoint, r.Grace, maxTTL)
		}
	}
	return nil
}
