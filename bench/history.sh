#!/usr/bin/env bash
# history.sh - cost of GET /api/history, which is built per request: for a few queries over a
# full ring of 3600 slots (8 simulated GPUs, --poll-interval 100 --history 6m), the response
# size, the time per request with one connection (wrk -t1 -c1), req/s with -t2 -c8, and the
# daemon's CPU per request (from /proc). Runs against PORT/DAEMON_PID when set (bench/rss.sh
# passes its full daemon), else starts a daemon and waits FILL_S seconds for the ring to fill.
# Usage: bench/history.sh   (env: FILL_S=370 DURATION=5)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-5}
echo "# history: $(machine)"
if [ -z "${PORT:-}" ]; then
    start_daemon --simulate 8 --poll-interval 100 --history 6m
    echo "# daemon: gpumon serve --simulate 8 --poll-interval 100 --history 6m, port $PORT; filling ${FILL_S:-370} s"
    sleep "${FILL_S:-370}"
else
    BASE="http://127.0.0.1:$PORT"
    echo "# daemon: given, port $PORT"
fi
QUERIES=(
    "metric=utilization.gpu&seconds=60"
    "metric=utilization.gpu&seconds=360"
    "metric=utilization.gpu,memory.used,power.draw,temperature.gpu&seconds=360"
    "metric=utilization.gpu,memory.used,power.draw,temperature.gpu&seconds=360&step=10"
    "metric=host.cpu.utilization&seconds=360"
)
for q in "${QUERIES[@]}"; do
    url="$BASE/api/history?$q"
    read -r code bytes < <(curl -s -o /dev/null -w '%{http_code} %{size_download}\n' "$url")
    series=$(curl -s "$url" | grep -o '"metric":' | wc -l)
    points=$(curl -s "$url" | grep -o '\[[0-9]\{13\},' | wc -l)
    t0=$(cpu_ticks "$DAEMON_PID")
    out1=$(wrk -t1 -c1 -d"${DURATION}s" --latency "$url" 2>&1)
    t1=$(cpu_ticks "$DAEMON_PID")
    out8=$(wrk -t2 -c8 -d"${DURATION}s" "$url" 2>&1)
    n1=$(awk '/requests in/ { print $1 }' <<<"$out1")
    rps1=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out1")
    p50=$(awk '$1 == "50%" { print $2 }' <<<"$out1")
    p99=$(awk '$1 == "99%" { print $2 }' <<<"$out1")
    rps8=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out8")
    cpu_us=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v n="$n1" 'BEGIN { printf "%.0f", (b - a) / hz * 1e6 / n }')
    echo "query=\"$q\" status=$code bytes=$bytes series=$series points=$points c1_req_s=$rps1 c1_p50=$p50 c1_p99=$p99 daemon_cpu_us_per_req=$cpu_us c8_req_s=$rps8"
done
