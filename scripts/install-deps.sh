#!/bin/sh
# Installs the Debian 12 packages that building and testing gpumon need. Idempotent.
set -eu
PKGS="build-essential cmake pkg-config clang-format libjansson-dev libwebsockets-dev libcmocka-dev
libcurl4-openssl-dev libsqlite3-dev python3 python3-websockets prometheus"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
