package call

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Queue adds c to pipe, a pipeline of the Runner's client, by hash
// (EVALSHA), and returns what decodes its reply once pipe has been
// executed, as Run would. So a package's script-backed reads can share a
// pipeline with plain commands, or with another package's reads on the
// same client: one round trip (per node on a cluster) for all of them.
//
// A call that cannot be sent that way is sent alone, with Run, by the
// returned function instead: one whose script the node lacked
// (NOSCRIPT: the first call after a restart, a new master), one that met
// a slot migration or a failover, a durable one, and one with too few
// keys (which Run refuses).
func (r *Runner) Queue(ctx context.Context, pipe redis.Pipeliner, c Call) func() (Reply, error) {
	if r.durable(c.Op) || c.Op.checkKeys(c.Keys) != nil {
		return func() (Reply, error) { return r.Run(ctx, c.Op, c.Keys, c.Args...) }
	}
	cmd := c.Op.script.EvalSha(ctx, pipe, c.Keys, c.Args...)
	return func() (Reply, error) {
		v, err := cmd.Result()
		if redis.HasErrorPrefix(err, "NOSCRIPT") || redirected(err) {
			return r.Run(ctx, c.Op, c.Keys, c.Args...)
		}
		r.reloadOnOutage(ctx, err)
		return r.decode(ctx, c.Op, c.Keys, v, withCtx(ctx, err))
	}
}
