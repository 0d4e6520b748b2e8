#!/usr/bin/env bash
# wrk.sh - requests/s of the cached-bytes endpoints (/metrics, /api/gpus, the Fleet Manager
# shape) against `gpumon serve --simulate 8`: each endpoint RUNS times DURATION with -t2 at
# -c64 and -c8; prints every run and the median. wrk and the daemon share the machine's cores.
# The endpoints in GZIP_ENDPOINTS are measured again with "Accept-Encoding: gzip" (Prometheus
# always sends it); bytes= shows whether the daemon answered compressed.
# Usage: bench/wrk.sh    (env: RUNS=3 DURATION=10s SIMULATE=8 CONNS="64 8"
#                              GZIP_ENDPOINTS="/metrics /api/gpus", empty for none)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
SIMULATE=${SIMULATE:-8}
CONNS=${CONNS:-64 8}
ENDPOINTS=${ENDPOINTS:-/metrics /api/gpus /api/v1/monitoring/gpu-metrics}
GZIP_ENDPOINTS=${GZIP_ENDPOINTS-/metrics /api/gpus}

echo "# wrk: $(machine)"
start_daemon --simulate "$SIMULATE"
echo "# daemon: gpumon serve --simulate $SIMULATE (poll 1000 ms), port $PORT"
# bench ENDPOINT ENCODING : RUNS runs per connection count, then the median.
bench() {
    local ep=$1 enc=$2 hdr=() bytes c r out rps p50 p99 errs secs cpu t0 t1 rates
    [ "$enc" = gzip ] && hdr=(-H "Accept-Encoding: gzip")
    bytes=$(curl -s "${hdr[@]}" -o /dev/null -w '%{size_download}' "$BASE$ep")
    for c in $CONNS; do
        rates=()
        for r in $(seq 1 "$RUNS"); do
            t0=$(cpu_ticks "$DAEMON_PID")
            out=$(wrk -t2 -c"$c" -d"$DURATION" --latency "${hdr[@]}" "$BASE$ep" 2>&1)
            t1=$(cpu_ticks "$DAEMON_PID")
            rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
            p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
            p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
            errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | tr '\n' ';')
            secs=${DURATION%s}
            cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v s="$secs" 'BEGIN { printf "%.0f", 100 * (b - a) / hz / s }')
            echo "run endpoint=$ep encoding=$enc bytes=$bytes conns=$c run=$r req_s=$rps p50=$p50 p99=$p99 daemon_cpu_pct=$cpu ${errs:+errors=\"$errs\"}"
            rates+=("$rps")
        done
        echo "median endpoint=$ep encoding=$enc bytes=$bytes conns=$c req_s=$(median "${rates[@]}")"
    done
}
for ep in $ENDPOINTS; do
    bench "$ep" identity
done
for ep in $GZIP_ENDPOINTS; do
    bench "$ep" gzip
done
stop_daemon
