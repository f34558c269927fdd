// Package connect opens the Redis a program talks to, with the client
// settings the redschema packages rely on: the server or cluster a URL
// names, or, when there is none, an embedded in-process Redis (miniredis)
// for development, examples and demos.
//
//	rdb, closeRedis, err := connect.FromEnv(ctx, os.Stdout) // REDIS_URL, or embedded
//	if err != nil {
//		return err
//	}
//	defer closeRedis()
//
// A URL is "redis://host:port/db" (or rediss://) for a server,
// "host:port,host:port,..." for a cluster, or "" for the embedded Redis;
// OpenLayout opens one client per database of a keys.Layout.
//
// # Guarantees
//
//   - Every client has ContextTimeoutEnabled, without which go-redis ignores
//     context deadlines while a server hangs (the redschema constructors
//     refuse such a client).
//   - Open, FromEnv and OpenLayout ping every client, within the context,
//     before returning one.
//   - Cluster clients (ClusterOptions) reload the slot map every 2 s from
//     the first node that answers, so calls soon find a promoted replica.
//   - Describe and the line FromEnv prints never show a password.
//   - This is the only package of the module that imports miniredis; the
//     schema packages never do.
package connect
