#!/usr/bin/env bash
# The embedded build for macOS (darwin amd64 and arm64), made on a Mac: cgo
# there links the CoreFoundation and Security frameworks (crypto/x509) and
# libresolv (net) from the Mac's SDK, which no cross linker on Linux has (zig
# cc ships none of them). The release workflow's macos job runs it once
# goreleaser has published the rest, checks the archives with
# scripts/installtest and uploads them with their checksums.
# Usage: scripts/dist-macos.sh vX.Y.Z   -> dist-macos/: the two archives and
#        their checksums.txt, named and stamped as goreleaser does
set -euo pipefail

[[ $(uname -s) == Darwin ]] || { echo "dist-macos.sh: runs on macOS only" >&2; exit 2; }
tag=${1:?usage: dist-macos.sh vX.Y.Z}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=$root/dist-macos
rm -rf "$out"
mkdir -p "$out"

# The stamp goreleaser writes (.goreleaser.yaml): v{{.Version}}, the commit,
# the commit's date in UTC.
commit=$(git rev-parse HEAD)
date=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
pkg=github.com/bdclaim/bd-claim/cli
ldflags="-s -w -X $pkg.stampVersion=$tag -X $pkg.stampCommit=$commit -X $pkg.stampDate=$date"

for arch in arm64 amd64; do
    cpu=$arch
    [[ $arch == amd64 ]] && cpu=x86_64
    stage=$out/stage-$arch
    name=bd-claim_${tag#v}_darwin_${arch}_embedded
    mkdir -p "$stage"
    CGO_ENABLED=1 GOOS=darwin GOARCH=$arch CC="clang -arch $cpu" \
        go build -trimpath -tags embedded,gms_pure_go -ldflags "$ldflags" -o "$stage/bd-claim" .
    [[ $(lipo -archs "$stage/bd-claim") == "$cpu" ]] || { echo "dist-macos.sh: $name is not $cpu" >&2; exit 1; }
    if otool -L "$stage/bd-claim" | tail -n +2 | grep -vE '^\s+(/usr/lib/|/System/Library/Frameworks/)'; then
        echo "dist-macos.sh: $name links a library that is not the system's" >&2
        exit 1
    fi
    codesign -s - -f "$stage/bd-claim" # ad hoc, as macOS wants of arm64 code (and bd does of both)
    codesign --verify "$stage/bd-claim"
    if [[ $arch == arm64 ]] || arch -x86_64 /usr/bin/true 2>/dev/null; then # amd64 through Rosetta
        got=$("$stage/bd-claim" version)
        [[ $got == "bd-claim $tag ${commit:0:12} $date (embedded build)" ]] || {
            echo "dist-macos.sh: $name: bd-claim version printed: $got" >&2
            exit 1
        }
        echo "$name: $got" >&2
    else
        echo "dist-macos.sh: $name not run: no Rosetta on this Mac" >&2
    fi
    cp README.md "$stage/"
    files=(bd-claim README.md)
    for l in LICENSE*; do
        [[ -f $l ]] && cp "$l" "$stage/" && files+=("$l")
    done
    tar -czf "$out/$name.tar.gz" -C "$stage" "${files[@]}"
    rm -rf "$stage"
done
(cd "$out" && shasum -a 256 -- *.tar.gz >checksums.txt) # "SHA256  NAME", as goreleaser writes it
cat "$out/checksums.txt"
