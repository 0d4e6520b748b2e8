#!/bin/sh
# build-deb.sh - builds dist/gpumon_VERSION_ARCH.deb with the Debian tools (make deb).
#
# Copies the source tree (what git tracks, plus files not yet added; no build output) to
# build/deb/gpumon-VERSION, writes debian/changelog there with the version of CMakeLists.txt's
# project(), runs `dpkg-buildpackage -us -uc -b`, copies the .deb to dist/ and runs lintian on
# it (fails on errors, shows warnings). Needs: scripts/install-deps.sh deb.
set -eu
cd "$(dirname "$0")/.."
top=$PWD

version=$(sed -n 's/^project(gpumon VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || {
    echo "build-deb: no version in CMakeLists.txt's project()" >&2
    exit 1
}

# debian/control's Build-Depends must name the libraries install-deps.sh installs (its LIBS).
libs=$(sed -n 's/^LIBS="\(.*\)"/\1/p' scripts/install-deps.sh)
for lib in $libs; do
    grep -q "^ *$lib,\?\$" debian/control || grep -q "Build-Depends:.* $lib" debian/control || {
        echo "build-deb: debian/control's Build-Depends lacks $lib (scripts/install-deps.sh LIBS)" >&2
        exit 1
    }
done

stage=$top/build/deb
src=$stage/gpumon-$version
rm -rf "$stage"
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked and new files, as they are in the work tree (uncommitted edits included).
    # (A file deleted but not yet committed is left out.)
    git ls-files -z --cached --others --exclude-standard |
        xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null --no-recursion -T - -cf - | tar -xf - -C "$src"
    commit=$(git rev-parse --short HEAD)
    when=$(git log -1 --format=%cD HEAD)
else
    tar --exclude='./build*' --exclude=./dist --exclude=./web/node_modules -cf - . | tar -xf - -C "$src"
    commit="a source tree without git"
    when=$(date -R)
fi

maint=$(sed -n 's/^Maintainer: //p' debian/control)
cat >"$src/debian/changelog" <<EOF
gpumon ($version) unstable; urgency=medium

  * Built from $commit.

 -- $maint  $when
EOF

cd "$src"
dpkg-buildpackage -us -uc -b
cd "$top"
arch=$(dpkg --print-architecture)
deb=gpumon_${version}_$arch.deb
mkdir -p dist
cp "$stage/$deb" dist/
echo "build-deb: dist/$deb"
dpkg-deb --info "dist/$deb" | sed -n 's/^ \(Package\|Version\|Architecture\|Depends\|Installed-Size\):/  \1:/p'

if command -v lintian >/dev/null 2>&1; then
    # Errors fail the build; warnings and notes are shown.
    status=0
    lintian --fail-on error --display-info "dist/$deb" >"$stage/lintian.txt" 2>&1 || status=$?
    cat "$stage/lintian.txt"
    if [ "$status" != 0 ] || grep -q '^E:' "$stage/lintian.txt"; then
        echo "build-deb: lintian found errors" >&2
        exit 1
    fi
    echo "build-deb: lintian: no errors, $(grep -c '^W:' "$stage/lintian.txt" || true) warnings"
else
    echo "build-deb: lintian is not installed: package not checked" >&2
fi
