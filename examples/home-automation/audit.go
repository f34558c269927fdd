package main

import (
	"context"

	"github.com/redschema/redschema/keys"
)

// audit scans the "ha:" keyspace (every master of a cluster) against the
// registry: keys without their TTL, of the wrong type, or matching no
// pattern.
func (a *app) audit(ctx context.Context) (keys.AuditSummary, error) {
	rep, err := keys.Default().Audit(ctx, a.rdb, keys.AuditOptions{Namespace: a.ns})
	if err != nil {
		return keys.AuditSummary{}, err
	}
	return rep.Summary(a.ns), nil
}
