package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// cleanup removes every key under ns, node by node, with SCAN (never KEYS).
func cleanup(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace) error {
	return keys.ForEachNode(ctx, rdb, func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, ns.Match(), 100).Iterator()
		for it.Next(ctx) {
			if err := n.Unlink(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	})
}
