#!/usr/bin/env bash
# job-under-watch.sh - a benchmark job of STREAMS streams run by the daemon itself (POST
# /api/benchmarks) while CLIENTS WebSocket clients watch /ws/gpu, and the same run by `gpumon
# bench` beside the same watched daemon, RUNS times each:
#
#   - the daemon: `gpumon serve --simulate 8 --poll-interval 100 --ws-max-rate 10 --token T`
#     (10 samples/s, every one sent to every client), on CLIENT_CPU; the fake OpenAI server
#     (tests/fakes/fake_openai --log, TTFT_MS then a token every ITL_MS) on SERVER_CPU, as
#     bench/client-accuracy.sh pins them;
#   - CLIENTS clients on /ws/gpu (bench/ws_fanout.c), one of which logs each frame's sample
#     timestamp and arrival: the sampler's cadence (gaps between the samples' timestamps,
#     p50/p99/max against the 100 ms interval), samples missing, delivery delay; and every
#     client's share of the samples published (min over clients);
#   - GET /api/health HEALTH_HZ times a second, a new connection each (bench/job_watch.py
#     probe): latency p50/p99/max and probes over 50 ms;
#   - the client's TTFT against the fake server's log. The daemon takes no trace file from a
#     request, so for the job it is the stored point's TTFT distribution against the server's
#     over the same requests: the mean error (equal to the mean of the per-request errors) and
#     the p50 and p99 differences. The CLI run gives both that and the per-request error of
#     bench/trace_error.py (its --trace).
#
# Only the time the run itself took counts (the job's started..ended, the CLI's start..exit).
# Prints one summary table (medians over the runs) with the load average. Exits non-zero only
# when a run broke (daemon or server not starting, job failed, no frame); a figure off its goal
# is reported, not failed.
#
# Build: cmake --build build --target gpumon fake_openai
# Usage: bench/job-under-watch.sh   (env: RUNS=3 STREAMS=256 REQUESTS=7680 CLIENTS=100
#        HEALTH_HZ=10 TTFT_MS=50 ITL_MS=20 OUT=32 IN=32 CLIENT_CPU=0 SERVER_CPU=1, "" = no pin)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

FAKE=${FAKE_OPENAI:-$(dirname "$GPUMON")/tests/fakes/fake_openai}
RUNS=${RUNS:-3}
STREAMS=${STREAMS:-256}
REQUESTS=${REQUESTS:-7680} # about 20 s at 256 streams of 50 + 31 x 20 ms
CLIENTS=${CLIENTS:-100}
HEALTH_HZ=${HEALTH_HZ:-10}
TTFT_MS=${TTFT_MS:-50}
ITL_MS=${ITL_MS:-20}
OUT=${OUT:-32}
IN=${IN:-32}
CLIENT_CPU=${CLIENT_CPU-0}
SERVER_CPU=${SERVER_CPU-1}
TOKEN=bench-token
WS_CLIENT=${WS_CLIENT:-$WORK/ws_fanout}

[ -x "$FAKE" ] || { echo "bench: no fake server at $FAKE (build the fake_openai target)" >&2; exit 1; }
cc -O2 -Wall -Wextra -o "$WS_CLIENT" "$BENCH_DIR/ws_fanout.c" || exit 1
# The prefixes pinning a command to its CPU (empty: anywhere).
PIN_CLIENT=() PIN_SERVER=()
[ -n "$CLIENT_CPU" ] && PIN_CLIENT=(taskset -c "$CLIENT_CPU")
[ -n "$SERVER_CPU" ] && PIN_SERVER=(taskset -c "$SERVER_CPU")

FAKE_PID=
stop_fake() {
    if [ -n "$FAKE_PID" ]; then
        kill "$FAKE_PID" 2>/dev/null
        wait "$FAKE_PID" 2>/dev/null
    fi
    FAKE_PID=
}
BG_PIDS=()
stop_bg() {
    for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    BG_PIDS=()
}
trap 'stop_bg; stop_fake; cleanup' EXIT

broken() {
    echo "bench: broken run: $*" >&2
    exit 1
}

# start_fake LOG : the fake server on SERVER_CPU, logging to LOG; sets URL.
start_fake() {
    rm -f "$WORK/fake.port"
    "${PIN_SERVER[@]}" "$FAKE" --port-file "$WORK/fake.port" --log "$1" \
        --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS" &
    FAKE_PID=$!
    for _ in $(seq 1 200); do
        [ -s "$WORK/fake.port" ] && break
        sleep 0.02
    done
    [ -s "$WORK/fake.port" ] || broken "the fake server did not start"
    URL="http://127.0.0.1:$(cat "$WORK/fake.port")"
}

api() { curl -sf -H "Authorization: Bearer $TOKEN" "$@"; }
now_ms() { date +%s%3N; }
iso_ms() { "$PY" -c 'import datetime,sys; print(int(datetime.datetime.fromisoformat(sys.argv[1].replace("Z","+00:00")).timestamp()*1000))' "$1"; }
jq_py() { "$PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

GPU_MONITOR_LEASE_DIR=$WORK/leases start_daemon --simulate 8 --poll-interval 100 \
    --ws-max-rate 10 --token "$TOKEN" --db "$WORK/gpumon.db"
[ -n "$CLIENT_CPU" ] && taskset -a -c -p "$CLIENT_CPU" "$DAEMON_PID" >/dev/null
echo "# job-under-watch: $(machine)"
echo "# daemon: gpumon serve --simulate 8 --poll-interval 100 --ws-max-rate 10 --token, CPU ${CLIENT_CPU:-any};" \
    "fake server CPU ${SERVER_CPU:-any}, TTFT $TTFT_MS ms, ITL $ITL_MS ms; $STREAMS streams, $REQUESTS" \
    "requests, $IN/$OUT tokens; $CLIENTS clients on /ws/gpu; /api/health at $HEALTH_HZ Hz"

# watched MODE R : one run (MODE job or cli) under watch; appends its figures to results.jsonl.
watched() {
    local mode=$1 r=$2 tag="$1-$2" t0 t1 id state body bid load
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start_fake "$WORK/server-$tag.log"
    "$WS_CLIENT" -p "$PORT" -P "/ws/gpu?token=$TOKEN" -n "$CLIENTS" -d 600 -w 1 -r 10 \
        -s "$DAEMON_PID" -t "$WORK/cadence-$tag.txt" >"$WORK/ws-$tag.json" &
    local ws_pid=$!
    BG_PIDS+=("$ws_pid")
    "$PY" "$BENCH_DIR/job_watch.py" probe "$BASE" "$TOKEN" 600 "$HEALTH_HZ" "$WORK/probe-$tag.txt" &
    local probe_pid=$!
    BG_PIDS+=("$probe_pid")
    sleep 3 # the clients connected and their window begun
    if [ "$mode" = job ]; then
        body="{\"url\":\"$URL\",\"concurrency\":[$STREAMS],\"requests\":$REQUESTS,"
        body+="\"input_tokens\":$IN,\"output_tokens\":$OUT,\"warmup\":0,\"idle_seconds\":0,\"label\":\"job-under-watch\"}"
        id=$(api -H 'Content-Type: application/json' -X POST -d "$body" "$BASE/api/benchmarks" |
            jq_py 'd["id"]') || broken "POST /api/benchmarks refused"
        state=queued
        while :; do
            sleep 0.5
            api "$BASE/api/benchmarks/jobs/$id" >"$WORK/job-$tag.json" || broken "job $id vanished"
            state=$(jq_py 'd["state"]' <"$WORK/job-$tag.json")
            case $state in done | failed | cancelled) break ;; esac
        done
        [ "$state" = "done" ] || broken "job $id ended $state: $(jq_py 'd["reason"]' <"$WORK/job-$tag.json")"
        t0=$(iso_ms "$(jq_py 'd["started"]' <"$WORK/job-$tag.json")")
        t1=$(iso_ms "$(jq_py 'd["ended"]' <"$WORK/job-$tag.json")")
        bid=$(jq_py 'd["benchmark_id"]' <"$WORK/job-$tag.json")
        api "$BASE/api/benchmarks/$bid" >"$WORK/point-$tag.json" || broken "benchmark $bid not stored"
    else
        t0=$(now_ms)
        "${PIN_CLIENT[@]}" "$GPUMON" bench --url "$URL" --concurrency "$STREAMS" \
            --requests "$REQUESTS" --input-tokens "$IN" --output-tokens "$OUT" --warmup 0 \
            --idle-seconds 0 --no-db -q -o "$WORK/point-$tag.json" --trace "$WORK/trace-$tag.txt" \
            2>>"$WORK/cli.err" || broken "gpumon bench failed (see $WORK/cli.err)"
        t1=$(now_ms)
    fi
    kill -USR1 "$ws_pid"
    wait "$ws_pid" 2>/dev/null
    kill "$probe_pid" 2>/dev/null
    wait "$probe_pid" 2>/dev/null
    BG_PIDS=()
    stop_fake # the server's log is complete once it has exited
    [ -s "$WORK/cadence-$tag.txt" ] || broken "$mode run $r: no WebSocket frame"
    local trace=
    [ "$mode" = cli ] && trace=$WORK/trace-$tag.txt
    # shellcheck disable=SC2086
    "$PY" - "$mode" "$r" "$load" "$t0" "$t1" \
        "$("$PY" "$BENCH_DIR/job_watch.py" cadence "$WORK/cadence-$tag.txt" "$t0" "$t1")" \
        "$("$PY" "$BENCH_DIR/job_watch.py" health "$WORK/probe-$tag.txt" "$t0" "$t1")" \
        "$("$PY" "$BENCH_DIR/job_watch.py" ttft "$WORK/server-$tag.log" "$WORK/point-$tag.json" $trace)" \
        "$(cat "$WORK/ws-$tag.json")" "$WORK/point-$tag.json" >>"$WORK/results.jsonl" <<'EOF' ||
import json, sys
mode, r, load, t0, t1, cad, hl, tt, ws, point = sys.argv[1:]
p = json.load(open(point))["points"][0]
print(json.dumps({"mode": mode, "run": int(r), "load": load, "seconds": (int(t1) - int(t0)) / 1e3,
                  "requests_per_s": p["requests_per_s"], "failed": p["failed"],
                  "cadence": json.loads(cad), "health": json.loads(hl), "ttft": json.loads(tt),
                  "ws": json.loads(ws)}))
EOF
        broken "$mode run $r: figures not computed"
    tail -n 1 "$WORK/results.jsonl"
}

for r in $(seq 1 "$RUNS"); do
    watched job "$r"
    sleep 2
    watched cli "$r"
    sleep 2
done
stop_daemon
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$WORK/results.jsonl" "$STREAMS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]


def med(v):
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def cell(mode, get, fmt="%.2f"):
    v = [get(r) for r in rows if r["mode"] == mode]
    m = med(v)
    runs = ", ".join("-" if x is None else fmt % x for x in v)
    return "%s (%s)" % ("-" if m is None else fmt % m, runs)


lines = [
    ("load average (1 min) at the run's start", lambda r: float(r["load"].split()[0]), "%.2f"),
    ("run time, s", lambda r: r["seconds"], "%.1f"),
    ("requests/s", lambda r: r["requests_per_s"], "%.0f"),
    ("failed requests", lambda r: r["failed"], "%d"),
    ("sample gap p50, ms (interval 100)", lambda r: r["cadence"]["gap_ms"]["p50"], "%.1f"),
    ("sample gap p99, ms", lambda r: r["cadence"]["gap_ms"]["p99"], "%.1f"),
    ("sample gap max, ms", lambda r: r["cadence"]["gap_ms"]["max"], "%.1f"),
    ("samples missing (one client, by seq)", lambda r: r["cadence"]["missing_by_seq"], "%d"),
    ("frame delivery delay p99, ms", lambda r: r["cadence"]["delivery_ms"]["p99"], "%.1f"),
    ("min share of samples over %d clients, %%" % rows[0]["ws"]["clients_requested"],
     lambda r: r["ws"]["per_client_pct_by_seq"]["min"], "%.2f"),
    ("daemon CPU, % of a core", lambda r: r["ws"]["server_cpu_pct_of_core_schedstat"], "%.1f"),
    ("/api/health p50, ms", lambda r: r["health"].get("p50"), "%.2f"),
    ("/api/health p99, ms (goal < 50)", lambda r: r["health"].get("p99"), "%.2f"),
    ("/api/health max, ms", lambda r: r["health"].get("max"), "%.2f"),
    ("/api/health probes over 50 ms", lambda r: r["health"]["over_50ms"], "%d"),
    ("/api/health probes failed", lambda r: r["health"]["failed"], "%d"),
    ("TTFT mean error vs server log, ms", lambda r: r["ttft"]["mean_error_ms"], "%.3f"),
    ("TTFT p50 difference vs server log, ms", lambda r: r["ttft"]["p50_diff_ms"], "%.3f"),
    ("TTFT p99 difference vs server log, ms", lambda r: r["ttft"]["p99_diff_ms"], "%.3f"),
    ("TTFT per-request error p50, ms (CLI --trace)",
     lambda r: r["ttft"].get("per_request_ms", {}).get("p50"), "%.3f"),
    ("TTFT per-request error p99, ms (CLI --trace)",
     lambda r: r["ttft"].get("per_request_ms", {}).get("p99"), "%.3f"),
]
print("## summary: %s streams, medians over the runs (each run in brackets)" % sys.argv[2])
print("| figure | daemon job | gpumon bench beside the daemon |")
print("|---|---|---|")
for name, get, fmt in lines:
    print("| %s | %s | %s |" % (name, cell("job", get, fmt), cell("cli", get, fmt)))
EOF
