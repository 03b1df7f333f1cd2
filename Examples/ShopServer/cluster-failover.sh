#!/usr/bin/env bash
# Two shop servers sharing visitors through a local Redis Cluster (3 masters, 3 replicas, node
# timeout 1 s) under wrk; the master of slot 0 SIGKILLed 4 s into a new-visitor load.
#
#   ./cluster-failover.sh        (needs wrk, redis-server and redis-cli; ports 8080-8082 and 30001-30006)
#
# Prints: how many of 1,000 returning visitors, first decided by both servers at once, the two
# answer differently (0 expected); wrk's figures through the kill (no error expected); the
# collector's bucketing events against what the servers sent; the visitor records in the
# cluster's masters afterwards (every visitor decided, none lost to the failover).
set -euo pipefail
cd "$(dirname "$0")"
for tool in wrk redis-server redis-cli; do command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 1; }; done
for product in shop-server collector; do
    swift build -c release --product "$product" >/dev/null 2>&1 || { echo "the release build of $product failed" >&2; exit 1; }
done
bin=$(swift build -c release --show-bin-path)
dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

ports=(30001 30002 30003 30004 30005 30006)
declare -A redis_pid
for port in "${ports[@]}"; do
    mkdir -p "$dir/$port"
    redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
        --cluster-node-timeout 1000 --dir "$dir/$port" --save "" --appendonly no >"$dir/$port/log" 2>&1 &
    redis_pid[$port]=$!
    pids+=($!)
done
sleep 0.5
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") --cluster-replicas 1 --cluster-yes >/dev/null
for _ in $(seq 100); do redis-cli -p 30001 cluster info | grep -q cluster_state:ok && break; sleep 0.1; done
sleep 2

"$bin/collector" --port 8081 >"$dir/collector.log" 2>&1 &
collector=$!
"$bin/shop-server" --port 8080 --collector http://127.0.0.1:8081 --redis-cluster 30001,30002,30003 >"$dir/a.log" 2>&1 &
a=$!
"$bin/shop-server" --port 8082 --collector http://127.0.0.1:8081 --redis-cluster 30002,30003,30001 >"$dir/b.log" 2>&1 &
b=$!
pids+=("$a" "$b" "$collector")
for port in 8080 8082; do
    for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/plain" && break; sleep 0.1; done
done

# The 1,000 returning visitors on both servers at once: their first decisions race.
wrk -t1 -c16 -d3s -s load/returning.lua http://127.0.0.1:8080/ >/dev/null & w=$!
wrk -t1 -c16 -d3s -s load/returning.lua http://127.0.0.1:8082/ >/dev/null
wait "$w"
split=0
for i in $(seq 0 999); do
    x=$(curl -fs -b "convert_visitor_id=returning-$i" http://127.0.0.1:8080/ | head -1)
    y=$(curl -fs -b "convert_visitor_id=returning-$i" http://127.0.0.1:8082/ | head -1)
    [ "$x" = "$y" ] || split=$((split + 1))
done
echo "returning visitors answered differently by the two servers: $split of 1000"

victim=$(redis-cli -p 30001 cluster nodes | awk '$3 ~ /master/ && $9 ~ /^0-/ { split($2, a, ":"); split(a[2], b, "@"); print b[1] }')
(sleep 4; kill -KILL "${redis_pid[$victim]}") & k=$!
wrk -t1 -c16 -d12s -s load/new.lua http://127.0.0.1:8080/ >"$dir/wa" & w=$!
wrk -t1 -c16 -d12s -s load/new.lua http://127.0.0.1:8082/ >"$dir/wb"
wait "$w" "$k" || true
echo "new visitors, master $victim killed at 4 s:"
for f in wa wb; do grep -E "Latency |requests in|Non-2xx|Socket errors" "$dir/$f" | sed 's/^/   /'; done
sleep 3
kill -TERM "$a" "$b"; wait "$a" "$b" || true
kill -TERM "$collector"; wait "$collector" || true
grep '^collector:' "$dir/collector.log"
for log in a b; do grep -h "shut down" "$dir/$log.log" | sed 's/.*shut down/   shut down/'; done
keys=0
for port in "${ports[@]}"; do
    [ "$port" = "$victim" ] && continue
    [ "$(redis-cli -p "$port" role | head -1)" = master ] && keys=$((keys + $(redis-cli -p "$port" dbsize)))
done
echo "visitor records in the cluster's masters: $keys (1,000 returning + the new visitors wrk counted + those in flight at its end)"
