package main

import (
	"context"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

// audit scans the "ha:" keyspace (every master of a cluster) against the
// registry: keys without their TTL, of the wrong type, or matching no
// pattern.
func (a *app) audit(ctx context.Context) (keys.AuditSummary, error) {
	reg, err := keys.Compose(chat.Schema(), metrics.Schema(), presence.Schema(), ratelimit.Schema(), session.Schema())
	if err != nil {
		return keys.AuditSummary{}, err
	}
	rep, err := reg.Audit(ctx, a.rdb, keys.AuditOptions{Namespace: a.ns})
	if err != nil {
		return keys.AuditSummary{}, err
	}
	return rep.Summary(a.ns), nil
}
