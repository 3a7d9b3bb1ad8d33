#!/usr/bin/env bash
# A snapshot release of every target into dist/ with the pinned goreleaser
# (.goreleaser.yaml; nothing is published), then scripts/checkdist checks every
# binary (format, architecture, cgo, stamp) and every archive (contents,
# checksums.txt).
# Usage: scripts/dist.sh [default|default,embedded]   (both builds when omitted;
#        CI builds "default": the embedded cross builds take too long per push)
# The embedded builds need C compilers: gcc, gcc-aarch64-linux-gnu and
# gcc-mingw-w64-x86-64-win32 from Debian (apt-get, as root, when missing). The
# embedded macOS builds are not made here: no cross linker here has the macOS
# frameworks that cgo links (see .goreleaser.yaml); scripts/dist-macos.sh
# makes them on a Mac.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builds=${1:-default,embedded}
case $builds in
default | default,embedded) ;;
*) echo "dist.sh: builds are 'default' or 'default,embedded', not '$builds'" >&2; exit 2 ;;
esac
goreleaser=$("$root/scripts/build-goreleaser.sh")

if [[ $builds == *embedded* ]]; then
    missing=()
    command -v gcc >/dev/null || missing+=(gcc libc6-dev)
    command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
    command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64-win32)
    if ((${#missing[@]})); then
        echo "dist.sh: installing ${missing[*]}" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
    echo "dist.sh: the embedded build for darwin amd64 and arm64 is not made here: cgo on macOS links the" \
        "CoreFoundation and Security frameworks (crypto/x509) and libresolv (net), which only a Mac's SDK has;" \
        "scripts/dist-macos.sh makes it on a Mac (the release workflow's macos job)" >&2
fi

cd "$root"
# goreleaser reads the commit, its date and the remote's URL from git, and
# without a remote (a local clone, a worktree of one) stamps none of them:
# name the project's repository for this run only, config untouched.
if ! git ls-remote --get-url >/dev/null 2>&1; then
    export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/bdclaim/bd-claim.git
fi
export BD_CLAIM_BUILDS=$builds GOTOOLCHAIN=local
start=$SECONDS
"$goreleaser" release --snapshot --clean
echo "dist.sh: goreleaser took $((SECONDS - start)) s" >&2
go run ./scripts/checkdist -builds "$builds" dist
