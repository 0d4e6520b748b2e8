#!/usr/bin/env bash
# idle-cpu.sh - CPU of an idle daemon: `gpumon serve --simulate 8` at the default 1 Hz, no
# clients; after SETTLE seconds, utime+stime from /proc/PID/stat (10 ms ticks) and the threads'
# run time from /proc/PID/task/*/schedstat (ns) over WINDOW seconds, as % of one core; also per
# thread, to tell the sampler from the lws loop. Repeated RUNS times.
# Usage: bench/idle-cpu.sh   (env: WINDOW=60 SETTLE=5 RUNS=1 SIMULATE=8 DAEMON_ARGS=)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WINDOW=${WINDOW:-60}
SETTLE=${SETTLE:-5}
RUNS=${RUNS:-1}
SIMULATE=${SIMULATE:-8}
DAEMON_ARGS=${DAEMON_ARGS:-}

thread_ns() { # "tid:ns ..." for every thread
    for t in /proc/"$1"/task/*; do printf '%s:%s ' "${t##*/}" "$(cut -d' ' -f1 "$t/schedstat")"; done
}

echo "# idle-cpu: $(machine)"
# shellcheck disable=SC2086
start_daemon --simulate "$SIMULATE" $DAEMON_ARGS
echo "# daemon: gpumon serve --simulate $SIMULATE $DAEMON_ARGS (poll 1000 ms unless given), pid $DAEMON_PID"
sleep "$SETTLE"
for r in $(seq 1 "$RUNS"); do
    # the sample counter is read outside the window: serving /metrics is not idle work
    s0=$(curl -s "$BASE/metrics" | awk '/^gpumon_sampler_samples_total/ { print $2 }')
    t0=$(cpu_ticks "$DAEMON_PID"); n0=$(sched_ns "$DAEMON_PID"); th0=$(thread_ns "$DAEMON_PID")
    sleep "$WINDOW"
    t1=$(cpu_ticks "$DAEMON_PID"); n1=$(sched_ns "$DAEMON_PID"); th1=$(thread_ns "$DAEMON_PID")
    s1=$(curl -s "$BASE/metrics" | awk '/^gpumon_sampler_samples_total/ { print $2 }')
    per_thread=$(awk -v a="$th0" -v b="$th1" -v w="$WINDOW" 'BEGIN {
        n = split(a, x, " "); for (i = 1; i <= n; i++) { split(x[i], kv, ":"); s[kv[1]] = kv[2] }
        n = split(b, y, " "); for (i = 1; i <= n; i++) { split(y[i], kv, ":");
            printf "tid%s=%.3f%% ", kv[1], 100 * (kv[2] - s[kv[1]]) / 1e9 / w } }')
    awk -v t0="$t0" -v t1="$t1" -v n0="$n0" -v n1="$n1" -v hz="$HZ" -v w="$WINDOW" \
        -v s0="$s0" -v s1="$s1" -v pt="$per_thread" -v r="$r" 'BEGIN {
        printf "run=%d window_s=%d samples=%d ticks=%d cpu_pct_ticks=%.3f cpu_pct_schedstat=%.3f cpu_ms_per_sample=%.3f threads: %s\n",
            r, w, s1 - s0, t1 - t0, 100 * (t1 - t0) / hz / w, 100 * (n1 - n0) / 1e9 / w,
            (n1 - n0) / 1e6 / (s1 - s0), pt }'
done
echo "# rss_kib=$(rss_kib "$DAEMON_PID")"
stop_daemon
