#!/bin/sh
# smi-capture.sh - on a machine with an NVIDIA GPU: captures what the real nvidia-smi prints for
# everything `gpumon smi` imitates, and what gpumon prints for the same commands, into a folder
# (default tests/fixtures/smi/capture-<gpu>-<driver>/), then compares them field by field.
#
#   scripts/smi-capture.sh [build/gpumon] [OUTDIR]
#
# Captured, each as <name>.real and <name>.gpumon (verbatim stdout; stderr and the exit status
# in <name>.*.status): --version, -L, -h, --help-query-gpu, --help-query-compute-apps,
# --help-query-retired-pages, --help-query-remapped-rows, --query-gpu over every field of this
# nvidia-smi's --help-query-gpu (csv, csv,noheader,nounits), --query-compute-apps,
# --query-retired-pages, --query-remapped-rows, -q, -q -x, -q -d MEMORY,ECC,POWER, the summary
# table. Identifiers (serial, UUID) are kept: mask them before committing a capture.
# compare.txt lists, per --query-gpu field, the real value, gpumon's, and whether they agree
# (readings that move, such as power or clocks, can differ between the two runs).
set -eu
GPUMON=${1:-build/gpumon}
command -v nvidia-smi >/dev/null || { echo "smi-capture: nvidia-smi is not on PATH" >&2; exit 1; }
[ -x "$GPUMON" ] || { echo "smi-capture: $GPUMON is not executable (make first)" >&2; exit 1; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | tr ' A-Z' '-a-z' | tr -cd 'a-z0-9-')
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0)
OUT=${2:-tests/fixtures/smi/capture-$gpu-$drv}
mkdir -p "$OUT"
FIELDS=$(nvidia-smi --help-query-gpu | awk 'prev == "" && /^"/ { split($0, a, "\""); f = f (f ? "," : "") a[2] } { prev = $0 } END { print f }')

# Runs the real nvidia-smi and gpumon (as `gpumon smi`) with the same arguments.
both() {
    name=$1
    shift
    set +e
    nvidia-smi "$@" >"$OUT/$name.real" 2>"$OUT/$name.real.status"
    echo "exit $?" >>"$OUT/$name.real.status"
    "$GPUMON" smi "$@" >"$OUT/$name.gpumon" 2>"$OUT/$name.gpumon.status"
    echo "exit $?" >>"$OUT/$name.gpumon.status"
    set -e
}

both version --version
both list -L
both help -h
both help-query-gpu --help-query-gpu
both help-query-compute-apps --help-query-compute-apps
both help-query-retired-pages --help-query-retired-pages
both help-query-remapped-rows --help-query-remapped-rows
both query-gpu-all "--query-gpu=$FIELDS" --format=csv
both query-gpu-all-nounits "--query-gpu=$FIELDS" --format=csv,noheader,nounits
both compute-apps --query-compute-apps=timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory --format=csv
both retired-pages --query-retired-pages=timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,retired_pages.address,retired_pages.timestamp,retired_pages.cause --format=csv
both remapped-rows --query-remapped-rows=gpu_bus_id,gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv
both q -q
both q-x -q -x
both q-d -q -d MEMORY,ECC,POWER
both summary

# Field by field: header, real value, gpumon's value, same or not.
python3 - "$OUT" <<'PY'
import os, sys
out = sys.argv[1]
def rows(name):
    with open(os.path.join(out, name)) as f:
        return [l.rstrip("\n").split(", ") for l in f if l.strip()]
real, mine = rows("query-gpu-all.real"), rows("query-gpu-all.gpumon")
lines, same = [], 0
if real[0] != mine[0]:
    lines.append("HEADER DIFFERS\n  real:   %s\n  gpumon: %s" % (", ".join(real[0]), ", ".join(mine[0])))
for g in range(1, min(len(real), len(mine))):
    for h, a, b in zip(real[0], real[g], mine[g]):
        ok = a == b
        same += ok
        lines.append("%s gpu%d %-60s real=%-30s gpumon=%s" % ("same" if ok else "DIFF", g - 1, h, a, b))
with open(os.path.join(out, "compare.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("smi-capture: %s: %d values agree, %d differ (see compare.txt)" % (out, same, len(lines) - same))
PY
