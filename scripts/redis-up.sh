#!/usr/bin/env bash
# Brings up what the test suite needs, idempotently:
#   - a standalone Redis on 127.0.0.1:6379, unless one already answers;
#   - a 3-master Redis Cluster on 127.0.0.1:7001-7003 (no replicas).
# Installs Debian's redis-server package with apt-get when it is missing.
# Data lives under ${REDSCHEMA_REDIS_DIR:-/tmp/redschema-redis}; nothing is
# persisted to disk. Tear down with scripts/redis-down.sh.
set -euo pipefail

dir=${REDSCHEMA_REDIS_DIR:-/tmp/redschema-redis}
ports=(7001 7002 7003)

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "redis-up: installing redis-server with apt-get"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
fi

answers() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

wait_for() {
	for _ in $(seq 1 100); do
		answers "$1" && return 0
		sleep 0.1
	done
	echo "redis-up: nothing answers on port $1" >&2
	return 1
}

start() { # port, extra args...
	local port=$1
	shift
	mkdir -p "$dir/$port"
	redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
		--dir "$dir/$port" --logfile "$dir/$port/redis.log" --pidfile "$dir/$port/redis.pid" "$@"
	wait_for "$port"
}

if answers 6379; then
	echo "redis-up: standalone Redis already answers on 127.0.0.1:6379"
else
	start 6379
	echo "redis-up: started standalone Redis on 127.0.0.1:6379"
fi

# Every node must see the same healthy 3-master cluster: one node that holds
# all slots alone also says cluster_state:ok.
cluster_ok() {
	local p info
	for p in "${ports[@]}"; do
		info=$(redis-cli -p "$p" cluster info 2>/dev/null) || return 1
		grep -q 'cluster_state:ok' <<<"$info" || return 1
		grep -q "cluster_known_nodes:${#ports[@]}" <<<"$info" || return 1
		grep -q "cluster_size:${#ports[@]}" <<<"$info" || return 1
	done
}

if cluster_ok; then
	echo "redis-up: cluster already up on 127.0.0.1:7001-7003"
	exit 0
fi

# Not ok: a fresh machine, or nodes left half-formed by an earlier run.
# The ports 7001-7003 are reserved for this cluster: rebuild it from scratch.
for p in "${ports[@]}"; do
	if answers "$p"; then
		redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true
		for _ in $(seq 1 50); do answers "$p" || break; sleep 0.1; done
	fi
	rm -rf "${dir:?}/$p"
	start "$p" --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 5000
done
redis-cli --cluster create 127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003 --cluster-replicas 0 --cluster-yes >/dev/null

for _ in $(seq 1 100); do
	if cluster_ok; then
		echo "redis-up: cluster up on 127.0.0.1:7001-7003"
		exit 0
	fi
	sleep 0.1
done
echo "redis-up: cluster on 7001-7003 did not reach cluster_state:ok" >&2
redis-cli -p "${ports[0]}" cluster info >&2 || true
exit 1
