#!/bin/sh
# Installs the Debian 12 packages that building and testing gpumon need. Idempotent.
set -eu
# Build: compiler, CMake, the libraries. Tests: cmocka, Python with pycurl (libcurl) and websockets
# as independent clients, promtool (prometheus) to validate /metrics, Chromium for the dashboard.
PKGS="build-essential cmake pkg-config clang-format libjansson-dev libmicrohttpd-dev libwslay-dev nettle-dev libcmocka-dev
libcurl4-openssl-dev libsqlite3-dev zlib1g-dev sqlite3 python3 python3-websockets python3-pycurl prometheus
chromium clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js builds the dashboard; a newer one already on PATH is fine, else Debian's.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
