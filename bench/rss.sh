#!/usr/bin/env bash
# rss.sh - resident memory of `gpumon serve --simulate 8` holding a full hour of history.
# An hour at the default 1 s poll is 3600 history slots; the same 3600 slots fill in 6 minutes
# at --poll-interval 100 with --history 6m, and the ring's pages are only resident once written
# (malloc'd, filled slot by slot). So: start that daemon, read VmRSS every STEP seconds until the
# ring is full (3600 points for a series over 360 s) plus a margin, then report RSS, VmHWM, the
# anonymous memory, and the history allocation from /api/config. For comparison, the RSS of a
# daemon at the defaults (1 h at 1 s, ring still empty) after a few seconds.
# Usage: bench/rss.sh   (env: FILL_S=380 STEP=30 SIMULATE=8; AFTER=script run against the full
#                        daemon with PORT/DAEMON_PID set, e.g. AFTER=bench/history.sh)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
FILL_S=${FILL_S:-380}
STEP=${STEP:-30}
SIMULATE=${SIMULATE:-8}
AFTER=${AFTER:-}

echo "# rss: $(machine)"
start_daemon --simulate "$SIMULATE"
sleep 3
echo "defaults: gpumon serve --simulate $SIMULATE (1 h at 1000 ms, ring empty) rss_kib=$(rss_kib "$DAEMON_PID")" \
    "config=$(curl -s "$BASE/api/config" | grep -o '"history_slots":[0-9]*,"history_bytes":[0-9]*')"
stop_daemon

start_daemon --simulate "$SIMULATE" --poll-interval 100 --history 6m
echo "# daemon: gpumon serve --simulate $SIMULATE --poll-interval 100 --history 6m, port $PORT"
echo "config $(curl -s "$BASE/api/config" | grep -oE '"(history_seconds|poll_interval_ms|history_slots|history_bytes)":[0-9]+' | tr '\n' ' ')"
t_start=$(date +%s)
while :; do
    el=$(($(date +%s) - t_start))
    pts=$(curl -s "$BASE/api/history?metric=utilization.gpu&gpu=0&seconds=360" |
        grep -o '\],\[' | wc -l)
    echo "t=${el}s rss_kib=$(rss_kib "$DAEMON_PID") points_gpu0=$((pts + 1))"
    [ "$el" -ge "$FILL_S" ] && break
    sleep "$STEP"
done
echo "full: $(grep -E '^(VmRSS|VmHWM|RssAnon|RssFile|VmData)' "/proc/$DAEMON_PID/status" | tr -s ' \t' ' ' | tr '\n' ' ')"
echo "smaps_rollup: $(grep -E '^(Rss|Pss|Anonymous|Private_Dirty)' "/proc/$DAEMON_PID/smaps_rollup" | tr -s ' \t' ' ' | tr '\n' ' ')"
echo "health: $(curl -s "$BASE/api/health")"
if [ -n "$AFTER" ]; then
    export PORT DAEMON_PID BASE
    "$AFTER"
    echo "after $AFTER: rss_kib=$(rss_kib "$DAEMON_PID")"
fi
stop_daemon
