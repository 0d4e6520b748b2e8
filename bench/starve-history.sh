#!/usr/bin/env bash
# starve-history.sh - /api/health latency while one local peer keeps CONNS connections from
# 127.0.0.1 each sending 3 pipelined /api/history requests (4 metrics x 4 GPUs x 60 s at 10
# samples/s), again as soon as they are answered, for WINDOW seconds; the probe connects from
# 127.0.0.2.
# Usage: bench/starve-history.sh   (env: CONNS=1500 WINDOW=15 DAEMON_ARGS=...)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
CONNS=${CONNS:-1500}
WINDOW=${WINDOW:-15}
DAEMON_ARGS=${DAEMON_ARGS:-}
ulimit -n $((CONNS + 256)) 2>/dev/null || { echo "bench: need $((CONNS + 256)) open files" >&2; exit 1; }

echo "# starve-history: $(machine)"
# shellcheck disable=SC2086
start_daemon --simulate 4 --poll-interval 100 --db none $DAEMON_ARGS
sleep 6 # a minute of history is 600 samples; let some accumulate
echo "# daemon: gpumon serve --simulate 4 --poll-interval 100 --db none $DAEMON_ARGS; $CONNS connections x 3 pipelined /api/history, ${WINDOW}s"
echo "result $(timeout $((WINDOW + 30)) "$PY" "$BENCH_DIR/starve.py" "$PORT" history "$CONNS" "$WINDOW")"
