#!/usr/bin/env bash
# reader-cost.sh - what a sample costs with and without a reader: `gpumon serve --simulate 8
# --poll-interval 100` (10 samples/s); the daemon's CPU (schedstat, % of one core) over WINDOW
# seconds with no client, then with one WebSocket client on /ws/gpu taking every sample
# (--ws-max-rate 10), then with one client polling /api/gpus 10 times a second.
# Usage: bench/reader-cost.sh   (env: WINDOW=20 SIMULATE=8)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WINDOW=${WINDOW:-20}
SIMULATE=${SIMULATE:-8}
WS_CLIENT=${WS_CLIENT:-$WORK/ws_fanout}
[ -x "$WS_CLIENT" ] || cc -O2 -Wall -Wextra -o "$WS_CLIENT" "$BENCH_DIR/ws_fanout.c" || exit 1

pct() { awk -v a="$1" -v b="$2" -v w="$WINDOW" 'BEGIN { printf "%.2f", 100 * (b - a) / 1e9 / w }'; }
echo "# reader-cost: $(machine)"
start_daemon --simulate "$SIMULATE" --poll-interval 100 --ws-max-rate 10
sleep 3
n0=$(sched_ns "$DAEMON_PID"); sleep "$WINDOW"; n1=$(sched_ns "$DAEMON_PID")
idle=$(pct "$n0" "$n1")
ws=$("$WS_CLIENT" -p "$PORT" -P /ws/gpu -n 1 -d "$WINDOW" -w 2 -r 10 -s "$DAEMON_PID" |
    sed -n 's/.*"server_cpu_pct_of_core_schedstat":\([0-9.]*\).*/\1/p')
n0=$(sched_ns "$DAEMON_PID")
end=$(($(date +%s) + WINDOW))
while [ "$(date +%s)" -lt "$end" ]; do
    curl -s -o /dev/null "$BASE/api/gpus"
    sleep 0.1
done
n1=$(sched_ns "$DAEMON_PID")
poll=$(pct "$n0" "$n1")
echo "result no_client_pct=$idle ws_gpu_10hz_pct=$ws poll_api_gpus_10hz_pct=$poll" \
    "idle_over_ws=$(awk -v a="$idle" -v b="$ws" 'BEGIN { printf "%.0f%%", 100 * a / b }')"
stop_daemon
