#!/bin/sh
# check-layers.sh - the include graph runs one way: base <- collect <- core <- store <- server
# <- cli (docs/ARCHITECTURE.md). A file may include its own layer and the layers below it,
# never one above. Prints each upward include and exits 1 when there is any. Run by CI.
set -eu
cd "$(dirname "$0")/.."
rank() {
    case "$1" in
    base) echo 0 ;; collect) echo 1 ;; core) echo 2 ;; store) echo 3 ;; server) echo 4 ;;
    cli) echo 5 ;; *) echo -1 ;;
    esac
}
bad=0
for f in src/*/*.c src/*/*.h; do
    layer=$(basename "$(dirname "$f")")
    own=$(rank "$layer")
    if [ "$own" -lt 0 ]; then
        echo "$f: $layer/ is not a layer (base collect core store server cli)"
        bad=1
        continue
    fi
    # Quoted includes of the form "layer/file.h"; <system> headers and "gpumon.h" pass.
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/[^"]*".*/\1/p' "$f"); do
        r=$(rank "$inc")
        if [ "$r" -lt 0 ] || [ "$r" -gt "$own" ]; then
            echo "$f: includes $inc/ (a $layer/ file may include only its layer and those below)"
            bad=1
        fi
    done
done
if grep -n '#[[:space:]]*include[[:space:]]*"[a-z_]*/' include/*.h; then
    echo "include/: the public header must not include the sources"
    bad=1
fi
[ "$bad" -eq 0 ] && echo "check-layers: every include runs downward"
exit "$bad"
