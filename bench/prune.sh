#!/usr/bin/env bash
# prune.sh - how long retention takes: a database of N finished record sessions of SAMPLES
# samples x GPUS GPUs each (copies of one real `gpumon record --simulate GPUS`, aged 40 days by
# SQL), then `gpumon history prune --older-than 30d` deleting all of them, timed. (The daemon's
# --retention deletes 100 entries a pass: the per-entry time x 100 is how long a pass holds its
# session worker.)
# Usage: bench/prune.sh   (env: N=2000 SAMPLES=60 GPUS=8)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
N=${N:-2000}
SAMPLES=${SAMPLES:-60}
GPUS=${GPUS:-8}
DB="$WORK/prune.db"
command -v sqlite3 >/dev/null || { echo "prune.sh: needs sqlite3" >&2; exit 1; }

make_db() { # $1: entries
    rm -f "$DB" "$DB-wal" "$DB-shm"
    "$GPUMON" record --db "$DB" --simulate "$GPUS" --interval 0.01 -q -- \
        sh -c "sleep $(awk -v s="$SAMPLES" 'BEGIN { print s * 0.011 }')" || exit 1
    sqlite3 "$DB" <<SQL
UPDATE sessions SET started_ms = started_ms - 40 * 86400000, ended_ms = ended_ms - 40 * 86400000;
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $1 - 1)
INSERT INTO sessions SELECT s.id || '-' || k.i, kind, label, command, host, owner_pid,
  owner_start, status, started_ms - k.i, ended_ms - k.i, duration_s, last_t, interval_s, gpus,
  sample_count, exit_code, doc, meta FROM sessions s, k;
INSERT INTO samples SELECT x.id, seq, t, gpu, utilization, memory_used_mb,
  memory_usage_percent, temperature_c, power_draw_w, energy_counter_j
  FROM samples, sessions x WHERE samples.session_id = (SELECT id FROM sessions ORDER BY
  length(id) LIMIT 1) AND x.id != samples.session_id;
SQL
    sync
}

echo "# prune: $(machine)"
make_db "$N"
rows=$(sqlite3 "$DB" 'SELECT count(*) FROM samples')
size=$(du -k "$DB" | cut -f1)
echo "# $N sessions, $rows sample rows ($((rows / N / GPUS)) samples x $GPUS GPUs each), ${size} KiB"
t0=$(date +%s.%N)
"$GPUMON" history --db "$DB" prune --older-than 30d
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v n="$N" \
    'BEGIN { printf "history prune: %.2f s for %d entries, %.2f ms each\n", b - a, n, 1000 * (b - a) / n }'
