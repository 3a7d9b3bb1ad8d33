#!/usr/bin/env bash
# Build the real Beads CLI from the pinned module in tools/bd-VERSION.
# Usage: scripts/build-bd.sh v0.49.6   -> prints the binary path (.bin/bd-v0.49.6)
# Rebuilds only when the binary is missing or older than the module's go.mod, go.sum or archive.
# A release the module proxy does not serve (v0.27.2) has its source archive in the
# module, beads-VERSION.tar.gz: checked against the module's SHA256SUMS, then extracted
# into .bin/src/beads-VERSION, where the module's go.mod replaces the module with it.
set -euo pipefail

version=${1:?usage: build-bd.sh VERSION (e.g. v0.49.6)}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
moddir=$root/tools/bd-$version
out=$root/.bin/bd-$version
archive=$moddir/beads-$version.tar.gz

[[ -f $moddir/go.mod ]] || { echo "build-bd.sh: no module at $moddir" >&2; exit 2; }
mkdir -p "$root/.bin"

stale() {
    [[ -x $out ]] || return 0
    local f
    for f in "$moddir/go.mod" "$moddir/go.sum" "$archive"; do
        [[ -f $f && $f -nt $out ]] && return 0
    done
    return 1
}

if stale; then
    echo "build-bd.sh: building bd $version ..." >&2
    if [[ -f $archive ]]; then
        sha=sha256sum
        command -v sha256sum >/dev/null || sha="shasum -a 256"
        (cd "$moddir" && $sha -c --quiet SHA256SUMS) ||
            { echo "build-bd.sh: $archive does not match $moddir/SHA256SUMS" >&2; exit 1; }
        rm -rf "$root/.bin/src/beads-$version"
        mkdir -p "$root/.bin/src"
        tar -xzf "$archive" -C "$root/.bin/src"
    fi
    # -mod=readonly: go.sum is committed and must already be complete.
    (cd "$moddir" && CGO_ENABLED=0 GOTOOLCHAIN=local \
        go build -mod=readonly -trimpath -o "$out.tmp" github.com/steveyegge/beads/cmd/bd)
    mv "$out.tmp" "$out"
fi
echo "$out"
