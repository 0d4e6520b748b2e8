#!/usr/bin/env bash
# gpu-check.sh - checks gpumon against a real GPU, its NVML and nvidia-smi, and profiles where
# its sampling time goes; writes what it saw as one archive, OUT/gpu-check.tar.gz (OUT default
# ./gpu-check-out), and its summary beside it. Builds nothing: it runs a build made beforehand
# (build/gpumon; for the cost part also build/nvml_floor, `cc -O2 -o build/nvml_floor
# bench/nvml_floor.c -ldl`, and the fake NVML of build/tests/fakes/nvml-current). About 3 minutes.
# Usage: scripts/gpu-check.sh [GPUMON] (default build/gpumon). NVML_DIR=DIR: the directory of a
# libnvidia-ml.so.1 outside the loader's path, given to gpumon alone (never exported).
# LIB_DIR=DIR: the libraries gpumon links, carried to a machine without them (gpumon alone too).
set -u
G=${1:-build/gpumon}
FINAL=${OUT:-./gpu-check-out}
mkdir -p "$FINAL"
OUT=$(mktemp -d /tmp/gpu-check.XXXXXX) # everything is written here, then archived into FINAL
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# gm ARGS...: gpumon, with NVML_DIR and LIB_DIR (carried libraries gpumon links) on its library
# path only: exported to the whole script, a carried libcurl broke that machine's own curl.
GM_LD=$(printf '%s' "${NVML_DIR:-}${NVML_DIR:+${LIB_DIR:+:}}${LIB_DIR:-}")
gm() {
    if [ -n "$GM_LD" ]; then env LD_LIBRARY_PATH="$GM_LD" "$G" "$@"; else "$G" "$@"; fi
}

# ---- profiling: where the time of one query and of the daemon's samples goes -------------------
profile_checks() {
    local f7=index,name,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm
    gm query --provider nvml --query-gpu=$f7 --format=csv,noheader --profile \
        > "$OUT/profile-query7.csv" 2> "$OUT/profile-query7.txt"
    log "query --profile (7 fields) rc=$?: $(head -1 "$OUT/profile-query7.txt")"
    gm query --provider nvml --profile > /dev/null 2> "$OUT/profile-query-table.txt"
    log "query --profile (table): $(head -1 "$OUT/profile-query-table.txt")"
    # A second run: the driver's first-open costs (persistence mode off) show in the first only.
    gm query --provider nvml --query-gpu=$f7 --format=csv,noheader --profile \
        > /dev/null 2> "$OUT/profile-query7-second.txt"
    # The daemon at 10 Hz for 20 s: its call stats on /metrics and /stats.
    local pf port sp
    pf=$(mktemp)
    gm serve --listen 127.0.0.1:0 --port-file "$pf" --interval 0.1 --db none \
        --pod-resources none --provider nvml 2> "$OUT/profile-serve.log" &
    sp=$!
    for _ in $(seq 100); do [ -s "$pf" ] && break; sleep 0.1; done
    port=$(cat "$pf")
    sleep 20
    curl -s "http://127.0.0.1:$port/metrics" > "$OUT/profile-metrics-10hz.txt"
    curl -s "http://127.0.0.1:$port/stats" > "$OUT/profile-stats-10hz.json"
    kill -TERM "$sp"; wait "$sp"
    rm -f "$pf"
    awk '$1 == "gpumon_sampler_samples_total" { n = $2 }
        $1 ~ /^gpumon_sampler_call_seconds_count/ { split($1, a, "\""); c[a[2]] = $2 }
        $1 ~ /^gpumon_sampler_call_cpu_seconds_total/ { split($1, a, "\""); u[a[2]] = $2; t += $2 }
        END { printf "daemon 10 Hz, %d samples: collector calls %.3f ms CPU per sample\n", n, t * 1e3 / n
              for (k in c) if (c[k] >= n / 2) printf "  every sample: %-44s %6.1f us CPU a call\n", k, u[k] * 1e6 / c[k] }' \
        "$OUT/profile-metrics-10hz.txt" | sort | tee -a "$OUT/summary.txt"
}

# ---- costs side by side: the fake with the H200 cost profile, the real library, pynvml ----------
cost_checks() {
    local floor=build/nvml_floor
    if [ -x "$floor" ]; then
        NVML_FLOOR=$floor GPUMON=$G RUNS=20 SECS=10 REAL_NVML=${NVML_DIR:+$NVML_DIR/libnvidia-ml.so.1} \
            bash bench/sampler-cost.sh \
            > "$OUT/sampler-cost.txt" 2>&1
        log "sampler-cost rc=$?"
        cat "$OUT/sampler-cost.txt" >> "$OUT/summary.txt"
    else
        log "no $floor (build it before the run): sampler-cost skipped"
    fi
    if python3 -c "import pynvml" 2>/dev/null; then
        python3 bench/nvml_floor.py > "$OUT/pynvml-floor.txt" 2>&1
        log "pynvml: $(tail -1 "$OUT/pynvml-floor.txt")"
    else
        log "no pynvml: its floor skipped"
    fi
}

log "glibc: $(ldd --version | head -1)"
log "os: $(. /etc/os-release; echo "$PRETTY_NAME")"
log "gpumon: $(gm --version)"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
log "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"

# The one-shot forms.
gm query > "$OUT/query-table.txt" 2>&1; log "query table rc=$?"
gm query --format json > "$OUT/query-nvml.json" 2>"$OUT/query-nvml.err"; log "query json (nvml) rc=$?"
gm query --provider nvidia-smi --format json > "$OUT/query-smi.json" 2>"$OUT/query-smi.err"
log "query json (nvidia-smi) rc=$?"

# nvidia-smi compatible CSV: same fields, both programs, every format variant.
F=index,name,uuid,pci.bus_id,driver_version,utilization.gpu,utilization.memory,memory.total,memory.used,memory.free,memory.reserved,temperature.gpu,power.draw,power.limit,enforced.power.limit,clocks.gr,clocks.sm,clocks.mem,clocks.max.gr,clocks.max.sm,clocks.max.mem,fan.speed,pstate,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,persistence_mode
for fmt in csv csv,noheader csv,nounits csv,noheader,nounits; do
    nvidia-smi --query-gpu=$F --format=$fmt > "$OUT/smi-$fmt.txt" 2>&1
    gm query --query-gpu=$F --format=$fmt > "$OUT/gpumon-$fmt.txt" 2>&1
done
if diff <(head -1 "$OUT/smi-csv.txt") <(head -1 "$OUT/gpumon-csv.txt") > "$OUT/header.diff"; then
    log "CSV header identical to nvidia-smi"
else
    log "CSV header differs (header.diff)"
fi

# Cost of one reading: gpumon (NVML) against nvidia-smi, 10 runs each.
t0=$(date +%s.%N); for i in $(seq 10); do gm query --format json --no-processes > /dev/null; done
t1=$(date +%s.%N); for i in $(seq 10); do nvidia-smi --query-gpu=$F --format=csv > /dev/null; done
t2=$(date +%s.%N)
log "10x gpumon query: $(awk "BEGIN{print $t1 - $t0}") s; 10x nvidia-smi --query-gpu: $(awk "BEGIN{print $t2 - $t1}") s"

# The daemon: endpoints, then its CPU while idle at 1 Hz for 30 s.
PF=$(mktemp)
gm serve --listen 127.0.0.1:0 --port-file "$PF" 2> "$OUT/serve.log" &
SP=$!
for i in $(seq 100); do [ -s "$PF" ] && break; sleep 0.1; done
PORT=$(cat "$PF")
for ep in api/health api/gpus api/system api/processes metrics stats api/v1/monitoring/gpu-metrics \
    "api/history?gpu=0&metric=utilization.gpu,power.draw&seconds=60"; do
    name=$(echo "$ep" | tr '/?&=,' '_____')
    curl -s -o "$OUT/ep_$name" -w "%{http_code} %{time_total}s $ep\n" "http://127.0.0.1:$PORT/$ep" >> "$OUT/summary.txt"
done
ticks() { awk '{print $14 + $15}' /proc/$SP/stat; }
c0=$(ticks); sleep 30; c1=$(ticks)
log "idle daemon CPU over 30 s at 1 Hz: $(awk "BEGIN{print ($c1 - $c0) * 100 / $(getconf CLK_TCK) / 30}") % of a core"
log "daemon RSS: $(awk '/VmRSS/{print $2, $3}' /proc/$SP/status)"
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^gpumon_sampler_last_duration_seconds' >> "$OUT/summary.txt"

# A real load while recording, then a snapshot and a selection.
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    gm record --interval 0.2 --output "$OUT/record.json" --db "$OUT/gpumon.db" -- python3 -c "
import time, torch
a = torch.randn(8192, 8192, device='cuda'); t = time.time()
while time.time() - t < 8:
    b = a @ a
torch.cuda.synchronize()" 2> "$OUT/record.err"
    log "record rc=$? (stats in record.json)"
    curl -s "http://127.0.0.1:$PORT/api/history?gpu=0&metric=utilization.gpu,power.draw&seconds=30" > "$OUT/history-under-load.json"
else
    log "no torch: record of a real load skipped"
fi
gm snapshot -o "$OUT/snapshot.json" --power-window 1s 2> "$OUT/snapshot.err"; log "snapshot rc=$?"
gm select --count 1 --format json > "$OUT/select.json" 2>&1; log "select rc=$?"
kill -TERM $SP; wait $SP; log "serve exit=$?"

# ---- drop-in: gpumon smi against the real nvidia-smi of this driver (its own field list) ----
dropin_compare() {
    local d="$OUT/dropin"
    mkdir -p "$d"
    local fields
    fields=$(nvidia-smi --help-query-gpu | python3 -c 'import re,sys; print(",".join(re.findall(r"(?m)\n\s*\n^\"([^\"]+)\"", sys.stdin.read())))')
    nvidia-smi --query-gpu="$fields" --format=csv > "$d/query-gpu.nvidia-smi.csv" 2>&1
    gm smi --query-gpu="$fields" --format=csv > "$d/query-gpu.gpumon.csv" 2>&1
    log "dropin query-gpu rc=$?"
    nvidia-smi -q > "$d/q.nvidia-smi.txt" 2>&1; gm smi -q > "$d/q.gpumon.txt" 2>&1
    nvidia-smi -q -x > "$d/q-x.nvidia-smi.xml" 2>&1; gm smi -q -x > "$d/q-x.gpumon.xml" 2>&1
    python3 - "$d" > "$d/diff.txt" <<'PY'
import csv, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
def rows(p):
    return list(csv.reader(open(p), skipinitialspace=True))
w, g = rows(d + "/query-gpu.nvidia-smi.csv"), rows(d + "/query-gpu.gpumon.csv")
same = 0
for h, a, b in zip(w[0], w[1] if len(w) > 1 else [], g[1] if len(g) > 1 else []):
    if a == b:
        same += 1
    else:
        print("query-gpu\t%s\t%s\t%s" % (h, a, b))
print("query-gpu: %d of %d identical" % (same, len(w[0])))
def leaves(p):
    out, seen = {}, {}
    def walk(e, path):
        if not list(e):
            k = path + "/" + e.tag; seen[k] = seen.get(k, 0) + 1
            out[(k, seen[k])] = (e.text or "").strip()
        for c in e: walk(c, path + "/" + e.tag)
    walk(ET.parse(p).getroot(), "")
    return out
X, Y = leaves(d + "/q-x.nvidia-smi.xml"), leaves(d + "/q-x.gpumon.xml")
for k in X:
    if k not in Y: print("q-x missing\t%s[%d]\t%s" % (k[0], k[1], X[k]))
    elif X[k] != Y[k]: print("q-x differ\t%s[%d]\t%s\t%s" % (k[0], k[1], X[k], Y[k]))
print("q-x: %d leaves, %d printed, %d equal" % (len(X), sum(k in Y for k in X), sum(Y.get(k) == v for k, v in X.items())))
def keyed(p):
    return [l.split(":", 1)[0].rstrip() for l in open(p) if " : " in l]
print("q: %d keyed lines in nvidia-smi, %d in gpumon" % (len(keyed(d + "/q.nvidia-smi.txt")), len(keyed(d + "/q.gpumon.txt"))))
PY
    log "dropin diff in dropin/diff.txt: $(tail -3 "$d/diff.txt" | tr '\n' ' ')"
}

profile_checks
cost_checks
dropin_compare

tar -czf "$FINAL/gpu-check.tar.gz" -C "$OUT" . && cp "$OUT/summary.txt" "$FINAL/summary.txt"
log "archive: $FINAL/gpu-check.tar.gz"
rm -rf "$OUT"
