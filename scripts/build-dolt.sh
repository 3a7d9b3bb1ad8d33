#!/usr/bin/env bash
# Build the real Beads CLI v1.3.0 and dolt 2.2.0 from the pinned module tools/dolt-v1.3.0:
# the Dolt (server mode) tests run them (make test), and make verify vendors the schema with them.
# Usage: scripts/build-dolt.sh   -> prints the two binary paths (.bin/bd-v1.3.0, .bin/dolt-2.2.0)
# Rebuilds a binary only when it is missing or older than tools/dolt-v1.3.0/go.sum.
# Both need cgo: gcc/g++ and libicu-dev (go-icu-regex links libicui18n/libicuuc/libicudata);
# they are installed from Debian when missing (apt-get; run as root).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
moddir=$root/tools/dolt-v1.3.0
[[ -f $moddir/go.mod ]] || { echo "build-dolt.sh: no module at $moddir" >&2; exit 2; }
mkdir -p "$root/.bin"

# name, output, package
targets=(
    "bd v1.3.0|$root/.bin/bd-v1.3.0|github.com/steveyegge/beads/cmd/bd"
    "dolt 2.2.0|$root/.bin/dolt-2.2.0|github.com/dolthub/dolt/go/cmd/dolt"
)

stale=0
for t in "${targets[@]}"; do
    IFS='|' read -r _ out _ <<<"$t"
    [[ ! -x $out || $moddir/go.sum -nt $out ]] && stale=1
done

if ((stale)); then
    missing=()
    command -v gcc >/dev/null || missing+=(build-essential)
    command -v g++ >/dev/null || missing+=(g++)
    dpkg -s libicu-dev >/dev/null 2>&1 || missing+=(libicu-dev)
    if ((${#missing[@]})); then
        echo "build-dolt.sh: installing ${missing[*]}" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
fi

for t in "${targets[@]}"; do
    IFS='|' read -r name out pkg <<<"$t"
    if [[ ! -x $out || $moddir/go.sum -nt $out ]]; then
        echo "build-dolt.sh: building $name ..." >&2
        start=$SECONDS
        # -mod=readonly: go.sum is committed and must already be complete.
        (cd "$moddir" && CGO_ENABLED=1 GOTOOLCHAIN=local \
            go build -mod=readonly -trimpath -o "$out.tmp" "$pkg")
        mv "$out.tmp" "$out"
        echo "build-dolt.sh: built $name in $((SECONDS - start)) s" >&2
    fi
    echo "$out"
done
