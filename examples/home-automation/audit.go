package main

import (
	"context"

	"github.com/redschema/redschema/keys"
)

// auditResult is the keyspace audit as the API shows it.
type auditResult struct {
	Namespace string           `json:"namespace"`
	Scanned   int64            `json:"scanned"`
	Patterns  map[string]int64 `json:"patterns"` // template -> keys
	Problems  []string         `json:"problems"`
}

// audit scans the "ha:" keyspace (every master of a cluster) against the
// registry: keys without their TTL, of the wrong type, or matching no
// pattern.
func (a *app) audit(ctx context.Context) (auditResult, error) {
	rep, err := keys.Default().Audit(ctx, a.rdb, keys.AuditOptions{Namespace: a.ns})
	if err != nil {
		return auditResult{}, err
	}
	res := auditResult{Namespace: a.ns.Prefix, Scanned: rep.Scanned, Patterns: map[string]int64{}, Problems: rep.Problems()}
	for _, p := range rep.Patterns {
		if p.Keys > 0 {
			res.Patterns[p.Template.String()] = p.Keys
		}
	}
	if res.Problems == nil {
		res.Problems = []string{}
	}
	return res, nil
}
