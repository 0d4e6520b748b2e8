#!/usr/bin/env bash
# top-cost.sh - CPU of `gpumon top` while it runs: in a detached tmux window of COLSxROWS,
# `gpumon top --simulate SIMULATE --interval INTERVAL` (local), then the same against a daemon
# (`--connect`); after SETTLE seconds, utime+stime of the top process over WINDOW seconds, as %
# of one core. The daemon's own CPU is not counted.
# Usage: bench/top-cost.sh   (env: WINDOW=30 SETTLE=3 SIMULATE=8 INTERVAL=1 COLS=120 ROWS=40)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WINDOW=${WINDOW:-30}
SETTLE=${SETTLE:-3}
SIMULATE=${SIMULATE:-8}
INTERVAL=${INTERVAL:-1}
COLS=${COLS:-120}
ROWS=${ROWS:-40}
SOCK="gpumon-bench-top-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; cleanup' EXIT

measure() { # $1: label, rest: gpumon top's arguments
    local label=$1
    shift
    tmux -L "$SOCK" -f /dev/null new-session -d -x "$COLS" -y "$ROWS" -s top \
        "exec $GPUMON top $*"
    sleep "$SETTLE"
    local pid
    pid=$(tmux -L "$SOCK" list-panes -t top -F '#{pane_pid}')
    local t0 t1
    t0=$(cpu_ticks "$pid")
    sleep "$WINDOW"
    t1=$(cpu_ticks "$pid")
    tmux -L "$SOCK" kill-server
    awk -v l="$label" -v t="$((t1 - t0))" -v hz="$HZ" -v w="$WINDOW" \
        'BEGIN { printf "%-40s %6.2f %% of a core (%d ticks in %d s)\n", l, 100 * t / hz / w, t, w }'
}

echo "# top-cost: $(machine)"
echo "# $COLS x $ROWS, $SIMULATE simulated GPUs, --interval $INTERVAL, window ${WINDOW}s"
measure "local (--simulate $SIMULATE)" --simulate "$SIMULATE" --interval "$INTERVAL"
start_daemon --simulate "$SIMULATE"
measure "--connect (daemon --simulate $SIMULATE)" --connect "$BASE" --interval "$INTERVAL"
