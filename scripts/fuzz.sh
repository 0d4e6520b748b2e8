#!/usr/bin/env bash
# fuzz.sh [SECONDS] [NAME...] - builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan,
# in build-fuzz/) and runs each for SECONDS (default 60), one after the other, on a copy of its
# seed corpus tests/fuzz/corpus/NAME/ (the committed corpus never grows by itself). NAMEs pick
# targets (default: all). Fails when any target finds a crash, a leak, undefined behaviour, a
# timeout or runs out of memory; the input that did it is left in build-fuzz/artifacts/.
# Prints each target's executions. CI runs it with a short budget (.ci/run); see
# tests/fuzz/README.md for longer runs.
#
# Environment: FUZZ_BUILD (build directory, default build-fuzz), JOBS (build jobs, default 2),
# FUZZ_CORPUS_OUT=DIR keeps each grown corpus in DIR/NAME (to minimize into the committed one).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
build=${FUZZ_BUILD:-build-fuzz}
jobs=${JOBS:-2}
case "$secs" in '' | *[!0-9]*)
    echo "usage: $0 [SECONDS] [NAME...]" >&2
    exit 2
    ;;
esac

# Longest input per target: about the most the real input can be, so the fuzzer does not spend
# its time on sizes the program never sees.
max_len() {
    case "$1" in
    http_request) echo 4200 ;;  # a request target (GM_HTTP_URI_MAX 4096)
    smi_csv) echo 4096 ;;       # a few GPU rows
    estimate) echo 2048 ;;      # a task config
    audit) echo 16384 ;;        # two snapshots of a few GPUs
    session_body) echo 2048 ;;  # a POST /api/sessions body (labels are at most 128 bytes)
    parse) echo 64 ;;           # one number or duration
    utf8) echo 512 ;;           # a name, a message
    file_output) echo 4099 ;;   # 3 bytes choosing the path, then up to 4096 bytes written
    *) echo 4096 ;;
    esac
}

if ! command -v clang >/dev/null; then
    echo "fuzz.sh: clang is missing (Debian: apt-get install clang libclang-rt-14-dev)" >&2
    exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
    CC=clang cmake -S . -B "$build" -DGM_FUZZ=ON -DGM_TESTS=OFF -DGM_WEB=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
fi
cmake --build "$build" --target gm_fuzz -j "$jobs" >"$build/build.log" 2>&1 || {
    cat "$build/build.log" >&2
    echo "fuzz.sh: the build failed" >&2
    exit 1
}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do
        n=${f##*/fuzz_}
        names+=("${n%.c}")
    done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gm-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts="$build/artifacts"
mkdir -p "$artifacts"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
summary=""
for name in "${names[@]}"; do
    bin="$build/tests/fuzz/fuzz_$name"
    if [ ! -x "$bin" ]; then
        echo "fuzz.sh: no target $name" >&2
        failed+=("$name")
        continue
    fi
    mkdir -p "$work/$name"
    cp -R "tests/fuzz/corpus/$name/." "$work/$name/"
    seeds=$(find "$work/$name" -type f | wc -l)
    dict=()
    case "$name" in estimate | audit | session_body | bench_stream | docker | bench_import) d=json ;; *) d=$name ;; esac
    [ -f "tests/fuzz/$d.dict" ] && dict=(-dict="tests/fuzz/$d.dict")
    log="$work/$name.log"
    echo "== $name: ${secs}s, $seeds seeds, max_len $(max_len "$name")"
    rc=0
    "$bin" "$work/$name" "${dict[@]}" -max_total_time="$secs" -max_len="$(max_len "$name")" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$name-" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    grown=$(find "$work/$name" -type f | wc -l)
    if [ "$rc" -ne 0 ]; then
        tail -60 "$log"
        echo "fuzz.sh: $name FAILED (exit $rc); the input is in $artifacts/ (run $bin FILE)"
        failed+=("$name")
        status=FAILED
    else
        status=ok
    fi
    summary+=$(printf '%-14s %-6s %12s execs %8s/s  corpus %s -> %s' "$name" "$status" \
        "${execs:-?}" "${rate:-?}" "$seeds" "$grown")$'\n'
    if [ -n "${FUZZ_CORPUS_OUT:-}" ]; then
        mkdir -p "$FUZZ_CORPUS_OUT/$name"
        cp -R "$work/$name/." "$FUZZ_CORPUS_OUT/$name/"
    fi
done
echo "== fuzz.sh: ${secs}s per target"
printf '%s' "$summary"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failed: ${failed[*]}" >&2
    exit 1
fi
