package queue

import "github.com/redis/go-redis/v9"

// nopClient is never used: New does no I/O.
func nopClient() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) }
