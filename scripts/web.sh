#!/bin/sh
# web.sh - the dashboard's Node.js side. Building gpumon never needs it: the C build embeds the
# committed bundle (web/bundle/). This script is for changing the dashboard and for its tests.
#
#   scripts/web.sh deps        npm ci, only when web/node_modules is missing or older than the lock
#   scripts/web.sh build [DIR] type-check and bundle into DIR (default: web/bundle, the committed one)
#   scripts/web.sh check       bundle into a temporary folder; fail unless it equals web/bundle
#   scripts/web.sh unit|e2e    the Vitest unit tests | the browser test (ctest sets its variables)
#   scripts/web.sh screenshots BUILD [DIR]  the pictures of docs/ (default DIR: docs/), from
#                              BUILD/gpumon serve in headless Chromium
#
# Node.js >= 18.19 and npm >= 9 (Debian 12's own nodejs and npm are enough).
set -eu
caller=$PWD
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/../web"

need_node() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "web.sh: the dashboard's tools need Node.js >= 18.19 and npm: run" \
            "scripts/install-deps.sh test (Debian's nodejs and npm)" >&2
        exit 1
    fi
    v=$(node -p 'process.versions.node')
    major=${v%%.*}
    minor=${v#*.}
    minor=${minor%%.*}
    if [ "$major" -lt 18 ] || { [ "$major" -eq 18 ] && [ "$minor" -lt 19 ]; }; then
        echo "web.sh: Node.js $v is too old: the dashboard's Vite 6 and Vitest 3 need >= 18.19" >&2
        exit 1
    fi
}

deps() {
    need_node
    # npm ci deletes node_modules first: concurrent callers (ctest -j, `make web`) take turns.
    exec 9>.npm-ci.lock
    flock 9
    # npm writes node_modules/.package-lock.json on every install.
    if [ ! -f node_modules/.package-lock.json ] ||
        [ -n "$(find package-lock.json package.json -newer node_modules/.package-lock.json)" ]; then
        echo "web.sh: npm ci" >&2
        npm ci --no-audit --no-fund --loglevel=error
        touch node_modules/.package-lock.json
    fi
    flock -u 9
}

build() {
    out=$1
    GM_WEB_OUT=$out npm run --silent build
}

case "${1:-}" in
deps)
    deps
    ;;
build)
    deps
    out=${2:-$PWD/bundle}
    case "$out" in /*) ;; *) out="$caller/$out" ;; esac
    build "$out"
    echo "web.sh: built $out" >&2
    ;;
check)
    deps
    node tools/engines.cjs # every dependency admits Debian 12's Node, whichever Node runs here
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumon-web-check.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    build "$tmp/bundle" >"$tmp/build.log" 2>&1 || {
        cat "$tmp/build.log" >&2
        exit 1
    }
    # Byte for byte: Vite's names carry content hashes, and the embedded bytes are these files.
    if ! diff -r bundle "$tmp/bundle"; then
        echo "web.sh: web/bundle differs from a fresh build of web/ (above): run \`make web\`" \
            "and commit web/bundle" >&2
        exit 1
    fi
    echo "web.sh: web/bundle equals a fresh build (node $(node -p 'process.versions.node'))"
    ;;
unit)
    deps
    exec npm run --silent test
    ;;
e2e)
    deps
    exec npm run --silent e2e
    ;;
screenshots)
    deps
    [ $# -ge 2 ] || { sed -n '9,10s/^# //p' "$self" >&2; exit 2; }
    b=$2
    case "$b" in /*) ;; *) b="$caller/$b" ;; esac
    d=${3:-$PWD/../docs}
    case "$d" in /*) ;; *) d="$caller/$d" ;; esac
    GM_BUILD_DIR=$b GM_SOURCE_DIR=$PWD/.. GM_SCREENSHOT_DIR=$d exec npx vitest run --config vitest.shots.config.ts
    ;;
*)
    sed -n '4,10s/^# //p' "$self" >&2
    exit 2
    ;;
esac
