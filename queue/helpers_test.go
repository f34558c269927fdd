package queue_test

import "github.com/redis/go-redis/v9"

// redisNop is a client that is never used: New does no I/O.
func redisNop() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) }
