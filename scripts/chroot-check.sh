#!/usr/bin/env bash
# chroot-check.sh - checks the README's promises on a stock Debian 12, by hand (it takes many
# minutes and needs root, debootstrap and Debian's mirror; it is not part of `make test`):
#
#   1. debootstrap --variant=minbase bookworm, with bookworm-updates and -security as a
#      default install has them; /proc, /sys and /dev bound; then only make and git installed
#   2. git clone of this checkout's HEAD (commit first: uncommitted changes are not checked)
#   3. make run: waits for "listening on URL", fetches the dashboard (and its script) and
#      /api/health from that URL, stops it
#   4. make test (Debian's own Node.js 18 and npm 9, Chromium; the web/bundle test checks that
#      they build the committed dashboard byte for byte)
#   5. make deb, then apt-get install ./dist/gpumon_*.deb and `gpumon serve` serving the dashboard
#   6. the same package in a second, fresh minbase chroot (nothing installed but the package and
#      what it declares), serving the dashboard
#   7. the README's offline install in a third: no apt sources at all, the package and the
#      README's list of libraries (apt-get download), which must hold all step 6 installed;
#      serving the dashboard
#
# Usage: scripts/chroot-check.sh [--dir DIR] [--keep]
#   --dir DIR  where the chroots go (default /var/tmp/gpumon-chroot-check; emptied first)
#   --keep     leave the chroots (unmounted) for a look afterwards
# Prints one PASS/FAIL line per step and exits 1 if any failed; logs stay in DIR/logs.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dir=/var/tmp/gpumon-chroot-check
keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --dir)
        dir=$2
        shift 2
        ;;
    --keep)
        keep=1
        shift
        ;;
    *)
        sed -n '19,22s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
    esac
done
[ "$(id -u)" = 0 ] || {
    echo "chroot-check: needs root (debootstrap, chroot, mount)" >&2
    exit 2
}
command -v debootstrap >/dev/null || {
    echo "chroot-check: needs debootstrap (apt-get install debootstrap)" >&2
    exit 2
}
MIRROR=${GM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${GM_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
dir=$(realpath -m "$dir")
root=$dir/root
fresh=$dir/fresh
offline=$dir/offline
logs=$dir/logs
commit=$(git -C "$top" rev-parse --short HEAD)

summary=()
failed=0
step_start=0
begin() { step_start=$SECONDS; }
record() { # record PASS|FAIL text
    local line
    line=$(printf '%-4s  %-86s %5ss' "$1" "$2" $((SECONDS - step_start)))
    summary+=("$line")
    echo "chroot-check: $line"
    [ "$1" = PASS ] || failed=1
}

mounted_under() { awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts; }

# Processes whose root is inside DIR (the daemons and browsers the steps started).
kill_inside() {
    local p r
    case $1 in "" | /) return ;; esac
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        case $r in "$1" | "$1"/*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
    done
}

unmount_all() {
    local d=$1 m
    kill_inside "$d"
    sleep 0.5
    # Deepest first.
    for m in $(mounted_under "$d" | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
}

cleanup() {
    [ -n "${bg_pid:-}" ] && kill -- -"$bg_pid" 2>/dev/null
    unmount_all "$root"
    unmount_all "$fresh"
    unmount_all "$offline"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

setup_chroot() { # setup_chroot ROOT: sources, name resolution, no service starts, mounts
    local r=$1
    cat >"$r/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
EOF
    cp /etc/resolv.conf "$r/etc/resolv.conf"
    # This host's trusted CAs for npm's registry (https), where a TLS-inspecting proxy adds one;
    # elsewhere it is the same Mozilla set. Only Node.js is pointed at it (NODE_EXTRA_CA_CERTS).
    [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$r/root/host-ca.crt"
    [ -s "$r/etc/hosts" ] || printf '127.0.0.1 localhost\n::1 localhost\n' >"$r/etc/hosts"
    # Packages' maintainer scripts must not start daemons (prometheus) inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
    chmod +x "$r/usr/sbin/policy-rc.d"
    mount -t proc proc "$r/proc"
    mount --rbind /sys "$r/sys" && mount --make-rslave "$r/sys"
    mount --rbind /dev "$r/dev" && mount --make-rslave "$r/dev"
}

# The environment of every command in a chroot: a root login's, none of this host's.
chenv() {
    echo HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    [ -f "$1/root/host-ca.crt" ] && echo NODE_EXTRA_CA_CERTS=/root/host-ca.crt
}

# inroot ROOT COMMAND: COMMAND run by sh in the chroot.
inroot() {
    local r=$1
    shift
    # shellcheck disable=SC2046
    chroot "$r" /usr/bin/env -i $(chenv "$r") /bin/sh -c "$*"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# check_serving URL LOG: the dashboard page, the script it loads, and /api/health.
check_serving() {
    local url=${1%/} page js
    page=$(curl -fsS --max-time 10 "$url/") || return 1
    grep -q '<title>gpumon</title>' <<<"$page" || {
        echo "no dashboard page at $url/"
        return 1
    }
    js=$(grep -o 'src="[^"]*\.js"' <<<"$page" | head -1 | sed 's/^src="\.\{0,1\}\/\{0,1\}//; s/"$//')
    if [ -z "$js" ] || ! curl -fsS --max-time 10 -o /dev/null "$url/$js"; then
        echo "the dashboard's script ($js) is not served"
        return 1
    fi
    curl -fsS --max-time 10 "$url/api/health" || return 1
    echo
}

# wait_for_url LOG SECONDS PID: the URL `gpumon serve` printed, once it did.
wait_for_url() {
    local i url
    for ((i = 0; i < $2 * 2; i++)); do
        url=$(grep -o 'listening on http://[^ ]*' "$1" 2>/dev/null | head -1 | sed 's/^listening on //')
        [ -n "$url" ] && {
            echo "$url"
            return 0
        }
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

# ---- 1. the chroot -------------------------------------------------------------------------
if [ -n "$(mounted_under "$dir")" ]; then
    echo "chroot-check: something is still mounted under $dir; unmount it first" >&2
    exit 1
fi
rm -rf "$dir"
mkdir -p "$root" "$logs"
echo "chroot-check: Debian 12 minbase in $root, gpumon $commit; logs in $logs"

begin
if debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$logs/1-debootstrap.log" 2>&1; then
    # The pristine system, for step 6.
    tar --numeric-owner -C "$root" -cf "$dir/pristine.tar" .
    setup_chroot "$root"
    record PASS "debootstrap --variant=minbase bookworm"
else
    record FAIL "debootstrap --variant=minbase bookworm (logs/1-debootstrap.log)"
    printf '%s\n' "${summary[@]}"
    exit 1
fi

begin
if inroot "$root" 'apt-get update -q && apt-get install -y -q --no-install-recommends make git' \
    >"$logs/1-make-git.log" 2>&1; then
    record PASS "apt-get install make git (nothing else)"
else
    record FAIL "apt-get install make git (logs/1-make-git.log)"
fi

# ---- 2. the clone --------------------------------------------------------------------------
begin
git -C "$top" bundle create "$root/root/gpumon.bundle" HEAD >"$logs/2-clone.log" 2>&1
if inroot "$root" 'git -c advice.detachedHead=false clone -q /root/gpumon.bundle /root/gpumon' \
    >>"$logs/2-clone.log" 2>&1; then
    record PASS "git clone of HEAD ($commit)"
else
    record FAIL "git clone of HEAD ($commit) (logs/2-clone.log)"
fi

# ---- 3. make run ---------------------------------------------------------------------------
begin
port=$(free_port)
# Its own session, so that stopping it stops make and gpumon together.
# shellcheck disable=SC2046
setsid chroot "$root" /usr/bin/env -i $(chenv "$root") GPU_MONITOR_LISTEN="127.0.0.1:$port" \
    /bin/sh -c 'cd /root/gpumon && exec make run' >"$logs/3-make-run.log" 2>&1 &
bg_pid=$!
if url=$(wait_for_url "$logs/3-make-run.log" 900 "$bg_pid") &&
    check_serving "$url" >>"$logs/3-make-run.log" 2>&1; then
    pkgs=$(inroot "$root" 'dpkg-query -W -f="\${Package} \${db:Status-Status}\n" chromium prometheus \
        clang-format nodejs npm 2>/dev/null | awk "\$2 == \"installed\" { print \$1 }"' | tr '\n' ' ')
    if [ -z "$pkgs" ]; then
        record PASS "make run: dashboard and /api/health at $url (no test tools installed)"
    else
        record FAIL "make run served $url but installed test tools: $pkgs"
    fi
else
    record FAIL "make run: no dashboard at ${url:-the printed URL} (logs/3-make-run.log)"
fi
kill -- -"$bg_pid" 2>/dev/null
wait "$bg_pid" 2>/dev/null
bg_pid=""

# ---- 4. make test --------------------------------------------------------------------------
begin
# shellcheck disable=SC2046
if timeout 3600 chroot "$root" /usr/bin/env -i $(chenv "$root") \
    /bin/sh -c 'cd /root/gpumon && make test' >"$logs/4-make-test.log" 2>&1; then
    result="make test: $(grep -o '[0-9]*% tests passed.*' "$logs/4-make-test.log" | tail -1)"
    st=PASS
else
    result="make test failed: $(grep -o '[0-9]*% tests passed.*' "$logs/4-make-test.log" | tail -1) (logs/4-make-test.log)"
    st=FAIL
fi
node=$(inroot "$root" 'echo node $(node --version 2>/dev/null), npm $(npm --version 2>/dev/null)')
bundle=$(grep -o 'web/bundle equals a fresh build[^)]*)' "$logs/4-make-test.log" | head -1)
[ -z "$bundle" ] && grep -q 'web/bundle .*Passed' "$logs/4-make-test.log" && bundle="web/bundle passed"
record "$st" "$result; $node; ${bundle:-web/bundle not run}"

# ---- 5. make deb and the package -----------------------------------------------------------
begin
deb=""
if inroot "$root" 'cd /root/gpumon && make deb' >"$logs/5-make-deb.log" 2>&1; then
    deb=$(inroot "$root" 'cd /root/gpumon && ls dist/gpumon_*.deb' | head -1)
    record PASS "make deb: $deb; $(grep -o 'lintian: no errors.*' "$logs/5-make-deb.log" | tail -1)"
else
    record FAIL "make deb (logs/5-make-deb.log)"
fi

serve_installed() { # serve_installed ROOT LOG: `gpumon serve` from /usr/bin, then its pages
    local r=$1 log=$2 p u ok=1
    p=$(free_port)
    # shellcheck disable=SC2046
    setsid chroot "$r" /usr/bin/env -i $(chenv "$r") gpumon serve --listen "127.0.0.1:$p" >"$log" 2>&1 &
    bg_pid=$!
    if u=$(wait_for_url "$log" 30 "$bg_pid") && check_serving "$u" >>"$log.curl" 2>&1; then
        ok=0
    fi
    kill -- -"$bg_pid" 2>/dev/null
    wait "$bg_pid" 2>/dev/null
    bg_pid=""
    echo "$u"
    return $ok
}

if [ -n "$deb" ]; then
    begin
    if inroot "$root" "cd /root/gpumon && apt-get install -y -q ./$deb" >"$logs/5-apt-install.log" 2>&1; then
        record PASS "apt-get install ./$deb"
        begin
        if u=$(serve_installed "$root" "$logs/5-serve.log"); then
            record PASS "gpumon serve (installed, /usr/bin/gpumon): dashboard and /api/health at $u"
        else
            record FAIL "gpumon serve (installed) (logs/5-serve.log*)"
        fi
    else
        record FAIL "apt-get install ./$deb (logs/5-apt-install.log)"
    fi

    # ---- 6. a fresh chroot: the package and its declared dependencies only ------------------
    begin
    mkdir -p "$fresh"
    tar -C "$fresh" -xf "$dir/pristine.tar"
    setup_chroot "$fresh"
    cp "$root/root/gpumon/$deb" "$fresh/root/"
    name=$(basename "$deb")
    if inroot "$fresh" "apt-get update -q && apt-get install -y -q ./root/$name" >"$logs/6-fresh-install.log" 2>&1 &&
        u=$(serve_installed "$fresh" "$logs/6-serve.log"); then
        record PASS "fresh minbase: apt-get install ./$name, gpumon serve: dashboard at $u"
    else
        record FAIL "fresh minbase: apt-get install ./$name + gpumon serve (logs/6-*)"
    fi

    # ---- 7. offline: no apt sources, the package and the README's list of libraries --------
    # The README's list must hold every package step 6 had to add (what a minimal Debian 12
    # lacks); the offline chroot then gets exactly the README's download.
    begin
    needed=$(sed -n '/^The following NEW packages will be installed:/,/^[0-9]* upgraded/p' \
        "$logs/6-fresh-install.log" | sed '1d;$d' | tr ' ' '\n' | grep -v '^gpumon$' | grep . | tr '\n' ' ')
    libs=$(sed -n '/^apt-get download ca-certificates/,/^sudo apt-get install/p' "$top/README.md" |
        sed '$d; s/apt-get download//; s/\\//' | tr ' ' '\n' | grep . | tr '\n' ' ')
    lacking=
    for p in $needed; do
        case " $libs " in *" $p "*) ;; *) lacking="$lacking $p" ;; esac
    done
    mkdir -p "$offline"
    tar -C "$offline" -xf "$dir/pristine.tar"
    setup_chroot "$offline"
    : >"$offline/etc/apt/sources.list"
    rm -rf "$offline/var/lib/apt/lists/"*
    mkdir -p "$offline/root/pkgs"
    cp "$root/root/gpumon/$deb" "$offline/root/pkgs/"
    if [ -n "$lacking" ]; then
        record FAIL "offline: the README's download list lacks what a minimal Debian 12 needs:$lacking"
    elif [ -n "$libs" ] &&
        inroot "$root" "mkdir -p /root/pkgs && cd /root/pkgs && apt-get download $libs" >"$logs/7-offline.log" 2>&1 &&
        cp "$root"/root/pkgs/*.deb "$offline/root/pkgs/" &&
        inroot "$offline" "cd /root/pkgs && apt-get install -y -q ./*.deb" >>"$logs/7-offline.log" 2>&1 &&
        u=$(serve_installed "$offline" "$logs/7-serve.log"); then
        record PASS "offline (no apt sources): the README's apt-get download list + apt-get install, gpumon serve: dashboard at $u"
    else
        record FAIL "offline: apt-get install of the package and ${libs:-?} (logs/7-*)"
    fi
fi

cleanup
trap - EXIT
if [ "$keep" = 0 ]; then
    if [ -z "$(mounted_under "$dir")" ]; then
        rm -rf "$root" "$fresh" "$offline" "$dir/pristine.tar"
    else
        echo "chroot-check: mounts remain under $dir: not removing it" >&2
    fi
fi

echo
echo "chroot-check summary (gpumon $commit, Debian 12 minbase chroot, $(date -u +%FT%TZ)):"
printf '  %s\n' "${summary[@]}"
[ "$failed" = 0 ] && echo "chroot-check: all steps passed" || echo "chroot-check: some steps FAILED (logs in $logs)"
exit "$failed"
