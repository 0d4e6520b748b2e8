#!/usr/bin/env bash
# gpu-bench-check.sh - gpumon bench against real GPU work: a small random-weight model served
# with PyTorch on the GPU (bench/torch_server.py), a closed-loop sweep, and the energy per token
# from the energy counter checked against power x time from the same samples. Needs a GPU with
# its driver, python3 with torch, transformers and aiohttp, and a gpumon built on this machine or
# one with the same libraries (GPUMON=path). Writes into OUT (default ./gpu-bench-out).
#
#   bench/gpu-bench-check.sh             # about 2 minutes on an H100
set -u
G=${GPUMON:-build/gpumon}
OUT=${OUT:-./gpu-bench-out}
PY=${PY:-python3}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
log "gpumon: $($G --version)"

rm -f "$OUT/port"
$PY "$(dirname "$0")/torch_server.py" --port 18000 --port-file "$OUT/port" \
    > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 1 300); do
    [ -s "$OUT/port" ] && break
    sleep 0.2
done
[ -s "$OUT/port" ] || { log "the model server did not start (server.log)"; exit 1; }

# The server's own process is on the GPU now: the baseline of the foreign-process rule.
$G bench --url http://127.0.0.1:18000 --concurrency 1,8,32 --requests 64 --output-tokens 64 \
    --input-tokens 128 --interval 0.1 --idle-seconds 2 --no-db -o "$OUT/bench.json" \
    --trace "$OUT/trace.jsonl" 2> "$OUT/bench.txt"
log "gpumon bench rc=$?"

# Energy from the counter's increase vs power integrated over the same samples (mean power x
# sampled time): they should agree within a few percent.
$PY - "$OUT/bench.json" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
print("idle power W:", d["idle_power_w"])
for p in d["points"]:
    mon = p["gpu_monitoring"]
    px = sum(g["power_draw_w"]["mean"] for g in mon["gpu_stats"].values()) * mon["monitoring_duration_seconds"]
    print("concurrency %s: %.1f req/s, %.0f out tok/s, TTFT p50 %.1f ms, TPOT p50 %.2f ms;"
          " energy %s J (%s) vs power x time %.1f J (%+.1f %%); %.3f tok/J, %.1f J/request; valid %s %s"
          % (p["concurrency"], p["requests_per_s"], p["output_tokens_per_s"], p["ttft_ms"]["p50"],
             p["tpot_ms"]["p50"], p["energy_j"], p["energy_source"], px,
             (p["energy_j"] - px) / px * 100 if p["energy_j"] else float("nan"),
             p["output_tokens_per_joule"], p["joules_per_request"], p["valid"], p["invalid_reasons"]))
EOF
