//go:build peers

// Package bench holds the benchmarks. This file only pins the peer libraries
// the benchmarks compare against, so go.mod lists them before each
// benchmark file exists; it is never built.
package bench

import (
	_ "github.com/alexedwards/scs/goredisstore"
	_ "github.com/alexedwards/scs/v2"
	_ "github.com/bsm/redislock"
	_ "github.com/centrifugal/centrifuge"
	_ "github.com/go-redis/redis_rate/v10"
	_ "github.com/go-redsync/redsync/v4"
	_ "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	_ "github.com/hibiken/asynq"
	_ "github.com/ulule/limiter/v3"
	_ "github.com/ulule/limiter/v3/drivers/store/redis"
)
