#!/bin/sh
# Installs bd-claim from its release archives: picks the archive of this
# machine's OS and architecture, checks it against the release's
# checksums.txt, and puts bd-claim in a directory (~/.local/bin unless told).
#
#   curl -fsSL https://raw.githubusercontent.com/bdclaim/bd-claim/main/install.sh | sh
#   sh install.sh --help
set -eu

repo=https://github.com/bdclaim/bd-claim
build=
version=
dir=${BD_CLAIM_INSTALL_DIR:-$HOME/.local/bin}
base=

die() {
    echo "install.sh: $*" >&2
    exit 1
}

usage() {
    cat <<'EOF'
usage: install.sh [--build embedded|default] [--version vX.Y.Z] [--dir DIR] [--base-url URL]
  --build     embedded: every workspace, bd v1.3's embedded Dolt included;
              default: SQLite and Dolt server/proxied workspaces.
              When omitted: embedded where it is shipped (Linux, macOS).
  --version   a release tag (default: the latest release)
  --dir       where bd-claim goes (default: $BD_CLAIM_INSTALL_DIR, else ~/.local/bin)
  --base-url  where checksums.txt and the archives are, instead of the GitHub
              release (a mirror, a served dist/)
EOF
}

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=${2:?--build needs embedded or default}; shift 2 ;;
    --version) version=${2:?--version needs a tag}; shift 2 ;;
    --dir) dir=${2:?--dir needs a directory}; shift 2 ;;
    --base-url) base=${2:?--base-url needs a URL}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done

case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
FreeBSD) os=freebsd ;;
*) die "no release archive for $(uname -s): on Windows, download bd-claim_VERSION_windows_ARCH_BUILD.zip from $repo/releases" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no release archive for $(uname -m)" ;;
esac
if [ "$os" = darwin ] && [ "$arch" = amd64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null)" = 1 ]; then
    arch=arm64 # a shell under Rosetta on Apple silicon
fi
case $os/$arch in
freebsd/arm64) die "no release archive for freebsd/arm64" ;;
esac
if [ -z "$build" ]; then
    build=embedded
    [ "$os" = freebsd ] && build=default
fi
case $build in
embedded) [ "$os" != freebsd ] || die "the embedded build is not shipped for $os/$arch: use --build default" ;;
default) ;;
*) die "--build is embedded or default, not $build" ;;
esac

if [ -z "$base" ]; then
    if [ -n "$version" ]; then
        base=$repo/releases/download/$version
    else
        base=$repo/releases/latest/download
    fi
fi

if command -v curl >/dev/null 2>&1; then
    fetch() { curl -fsSL -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
    fetch() { wget -q -O "$2" "$1"; }
else
    die "needs curl or wget"
fi
if command -v sha256sum >/dev/null 2>&1; then
    sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
    sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
    die "needs sha256sum or shasum"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch "$base/checksums.txt" "$tmp/checksums.txt" || die "cannot download $base/checksums.txt"
# The archive's name carries the version: checksums.txt names it.
line=$(grep -E "  bd-claim_[^ ]+_${os}_${arch}_${build}\.tar\.gz\$" "$tmp/checksums.txt" || true)
[ -n "$line" ] || die "$base/checksums.txt lists no ${os}_${arch}_${build} archive"
[ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] || die "$base/checksums.txt lists several ${os}_${arch}_${build} archives"
want=${line%%  *}
archive=${line#*  }

echo "install.sh: downloading $archive" >&2
fetch "$base/$archive" "$tmp/$archive" || die "cannot download $base/$archive"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] || die "$archive: sha256 $got, but checksums.txt says $want"

mkdir -p "$tmp/x" "$dir"
tar -xzf "$tmp/$archive" -C "$tmp/x" bd-claim
# Replace, never write into, an existing binary (it may be running).
cp "$tmp/x/bd-claim" "$dir/.bd-claim.new"
chmod 755 "$dir/.bd-claim.new"
mv -f "$dir/.bd-claim.new" "$dir/bd-claim"

echo "install.sh: installed $dir/bd-claim: $("$dir/bd-claim" version)" >&2
case :$PATH: in
*:"$dir":*) ;;
*) echo "install.sh: $dir is not on your PATH: add it (e.g. export PATH=\"$dir:\$PATH\" in your shell's profile)" >&2 ;;
esac
