#!/usr/bin/env bash
# Stops the chaos cluster of scripts/chaos-up.sh (127.0.0.1:7101-7106).
set -euo pipefail

dir=${REDSCHEMA_CHAOS_DIR:-/tmp/redschema-chaos}
for p in 7101 7102 7103 7104 7105 7106; do
	pidfile="$dir/$p/redis.pid"
	[ -f "$pidfile" ] || continue
	pid=$(cat "$pidfile")
	kill -CONT "$pid" 2>/dev/null || true # a test may have frozen it
	redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || kill -9 "$pid" 2>/dev/null || true
	rm -rf "${dir:?}/$p"
done
echo "chaos-down: stopped 127.0.0.1:7101-7106"
