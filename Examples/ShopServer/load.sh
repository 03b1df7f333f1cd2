#!/usr/bin/env bash
# Load test of the shop: GET / (decided by the SDK) against GET /plain (the same cookie work
# without it), for returning visitors (cookies of 1,000 known visitors) and new ones (no cookie),
# run alternately; then SIGTERM during a load of POST /buy, comparing the conversions the server
# answered "tracked" with those the collector received; `crash`: the same load with file
# persistence, SIGKILL halfway, then a restart on the same directory that sends what the journal
# held.
#
#   ./load.sh [compare|buy|crash|all]      (default all)
#   ROUNDS=5 DURATION=10s THREADS=2 CONNECTIONS=32 ./load.sh compare
#   SERVER_ARGS="--no-hooks" ./load.sh compare      (options for shop-server)
#
# Needs wrk (Debian: apt-get install -y wrk). Builds in release, starts the collector and the
# server as processes of their own on ports 8081 and 8080, and stops them at the end.
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-all}
rounds=${ROUNDS:-5}
duration=${DURATION:-10s}
threads=${THREADS:-2}
connections=${CONNECTIONS:-32}
port=${PORT:-8080}
collector_port=${COLLECTOR_PORT:-8081}
base="http://127.0.0.1:$port"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

logs=$(mktemp -d)
for product in shop-server collector; do
    swift build -c release --product "$product" >"$logs/build.log" 2>&1 || { cat "$logs/build.log" >&2; exit 1; }
done
bin=$(swift build -c release --show-bin-path)
server_pid="" collector_pid=""

cleanup() {
    for pid in $server_pid $collector_pid; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

wait_for() {   # URL
    for _ in $(seq 100); do
        curl -fs -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing answers at $1" >&2
    exit 1
}

start() {
    "$bin/collector" --port "$collector_port" >"$logs/collector.log" 2>&1 &
    collector_pid=$!
    "$bin/shop-server" --port "$port" --collector "http://127.0.0.1:$collector_port" "$@" >"$logs/server.log" 2>&1 &
    server_pid=$!
    wait_for "http://127.0.0.1:$collector_port/stats"
    wait_for "$base/plain"
}

stop() {   # waits for both to exit, server first
    kill -TERM "$server_pid"; wait "$server_pid" || true
    kill -TERM "$collector_pid"; wait "$collector_pid" || true
    server_pid="" collector_pid=""
}

# Waits until the collector has received every event of the previous run, so that no run pays
# for the tracking of another.
settle() {
    local last="" now
    for _ in $(seq 100); do
        now=$(curl -fs "http://127.0.0.1:$collector_port/stats")
        [ "$now" = "$last" ] && return 0
        last=$now
        sleep 1.2   # longer than the SDK's release interval (1 s)
    done
}

# CPU seconds × 100 a process has used so far (Linux: utime + stime from /proc), or nothing.
ticks() { [ -r "/proc/$1/stat" ] && awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# One wrk run: prints "REQ_PER_SEC P99 SERVER_CPU_US_PER_REQUEST COLLECTOR_CPU_US_PER_REQUEST".
run() {   # PATH SCRIPT
    settle
    local s0 c0 out
    s0=$(ticks "$server_pid") c0=$(ticks "$collector_pid")
    out=$(wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "load/$2" "$base$1")
    echo "$out" | awk -v s0="$s0" -v s1="$(ticks "$server_pid")" -v c0="$c0" -v c1="$(ticks "$collector_pid")" '
        /Requests\/sec:/ { rps = $2 } $1 == "99%" { p99 = $2 } / requests in / { n = $1 }
        END {
            cpu = (s0 == "" || n == 0) ? "- -" : sprintf("%.1f %.1f", (s1 - s0) * 10000 / n, (c1 - c0) * 10000 / n)
            print rps, p99, cpu
        }'
}

median() {   # VALUES...
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

compare() {
    # shellcheck disable=SC2086
    start ${SERVER_ARGS:-}
    # Warm up: the 1,000 returning visitors get their stored decisions, caches fill.
    wrk -t"$threads" -c"$connections" -d3s -s load/returning.lua "$base/" >/dev/null
    wrk -t"$threads" -c"$connections" -d3s -s load/returning.lua "$base/plain" >/dev/null

    # CPU: microseconds of CPU per request, in the server and in the collector.
    printf "%-9s %-6s %-6s %12s %10s %12s %9s\n" visitors path round "req/s" p99 "server CPU" collector
    declare -A samples rounds_rps cpu collector_cpu
    for round in $(seq "$rounds"); do
        # Each round reverses the order of the two paths, so a drift of the machine's speed
        # within a round weighs on both alike.
        paths="/ /plain"
        [ $((round % 2)) -eq 0 ] && paths="/plain /"
        for visitors in returning new; do
            for path in $paths; do
                read -r rps p99 server_us collector_us < <(run "$path" "$visitors.lua")
                printf "%-9s %-6s %-6s %12s %10s %9s µs %6s µs\n" "$visitors" "$path" "$round" "$rps" "$p99" "$server_us" "$collector_us"
                samples["$visitors $path"]+="$rps "
                rounds_rps["$visitors $path $round"]=$rps
                cpu["$visitors $path"]+="$server_us "
                collector_cpu["$visitors $path"]+="$collector_us "
            done
        done
    done
    echo
    # Three readings of one series, since the machine's speed may drift within it: the medians
    # of each path's runs, the median of each round's own ratio, and CPU per request (the server's
    # and, for /, the collector's), which drifts least.
    for visitors in returning new; do
        sdk=$(median ${samples["$visitors /"]})
        plain=$(median ${samples["$visitors /plain"]})
        ratios=""
        for round in $(seq "$rounds"); do
            ratios+="$(awk -v s="${rounds_rps["$visitors / $round"]}" -v p="${rounds_rps["$visitors /plain $round"]}" 'BEGIN { printf "%.4f", s / p }') "
        done
        sdk_cpu=$(median ${cpu["$visitors /"]}) plain_cpu=$(median ${cpu["$visitors /plain"]})
        sdk_collector=$(median ${collector_cpu["$visitors /"]})
        awk -v v="$visitors" -v s="$sdk" -v p="$plain" -v r="$(median $ratios)" -v sc="$sdk_cpu" -v pc="$plain_cpu" -v cc="$sdk_collector" \
            'BEGIN {
                printf "%-9s median req/s: / %.0f, /plain %.0f: %.1f %% of /plain; median of the rounds'"'"' ratios %.1f %%", v, s, p, 100 * s / p, 100 * r
                if (sc + cc > 0) printf "; CPU per request: / %s µs + collector %s µs, /plain %s µs: %.1f %%", sc, cc, pc, 100 * pc / (sc + cc)
                printf "\n"
            }'
    done
    stop
    echo "collector: $(grep '^collector:' "$logs/collector.log" | sed 's/^collector: //')"
    echo "server: $(grep -m1 'shut down' "$logs/server.log" | cut -c1-400)"
    grep -m3 "rejected a body" "$logs/collector.log" | cut -c1-400 || true
    grep -m3 -E "warning|error" "$logs/server.log" | cut -c1-400 || true
}

buy() {
    start
    # SIGTERM the server halfway through the load; wrk then sees its connections close.
    (sleep 5; kill -TERM "$server_pid") &
    wrk -t"$threads" -c"$connections" -d10s -s load/buy.lua "$base" | grep -E "Requests/sec|wrk received|Socket errors" || true
    wait "$server_pid" || true
    server_pid=""
    kill -TERM "$collector_pid"; wait "$collector_pid" || true
    collector_pid=""
    echo "-- server (shutdown order):"
    grep -E "stopped|starting|shut down|answered" "$logs/server.log" | sed 's/^/   /'
    echo "-- collector:"
    grep '^collector:' "$logs/collector.log" | sed 's/^/   /'
}

crash() {
    local data
    data=$(mktemp -d)
    start --data-dir "$data"
    # SIGKILL the server halfway through the load: no shutdown, no last flush.
    (sleep 5; kill -KILL "$server_pid") &
    wrk -t"$threads" -c"$connections" -d10s -s load/buy.lua "$base" | grep -E "Requests/sec|wrk received|Socket errors" || true
    wait "$server_pid" || true
    echo "-- collector after the kill: $(curl -fs "http://127.0.0.1:$collector_port/stats")"
    # The next start on the same directory sends what the journal held.
    "$bin/shop-server" --port "$port" --collector "http://127.0.0.1:$collector_port" --data-dir "$data" >>"$logs/server.log" 2>&1 &
    server_pid=$!
    wait_for "$base/plain"
    settle
    stop
    echo "-- collector after the restart:"
    grep '^collector:' "$logs/collector.log" | sed 's/^/   /'
    rm -rf "$data"
}

case "$mode" in
    compare) compare ;;
    buy) buy ;;
    crash) crash ;;
    all) compare; echo; buy; echo; crash ;;
    *) echo "usage: $0 [compare|buy|crash|all]" >&2; exit 2 ;;
esac
rm -rf "$logs"
