#!/usr/bin/env bash
# Stops what scripts/redis-up.sh started: the cluster nodes on 7001-7003 and
# the standalone server on 6379 if (and only if) redis-up.sh started it.
set -euo pipefail

dir=${REDSCHEMA_REDIS_DIR:-/tmp/redschema-redis}
for p in 7001 7002 7003 6379; do
	pidfile="$dir/$p/redis.pid"
	[ -f "$pidfile" ] || continue
	redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$pidfile")" 2>/dev/null || true
	rm -rf "${dir:?}/$p"
	echo "redis-down: stopped 127.0.0.1:$p"
done
