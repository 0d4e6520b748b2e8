#!/bin/sh
# install-deps.sh - installs the Debian 12 packages a make target needs, and nothing more.
# Idempotent: one dpkg query, and apt only when something is missing.
#
#   scripts/install-deps.sh [--check] TARGET...
#     build      compile gpumon (make, make run, make install): compiler, CMake, python3, -dev libs
#     test       build + what `make test` runs: cmocka, Python clients, promtool, Chromium,
#                clang-format, groff, and Debian's nodejs + npm unless a Node.js is on PATH
#     deb        build + the Debian packaging tools (make deb)
#     container  podman and what scripts/container-build.sh uses (make container)
#     fuzz       build + clang and its sanitizer runtime (scripts/fuzz.sh)
#   --check      install nothing: list what is missing and fail if anything is
set -eu
# The libraries gpumon links: the one list (debian/control's Build-Depends repeats it and
# scripts/build-deb.sh checks that it does; the .deb's run-time Depends come from dpkg-shlibdeps).
LIBS="libjansson-dev libmicrohttpd-dev libwslay-dev nettle-dev libsqlite3-dev zlib1g-dev libcurl4-openssl-dev libncurses-dev libprotobuf-c-dev"
# protobuf-c-compiler: protoc-c turns src/collect/podresources.proto into C at build time.
BUILD="build-essential cmake pkg-config python3 protobuf-c-compiler $LIBS"
# cmocka: C unit tests; pycurl (libcurl) and websockets: independent HTTP/WebSocket clients;
# prometheus: promtool checks /metrics and the alert rules; python3-yaml reads the deploy
# manifests; chromium: the dashboard's browser test; nginx-light: the reverse proxy config under
# test; groff: the man page; podman and runc: a real Docker Engine API for the container tests
# (tests/cli/test_containers.py imports a static test server as its image: no registry);
# iproute2: ip, which that test asks for this host's addresses; tmux: a terminal for gpumon
# top's tests (send-keys, capture-pane); grpcio and protobuf: the fake kubelet
# (tests/fakes/fake_kubelet.py).
TEST="libcmocka-dev python3-pycurl python3-websockets python3-yaml sqlite3 prometheus chromium
nginx-light clang-format groff-base podman runc iproute2 tmux python3-grpcio python3-protobuf"
DEB="debhelper dpkg-dev lintian fakeroot"
CONTAINER="podman runc debootstrap curl ca-certificates"
# libFuzzer comes with clang; Debian's clang only recommends the runtime that holds it.
FUZZ="clang libclang-rt-14-dev"

# netdata's python.d nvidia_smi collector, which tests/cli/test_smi.py runs against gpumon's
# nvidia-smi: Debian's netdata-plugins-python is unpacked (apt-get download, dpkg-deb -x) into
# this folder rather than installed, because installing it pulls in and starts the netdata daemon.
NETDATA_DIR=/var/cache/gpumon-test/netdata-plugins-python
netdata_missing() {
    [ ! -f /usr/lib/netdata/python.d/nvidia_smi.chart.py ] &&
        [ ! -f "$NETDATA_DIR/usr/lib/netdata/python.d/nvidia_smi.chart.py" ]
}
netdata_unpack() {
    tmp=$(mktemp -d)
    (cd "$tmp" && $APT download netdata-plugins-python >/dev/null) &&
        $SUDO mkdir -p "$NETDATA_DIR" && $SUDO dpkg-deb -x "$tmp"/netdata-plugins-python_*.deb "$NETDATA_DIR"
    rc=$?
    rm -rf "$tmp"
    return $rc
}

check=0
if [ "${1:-}" = --check ]; then
    check=1
    shift
fi
[ $# -gt 0 ] || set -- build
want=""
for t in "$@"; do
    case $t in
    build) want="$want $BUILD" ;;
    test)
        want="$want $BUILD $TEST"
        # The dashboard's tools: a Node.js already on PATH (>= 18.19) is used, else Debian's.
        command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || want="$want nodejs npm"
        ;;
    deb) want="$want $BUILD $DEB" ;;
    container) want="$want $CONTAINER" ;;
    fuzz) want="$want $BUILD $FUZZ" ;;
    *)
        sed -n '2,13s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
    esac
done

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: not a Debian system: install the equivalents of:$want" >&2
    [ "$check" = 1 ] && exit 0
    exit 1
fi
# Word splitting of the lists is intended (package names have no spaces).
# shellcheck disable=SC2086
want=$(printf '%s\n' $want | sort -u)
# One dpkg-query for all of them; a package dpkg does not know is missing too.
# shellcheck disable=SC2086
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $want 2>/dev/null | awk '$2 == "installed" { print $1 }')
# shellcheck disable=SC2086
missing=$(printf '%s\n' $want | grep -vxF "$installed" | tr '\n' ' ' || true)
missing=${missing% }
want_netdata=0
case " $* " in *" test "*) netdata_missing && want_netdata=1 ;; esac
if [ -z "$missing" ] && [ "$want_netdata" = 0 ]; then
    echo "install-deps: all packages for $* present"
    exit 0
fi
if [ "$check" = 1 ]; then
    [ -z "$missing" ] || echo "install-deps: missing for $*: $missing" >&2
    [ "$want_netdata" = 0 ] || echo "install-deps: missing for $*: netdata-plugins-python (unpacked in $NETDATA_DIR)" >&2
    echo "install-deps: run: sudo scripts/install-deps.sh $*" >&2
    exit 1
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
# Another apt (an engineer, unattended-upgrades) may hold the lock: wait for it a while.
APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q"
$APT update -qq
if [ -n "$missing" ]; then
    echo "install-deps: installing $missing"
    # shellcheck disable=SC2086
    $APT install -y -qq --no-install-recommends $missing
fi
if [ "$want_netdata" = 1 ]; then
    echo "install-deps: unpacking netdata-plugins-python into $NETDATA_DIR"
    netdata_unpack
fi
