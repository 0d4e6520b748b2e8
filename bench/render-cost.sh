#!/usr/bin/env bash
# render-cost.sh - CPU per sample of the sampler thread (read the provider, append to the
# history, render every cached body: sample JSON, per-GPU JSON, /metrics, compat shapes, WS
# frames) with --simulate 8 and 64 at --poll-interval 100, no clients. The sampler is the busiest
# thread other than the main (lws) thread; its run time from /proc/PID/task/TID/schedstat over
# WINDOW seconds divided by the samples taken. Also prints gpumon_sampler_last_duration_seconds
# (the daemon's own gauge) and the size of the rendered bodies.
# Usage: bench/render-cost.sh   (env: GPUS="8 64" WINDOW=20)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
GPUS=${GPUS:-8 64}
WINDOW=${WINDOW:-20}

thread_ns() {
    for t in /proc/"$1"/task/*; do printf '%s:%s ' "${t##*/}" "$(cut -d' ' -f1 "$t/schedstat")"; done
}
samples() {
    curl -s "$BASE/metrics" | awk '/^gpumon_sampler_samples_total/ { print $2 }'
}

echo "# render-cost: $(machine)"
for g in $GPUS; do
    start_daemon --simulate "$g" --poll-interval 100 --history 6m
    sleep 2
    sizes=""
    for ep in /api/gpus /metrics /api/v1/monitoring/gpu-metrics /stats /api/processes; do
        sizes+="${ep}=$(curl -s -o /dev/null -w '%{size_download}' "$BASE$ep") "
    done
    s0=$(samples); th0=$(thread_ns "$DAEMON_PID")
    sleep "$WINDOW"
    th1=$(thread_ns "$DAEMON_PID"); s1=$(samples)
    gauge=$(curl -s "$BASE/metrics" | awk '/^gpumon_sampler_last_duration_seconds/ { print $2 }')
    awk -v a="$th0" -v b="$th1" -v main="$DAEMON_PID" -v n=$((s1 - s0)) -v g="$g" \
        -v gauge="$gauge" -v sizes="$sizes" 'BEGIN {
        k = split(a, x, " "); for (i = 1; i <= k; i++) { split(x[i], kv, ":"); s[kv[1]] = kv[2] }
        k = split(b, y, " "); best = 0; mainns = 0
        for (i = 1; i <= k; i++) { split(y[i], kv, ":"); d = kv[2] - s[kv[1]]
            if (kv[1] == main) mainns = d; else if (d > best) { best = d; tid = kv[1] } }
        printf "gpus=%d samples=%d sampler_tid=%s sampler_ms_per_sample=%.3f sampler_cpu_pct_at_10Hz=%.2f main_thread_ms_per_sample=%.3f gauge_last_duration_s=%s bytes: %s\n",
            g, n, tid, best / 1e6 / n, 100 * best / 1e9 / (n / 10), mainns / 1e6 / n, gauge, sizes }'
    stop_daemon
done
