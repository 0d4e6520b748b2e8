#!/usr/bin/env bash
# run-all.sh - runs every daemon benchmark in turn (about 20 minutes) and keeps each one's
# output in RESULTS (default bench/results/<UTC date>/); docs/PERFORMANCE.md records the figures.
# Build first (RelWithDebInfo, without the dashboard):
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGM_WEB=OFF -DGM_TESTS=OFF
#   cmake --build build-bench --target gpumon -j2
# then: bench/run-all.sh   (or GPUMON=path/to/gpumon bench/run-all.sh). Needs wrk, curl, cc,
# /usr/bin/python3. Everything runs on this machine: load generators share its cores with the
# daemon, so keep the machine otherwise quiet.
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
RESULTS=${RESULTS:-$BENCH_DIR/results/$(date -u +%Y%m%dT%H%MZ)}
mkdir -p "$RESULTS"
run() {
    local name=$1
    shift
    echo "== $name" >&2
    "$@" 2>&1 | tee "$RESULTS/$name.txt"
}
run startup "$BENCH_DIR/startup.sh"
run idle-cpu "$BENCH_DIR/idle-cpu.sh"
run render-cost "$BENCH_DIR/render-cost.sh"
run wrk "$BENCH_DIR/wrk.sh"
run ws-fanout "$BENCH_DIR/ws-fanout.sh"
run ws-fanout-1000 "$BENCH_DIR/ws-fanout-1000.sh"
run rss-history env AFTER="$BENCH_DIR/history.sh" "$BENCH_DIR/rss.sh"
echo "results in $RESULTS" >&2
