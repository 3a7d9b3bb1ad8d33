#!/usr/bin/env bash
# Build the real Beads CLI from the pinned module in tools/bd-VERSION.
# Usage: scripts/build-bd.sh v0.49.6   -> prints the binary path (.bin/bd-v0.49.6)
# Rebuilds only when the binary is missing or older than tools/bd-VERSION/go.sum.
set -euo pipefail

version=${1:?usage: build-bd.sh VERSION (e.g. v0.49.6)}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
moddir=$root/tools/bd-$version
out=$root/.bin/bd-$version

[[ -f $moddir/go.mod ]] || { echo "build-bd.sh: no module at $moddir" >&2; exit 2; }
mkdir -p "$root/.bin"

if [[ ! -x $out || $moddir/go.sum -nt $out ]]; then
    echo "build-bd.sh: building bd $version ..." >&2
    # -mod=readonly: go.sum is committed and must already be complete.
    (cd "$moddir" && CGO_ENABLED=0 GOTOOLCHAIN=local \
        go build -mod=readonly -trimpath -o "$out.tmp" github.com/steveyegge/beads/cmd/bd)
    mv "$out.tmp" "$out"
fi
echo "$out"
