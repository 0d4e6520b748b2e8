#!/usr/bin/env bash
# starve-idle.sh - /api/health latency while one local peer holds idle connections: CONNS
# sockets from 127.0.0.1 that send nothing (more than the 4096-connection cap), reconnecting as
# the head deadline cuts them, for WINDOW seconds; the probe connects from 127.0.0.2.
# Usage: bench/starve-idle.sh   (env: CONNS=5000 WINDOW=25 DAEMON_ARGS="--max-connections-per-ip 0")
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
CONNS=${CONNS:-5000}
WINDOW=${WINDOW:-25}
DAEMON_ARGS=${DAEMON_ARGS:-}
ulimit -n $((CONNS + 256)) 2>/dev/null || { echo "bench: need $((CONNS + 256)) open files" >&2; exit 1; }

echo "# starve-idle: $(machine)"
# shellcheck disable=SC2086
start_daemon --simulate 4 --db none $DAEMON_ARGS
echo "# daemon: gpumon serve --simulate 4 --db none $DAEMON_ARGS; $CONNS idle connections, ${WINDOW}s"
echo "result $(timeout $((WINDOW + 30)) "$PY" "$BENCH_DIR/starve.py" "$PORT" idle "$CONNS" "$WINDOW")"
