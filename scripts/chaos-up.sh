#!/usr/bin/env bash
# Builds, from scratch, the Redis Cluster the chaos tier breaks on purpose:
# 3 masters and 3 replicas on 127.0.0.1:7101-7106, a 1 s node timeout (so a
# failover takes seconds), nothing persisted. The chaos tests reshard it,
# leave slots migrating and fail masters over; every run starts from a
# fresh one. Tear down with scripts/chaos-down.sh.
set -euo pipefail

dir=${REDSCHEMA_CHAOS_DIR:-/tmp/redschema-chaos}
ports=(7101 7102 7103 7104 7105 7106)

bash "$(dirname "$0")/chaos-down.sh" >/dev/null 2>&1 || true
command -v redis-server >/dev/null || bash "$(dirname "$0")/redis-up.sh" >/dev/null

answers() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

for p in "${ports[@]}"; do
	rm -rf "${dir:?}/$p"
	mkdir -p "$dir/$p"
	redis-server --port "$p" --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
		--dir "$dir/$p" --logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid" \
		--cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" \
		--cluster-node-timeout 1000 --cluster-replica-validity-factor 0
	for _ in $(seq 1 100); do answers "$p" && break; sleep 0.1; done
done
addrs=()
for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >/dev/null

for _ in $(seq 1 200); do
	ok=1
	for p in "${ports[@]}"; do
		info=$(redis-cli -p "$p" cluster info 2>/dev/null) || { ok=0; break; }
		grep -q 'cluster_state:ok' <<<"$info" && grep -q 'cluster_known_nodes:6' <<<"$info" || { ok=0; break; }
	done
	if [ "$ok" = 1 ] && [ "$(redis-cli -p 7101 cluster nodes | grep -c slave)" = 3 ]; then
		echo "chaos-up: 3 masters + 3 replicas on 127.0.0.1:7101-7106"
		exit 0
	fi
	sleep 0.1
done
echo "chaos-up: the chaos cluster did not come up" >&2
redis-cli -p 7101 cluster nodes >&2 || true
exit 1
