#!/usr/bin/env bash
# client-accuracy.sh - gpumon bench's HTTP client against a Python client written the way vLLM's
# benchmark is (bench/py_client.py: asyncio + aiohttp), both pinned to CPU 0, the fake
# OpenAI-compatible server (tests/fakes/fake_openai) pinned to CPU 1:
#
#   1. ceiling: requests/s driven against a server with no delay (CONC streams, OUT tokens of
#      one token per chunk, IN-word prompts), median of RUNS runs each;
#   2. distortion: the TTFT error against the server's own log (bench/trace_error.py) at
#      STREAMS concurrent streams, the server answering after TTFT_MS then one token every
#      ITL_MS, median of RUNS runs each.
#
# Build first (RelWithDebInfo, tests on: the fake server is a test target):
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGM_WEB=OFF
#   cmake --build build-bench --target gpumon fake_openai -j2
# then: bench/client-accuracy.sh   (GPUMON=path/to/gpumon to choose the binary). Needs taskset
# (util-linux), /usr/bin/python3 with python3-aiohttp (apt-get install python3-aiohttp).
set -u
. "$(dirname "$0")/lib.sh"

FAKE=${FAKE_OPENAI:-$(dirname "$GPUMON")/tests/fakes/fake_openai}
RUNS=${RUNS:-3}
CONC=${CONC:-64}
N_C=${N_C:-20000}   # requests per run, gpumon bench
N_PY=${N_PY:-4000}  # requests per run, the Python client (about 10x slower)
IN=${IN:-32}
OUT=${OUT:-16}
STREAMS=${STREAMS:-256}
TTFT_MS=${TTFT_MS:-50}
ITL_MS=${ITL_MS:-20}
OUT_D=${OUT_D:-32}
N_D=${N_D:-1024}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}

[ -x "$FAKE" ] || { echo "bench: no fake server at $FAKE (build the fake_openai target)" >&2; exit 1; }
"$PY" -c 'import aiohttp' 2>/dev/null || { echo "bench: $PY lacks aiohttp: apt-get install python3-aiohttp" >&2; exit 1; }

FAKE_PID=
stop_fake() {
    if [ -n "$FAKE_PID" ]; then
        kill "$FAKE_PID" 2>/dev/null
        wait "$FAKE_PID" 2>/dev/null
    fi
    FAKE_PID=
}
trap 'stop_fake; cleanup' EXIT

# start_fake ARGS... : the fake server on SERVER_CPU, logging to $WORK/server.log; sets URL.
start_fake() {
    rm -f "$WORK/fake.port" "$WORK/server.log"
    taskset -c "$SERVER_CPU" "$FAKE" --port-file "$WORK/fake.port" --log "$WORK/server.log" "$@" &
    FAKE_PID=$!
    for _ in $(seq 1 200); do
        [ -s "$WORK/fake.port" ] && break
        sleep 0.02
    done
    URL="http://127.0.0.1:$(cat "$WORK/fake.port")"
}

json_field() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

echo "# $(machine) fake=$FAKE python=$("$PY" -c 'import sys, aiohttp; print(sys.version.split()[0], "aiohttp", aiohttp.__version__)')"
echo "# client on CPU $CLIENT_CPU, server on CPU $SERVER_CPU"

echo "## 1. ceiling: $CONC streams, no delay, $OUT tokens/request, $IN-word prompts"
c_rps=() p_rps=()
for r in $(seq 1 "$RUNS"); do
    start_fake
    taskset -c "$CLIENT_CPU" "$GPUMON" bench --url "$URL" --concurrency "$CONC" --requests "$N_C" \
        --input-tokens "$IN" --output-tokens "$OUT" --idle-seconds 0 --no-db -q \
        -o "$WORK/c.json" 2>>"$WORK/c.err"
    stop_fake
    rps=$(json_field "$WORK/c.json" 'round(d["points"][0]["requests_per_s"], 1)')
    cpu=$(json_field "$WORK/c.json" 'round(d["points"][0]["client"]["cpu_percent"], 1)')
    fails=$(json_field "$WORK/c.json" 'd["points"][0]["failed"]')
    echo "gpumon bench run $r: $rps req/s (client CPU $cpu % of a core, $fails failed)"
    c_rps+=("$rps")
    start_fake
    out=$(taskset -c "$CLIENT_CPU" "$PY" "$BENCH_DIR/py_client.py" --url "$URL" --concurrency "$CONC" \
        --requests "$N_PY" --input-tokens "$IN" --output-tokens "$OUT")
    stop_fake
    rps=$(echo "$out" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(round(d["requests_per_s"], 1), d["requests"] - d["completed"])')
    echo "python (vLLM style) run $r: ${rps% *} req/s (${rps#* } failed)"
    p_rps+=("${rps% *}")
done
cm=$(median "${c_rps[@]}")
pm=$(median "${p_rps[@]}")
echo "ceiling: gpumon bench $cm req/s, python $pm req/s, ratio $(awk -v a="$cm" -v b="$pm" 'BEGIN { printf "%.1f", a / b }')x"

echo "## 2. distortion: $STREAMS streams, TTFT $TTFT_MS ms, ITL $ITL_MS ms, $OUT_D tokens/request, $N_D requests"
c_err=() p_err=()
for r in $(seq 1 "$RUNS"); do
    start_fake --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS"
    taskset -c "$CLIENT_CPU" "$GPUMON" bench --url "$URL" --concurrency "$STREAMS" --requests "$N_D" \
        --input-tokens "$IN" --output-tokens "$OUT_D" --idle-seconds 0 --no-db -q \
        -o "$WORK/d.json" --trace "$WORK/d.trace" 2>>"$WORK/c.err"
    stop_fake
    e=$("$PY" "$BENCH_DIR/trace_error.py" "$WORK/server.log" "$WORK/d.trace")
    echo "gpumon bench run $r: $e"
    c_err+=("$(echo "$e" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["ttft_error_ms"]["p50"])')")
    start_fake --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS"
    taskset -c "$CLIENT_CPU" "$PY" "$BENCH_DIR/py_client.py" --url "$URL" --concurrency "$STREAMS" \
        --requests "$N_D" --input-tokens "$IN" --output-tokens "$OUT_D" --trace "$WORK/p.trace" >/dev/null
    stop_fake
    e=$("$PY" "$BENCH_DIR/trace_error.py" "$WORK/server.log" "$WORK/p.trace")
    echo "python (vLLM style) run $r: $e"
    p_err+=("$(echo "$e" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["ttft_error_ms"]["p50"])')")
done
echo "TTFT error p50, median of runs: gpumon bench $(median "${c_err[@]}") ms, python $(median "${p_err[@]}") ms"
