#!/usr/bin/env bash
# fleet.sh - the cost of the fleet view on a large synthetic fleet (bench/fake_prometheus.py:
# NODES nodes of GPUS GPUs, one node in ten down, answers prepared in advance): the wall time of
# `gpumon cluster status --format json` and `cluster select` (median of RUNS) and the size of
# the answers; then a daemon with --prometheus: the first GET /api/fleet (the queries and the
# model) and cached answers under wrk (CONNS connections, DURATION), with the daemon's CPU.
# Usage: bench/fleet.sh   (env: NODES=1000 GPUS=8 RUNS=5 CONNS=4 DURATION=10s)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
NODES=${NODES:-1000}
GPUS=${GPUS:-8}
RUNS=${RUNS:-5}
CONNS=${CONNS:-4}
DURATION=${DURATION:-10s}

"$PY" "$BENCH_DIR/fake_prometheus.py" --nodes "$NODES" --gpus "$GPUS" --port-file "$WORK/prom" &
PROM_PID=$!
trap 'kill $PROM_PID 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 600); do [ -s "$WORK/prom" ] && break; sleep 0.05; done
PROM="http://127.0.0.1:$(cat "$WORK/prom")"

echo "# fleet: $(machine) nodes=$NODES gpus_per_node=$GPUS"
ids=$(curl -s "$PROM/api/v1/query?query=max%20by%20%28instance" | wc -c)
readings=$(curl -s "$PROM/api/v1/query?query=max%20by%20%28__name__" | wc -c)
echo "prometheus_answer_bytes gpus=$ids readings=$readings"

t() { # wall seconds of one run of the command
    local s e
    s=$(date +%s.%N)
    "$@" >"$WORK/out" 2>"$WORK/err"
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}
status=() select=()
for _ in $(seq 1 "$RUNS"); do
    status+=("$(t "$GPUMON" cluster status --format json --prometheus "$PROM")")
done
bytes=$(wc -c <"$WORK/out")
for _ in $(seq 1 "$RUNS"); do
    select+=("$(t "$GPUMON" cluster select --gpus 4 --prometheus "$PROM")")
done
echo "cluster_status_json_s median=$(median "${status[@]}") runs=${status[*]} output_bytes=$bytes"
echo "cluster_select_s median=$(median "${select[@]}") runs=${select[*]} chosen=$(cat "$WORK/out")"

start_daemon --simulate 1 --db none --prometheus "$PROM"
first=$(curl -s -o "$WORK/fleet.json" -w '%{time_total}' "$BASE/api/fleet")
echo "daemon_first_api_fleet_s=$first bytes=$(wc -c <"$WORK/fleet.json")"
c0=$(cpu_ticks "$DAEMON_PID")
out=$(wrk -t1 -c"$CONNS" -d"$DURATION" "$BASE/api/fleet" 2>&1)
c1=$(cpu_ticks "$DAEMON_PID")
rps=$(awk '/Requests\/sec/ { print $2 }' <<<"$out")
lat=$(awk '/Latency/ { print $2 }' <<<"$out")
non2xx=$(awk '/Non-2xx/ { print $NF }' <<<"$out")
secs=$(awk -v d="$DURATION" 'BEGIN { sub(/s$/, "", d); print d }')
awk -v r="$rps" -v l="$lat" -v a="$c0" -v b="$c1" -v hz="$HZ" -v s="$secs" -v n="${non2xx:-0}" \
    'BEGIN { printf "daemon_api_fleet_cached rps=%s latency_avg=%s non2xx=%s daemon_cpu_pct=%.1f cpu_ms_per_request=%.2f\n", r, l, n, 100 * (b - a) / hz / s, 1000 * (b - a) / hz / (r * s) }'
# The same, asked as a browser asks (Accept-Encoding: gzip): compressed once per refresh.
gz=$(curl -s -H 'Accept-Encoding: gzip' "$BASE/api/fleet" | wc -c)
c0=$(cpu_ticks "$DAEMON_PID")
out=$(wrk -t1 -c"$CONNS" -d"$DURATION" -H 'Accept-Encoding: gzip' "$BASE/api/fleet" 2>&1)
c1=$(cpu_ticks "$DAEMON_PID")
rps=$(awk '/Requests\/sec/ { print $2 }' <<<"$out")
lat=$(awk '/Latency/ { print $2 }' <<<"$out")
awk -v r="$rps" -v l="$lat" -v a="$c0" -v b="$c1" -v hz="$HZ" -v s="$secs" -v z="$gz" \
    'BEGIN { printf "daemon_api_fleet_cached_gzip bytes=%s rps=%s latency_avg=%s daemon_cpu_pct=%.1f cpu_ms_per_request=%.2f\n", z, r, l, 100 * (b - a) / hz / s, 1000 * (b - a) / hz / (r * s) }'
stop_daemon
