#!/usr/bin/env bash
# Make the source archive of a bd release that the Go module proxy does not serve
# (v0.27.2: "not available"), for the pinned module tools/bd-VERSION to build from.
# Usage: scripts/bd-source.sh VERSION GITDIR
#   GITDIR: a clone of github.com/steveyegge/beads that has the tag VERSION.
# Writes tools/bd-VERSION/beads-VERSION.tar.gz: `git archive` of the tag, limited to
# upstream's LICENSE and go.mod and the files `go build ./cmd/bd` compiles or embeds
# (CGO_ENABLED=0) on linux, darwin, windows and freebsd, amd64 and arm64, under the
# prefix beads-VERSION/; gzip -9n, so the same tag gives the same bytes. Then
# tools/bd-VERSION/SHA256SUMS, which scripts/build-bd.sh checks before it extracts.
# Needs the module proxy (go list loads the dependencies), not the network otherwise.
set -euo pipefail

version=${1:?usage: bd-source.sh VERSION GITDIR}
repo=${2:?usage: bd-source.sh VERSION GITDIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
moddir=$root/tools/bd-$version
archive=beads-$version.tar.gz
mkdir -p "$moddir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$repo" archive "$version" | tar -x -C "$tmp"
files=$(
    cd "$tmp"
    for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64 freebsd/amd64 freebsd/arm64; do
        GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 GOFLAGS=-mod=mod go list -deps \
            -f '{{if and .Module (eq .Module.Path "github.com/steveyegge/beads")}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}' ./cmd/bd
    done | sed -n "s|^$tmp/||p" | sort -u
)
# shellcheck disable=SC2086 # one path a word
git -C "$repo" archive --format=tar --prefix="beads-$version/" "$version" -- LICENSE go.mod $files |
    gzip -9n >"$moddir/$archive"
(cd "$moddir" && sha256sum "$archive" >SHA256SUMS)
echo "wrote $moddir/$archive ($(wc -w <<<"$files") files of $(git -C "$repo" rev-parse "$version^{commit}")):"
cat "$moddir/SHA256SUMS"
