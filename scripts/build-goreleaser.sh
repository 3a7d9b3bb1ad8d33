#!/usr/bin/env bash
# Build the pinned goreleaser (the `tool` of tools/goreleaser/, go.mod and go.sum
# committed) that make release-check and make dist run.
# Usage: scripts/build-goreleaser.sh   -> prints the binary path (.bin/goreleaser)
# Rebuilds only when the binary is missing or older than tools/goreleaser/go.sum.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
moddir=$root/tools/goreleaser
out=$root/.bin/goreleaser
mkdir -p "$root/.bin"

if [[ ! -x $out || $moddir/go.sum -nt $out ]]; then
    echo "build-goreleaser.sh: building goreleaser ..." >&2
    start=$SECONDS
    # -mod=readonly: go.sum is committed and must already be complete.
    (cd "$moddir" && CGO_ENABLED=0 GOTOOLCHAIN=local \
        go build -mod=readonly -trimpath -o "$out.tmp" github.com/goreleaser/goreleaser/v2)
    mv "$out.tmp" "$out"
    echo "build-goreleaser.sh: built goreleaser in $((SECONDS - start)) s" >&2
fi
echo "$out"
