#!/usr/bin/env bash
# ws-fanout.sh - WebSocket fan-out: CLIENTS connections to /ws/gpu (and /ws/metrics) of
# `gpumon serve --simulate 8 --poll-interval 200` (5 samples/s = 5 frames/s at the default
# --ws-max-rate 5), for WINDOW seconds; per-client delivery (min/median of received / published
# samples), the daemon's CPU from /proc over the same window, and the client's own CPU.
# The client is bench/ws_fanout.c (raw sockets + epoll), built here with cc.
# Usage: bench/ws-fanout.sh   (env: CLIENTS="1000 512" WINDOW=60 PATHS="/ws/gpu /ws/metrics"
#                              DAEMON_ARGS="--ws-max-rate 10")
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-1000 512}
WINDOW=${WINDOW:-60}
PATHS=${PATHS:-/ws/gpu /ws/metrics}
SIMULATE=${SIMULATE:-8}
DAEMON_ARGS=${DAEMON_ARGS:-} # extra flags, e.g. "--ws-max-rate 10"
WS_CLIENT=${WS_CLIENT:-$WORK/ws_fanout}
if [ ! -x "$WS_CLIENT" ]; then
    cc -O2 -Wall -Wextra -o "$WS_CLIENT" "$BENCH_DIR/ws_fanout.c" || exit 1
fi

echo "# ws-fanout: $(machine)"
# shellcheck disable=SC2086
start_daemon --simulate "$SIMULATE" --poll-interval 200 $DAEMON_ARGS
echo "# daemon: gpumon serve --simulate $SIMULATE --poll-interval 200 $DAEMON_ARGS, port $PORT"
echo "# idle before: rss_kib=$(rss_kib "$DAEMON_PID")"
for path in $PATHS; do
    for n in $CLIENTS; do
        echo "result $("$WS_CLIENT" -p "$PORT" -P "$path" -n "$n" -d "$WINDOW" -w 3 -r 5 -s "$DAEMON_PID")"
        sleep 2 # let the daemon see the previous clients go
    done
done
echo "# after: rss_kib=$(rss_kib "$DAEMON_PID")"
stop_daemon
