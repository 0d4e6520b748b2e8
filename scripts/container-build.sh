#!/bin/sh
# container-build.sh - builds the image localhost/gpumon:VERSION from Containerfile and the
# package in dist/ (make deb first), with podman. Used by make container and CI.
#
#   scripts/container-build.sh [--base IMAGE] [--smoke]
#     --base IMAGE  FROM this image, e.g. docker.io/library/debian:12-slim where a registry is
#                   reachable. Default: localhost/gpumon-base:bookworm, a minimal Debian 12 made
#                   here with debootstrap (from Debian's apt mirror, no registry) when missing.
#     --smoke       then start the image with --simulate 2, check /api/health and the dashboard,
#                   and remove the container
#
# Needs root and scripts/install-deps.sh container. Unless CONTAINERS_CONF is already set, podman
# runs with runc, cgroupfs and no default ulimits, which work on hosts without systemd or
# cgroup v2 too (see docs/ARCHITECTURE.md).
set -eu
cd "$(dirname "$0")/.."

base=localhost/gpumon-base:bookworm
smoke=0
while [ $# -gt 0 ]; do
    case $1 in
    --base)
        base=$2
        shift 2
        ;;
    --smoke)
        smoke=1
        shift
        ;;
    *)
        sed -n '4,10s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
    esac
done

MIRROR=${GM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${GM_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
version=$(sed -n 's/^project(gpumon VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=dist/gpumon_${version}_$(dpkg --print-architecture).deb
image=localhost/gpumon:$version
if [ ! -f "$deb" ]; then
    echo "container-build: $deb is missing: run make deb first" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumon-container.XXXXXX")
name=""
cleanup() {
    [ -n "$name" ] && podman rm -f "$name" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${CONTAINERS_CONF:-}" ]; then
    # crun fails on cgroup v1 hosts with locked rlimits; runc and cgroupfs need no systemd.
    cat >"$tmp/containers.conf" <<'EOF'
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
EOF
    export CONTAINERS_CONF="$tmp/containers.conf"
fi

if [ "$base" = localhost/gpumon-base:bookworm ] && ! podman image exists "$base"; then
    # What debian:12-slim is, made from Debian's mirror: minbase plus the updates and security
    # suites, without apt's lists. Built once, then reused.
    echo "container-build: making $base with debootstrap (once; a few minutes)"
    debootstrap --variant=minbase bookworm "$tmp/rootfs" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 || {
        tail -20 "$tmp/debootstrap.log" >&2
        exit 1
    }
    cat >"$tmp/rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
EOF
    rm -rf "$tmp/rootfs/var/lib/apt/lists/"* "$tmp/rootfs/var/cache/apt/"*.bin \
        "$tmp/rootfs/var/cache/apt/archives/"*.deb
    tar --numeric-owner -C "$tmp/rootfs" -cf - . |
        podman import --change 'CMD ["/bin/bash"]' - "$base" >"$tmp/import.log" 2>&1 || {
        cat "$tmp/import.log" >&2
        exit 1
    }
    rm -rf "$tmp/rootfs"
fi

echo "container-build: building $image FROM $base"
old_id=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
# Host networking for the build's apt-get: no bridge or firewall setup needed.
podman build --network=host --build-arg BASE="$base" --build-arg DEB="$deb" \
    -t "$image" -f Containerfile . >"$tmp/build.log" 2>&1 || {
    cat "$tmp/build.log" >&2
    exit 1
}
podman tag "$image" localhost/gpumon:latest
# The image this one replaces, now untagged (no other image of ours is removed).
new_id=$(podman image inspect --format '{{.Id}}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
    podman rmi "$old_id" >/dev/null 2>&1 || true
fi
echo "container-build: built $image ($(podman image inspect --format '{{.Size}}' "$image" |
    awk '{ printf "%.0f MB", $1 / 1e6 }'))"

[ "$smoke" = 1 ] || exit 0
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
name=gpumon-smoke-$$
podman run -d --name "$name" -p "127.0.0.1:$port:9400" "$image" \
    serve --listen 0.0.0.0:9400 --simulate 2 >/dev/null
ok=0
for _ in $(seq 1 60); do
    if curl -fsS "http://127.0.0.1:$port/api/health" >"$tmp/health" 2>/dev/null; then
        ok=1
        break
    fi
    sleep 0.5
done
if [ "$ok" = 1 ] && curl -fsS "http://127.0.0.1:$port/" | grep -q '<title>gpumon</title>'; then
    user=$(podman exec "$name" id -un)
    echo "container-build: smoke test passed: /api/health $(cat "$tmp/health"), dashboard served," \
        "running as $user"
    [ "$user" != root ] || {
        echo "container-build: the daemon runs as root" >&2
        exit 1
    }
else
    echo "container-build: smoke test failed; the container's log:" >&2
    podman logs "$name" >&2 || true
    exit 1
fi
