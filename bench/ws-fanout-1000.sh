#!/usr/bin/env bash
# ws-fanout-1000.sh - what-if for the issue's 1000-client target: the daemon refuses WebSocket
# clients beyond GM_WS_MAX_CLIENTS (512 when this was written, a compile-time constant in
# src/server/server_int.h, no flag; when it is already >= LIMIT this just runs ws-fanout.sh
# with 1000 clients). Otherwise it copies the source tree to a scratch directory, raises the limit there to LIMIT
# (default 1000; connections of all kinds stay capped by GM_FD_LIMIT = 1024), builds that copy
# RelWithDebInfo and runs bench/ws-fanout.sh against it. The work tree is not modified.
# Usage: bench/ws-fanout-1000.sh   (env: LIMIT=1000 CLIENTS=1000 WINDOW=60 PATHS=/ws/gpu)
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
LIMIT=${LIMIT:-1000}
cur=$(awk '$1 == "#define" && $2 == "GM_WS_MAX_CLIENTS" { print $3 }' "$ROOT/src/server/server_int.h")
if [ -n "$cur" ] && [ "$cur" -ge "$LIMIT" ]; then
    echo "# GM_WS_MAX_CLIENTS is already $cur: no patched copy needed"
    CLIENTS=${CLIENTS:-1000} PATHS=${PATHS:-/ws/gpu} exec "$BENCH_DIR/ws-fanout.sh"
fi
if [ -z "${SCRATCH:-}" ]; then
    SCRATCH=$(mktemp -d /tmp/gpumon-ws1000.XXXXXX)
    trap 'rm -rf "$SCRATCH"' EXIT # a given SCRATCH is kept (and its build reused by cmake)
fi
mkdir -p "$SCRATCH/src"
cp -r "$ROOT/CMakeLists.txt" "$ROOT/cmake" "$ROOT/include" "$ROOT/src" "$ROOT/scripts" \
    "$SCRATCH/src/"
[ -d "$ROOT/web" ] && mkdir -p "$SCRATCH/src/web"
sed -i -E "s/^#define GM_WS_MAX_CLIENTS( +)[0-9]+/#define GM_WS_MAX_CLIENTS\1$LIMIT/" \
    "$SCRATCH/src/src/server/server_int.h"
grep -q "GM_WS_MAX_CLIENTS *$LIMIT" "$SCRATCH/src/src/server/server_int.h" || {
    echo "ws-fanout-1000: could not raise GM_WS_MAX_CLIENTS in the copy" >&2
    exit 1
}
cmake -S "$SCRATCH/src" -B "$SCRATCH/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGM_WEB=OFF \
    -DGM_TESTS=OFF >/dev/null && cmake --build "$SCRATCH/build" --target gpumon -j2 >/dev/null || exit 1
echo "# patched copy: GM_WS_MAX_CLIENTS=$LIMIT in $SCRATCH"
GPUMON="$SCRATCH/build/gpumon" CLIENTS=${CLIENTS:-1000} PATHS=${PATHS:-/ws/gpu} \
    "$BENCH_DIR/ws-fanout.sh"
status=$?
exit $status
