#!/usr/bin/env bash
# Vendor the schema that the real bd creates with `bd init`, one file per version:
#   sql/schema/bd-VERSION.sql  ==  `sqlite3 .beads/beads.db .schema` of a fresh workspace
#   (after `bd init` and one `bd list`).
# The versions are the pinned modules tools/bd-vX.Y.Z (the one list of supported bd releases).
# Usage: scripts/schema.sh            write the files       (make schema)
#        scripts/schema.sh --check    compare, exit 1 + diff (make verify); also fails when
#                                     sql/schema/ has a file for a version with no tools module
#                                     (or misses one), or sqlc.yaml's schema is not the newest
# SCHEMA_DIR overrides the output directory (default: sql/schema).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shopt -s nullglob
versions_of() { # DIR SUFFIX: the versions X of DIR/bd-vX.SUFFIX, newest first
    local f
    for f in "$1"/bd-v*"$2"; do f=${f#"$1"/bd-}; echo "${f%"$2"}"; done | sort -rV
}
mapfile -t VERSIONS < <(versions_of "$root/tools" /go.mod)
((${#VERSIONS[@]})) || { echo "schema.sh: no tools/bd-v*/ module" >&2; exit 2; }
outdir=${SCHEMA_DIR:-$root/sql/schema}
check=0
case ${1:-} in
    --check) check=1 ;;
    "") ;;
    *) echo "usage: schema.sh [--check]" >&2; exit 2 ;;
esac

if ! command -v sqlite3 >/dev/null; then
    echo "schema.sh: installing sqlite3" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dump_schema() { # VERSION FILE
    local bd ws=$tmp/$1
    bd=$("$root/scripts/build-bd.sh" "$1")
    mkdir -p "$ws/home" "$ws/repo"
    (
        cd "$ws/repo"
        export HOME=$ws/home BEADS_NO_DAEMON=1 BEADS_AUTO_START_DAEMON=false BD_ACTOR=schema TZ=UTC
        git init -q
        git config user.name schema
        git config user.email schema@example.invalid
        "$bd" init --prefix x --quiet --skip-hooks --skip-merge-driver </dev/null >/dev/null
        # A second open reorders sqlite_master (bd re-runs its migrations on every open);
        # one read makes the dump equal what every used workspace (and the fixtures) show.
        "$bd" --no-daemon list --json </dev/null >/dev/null
        sqlite3 .beads/beads.db .schema >"$2"
    )
}

status=0
if ((check)); then
    # The vendored files and the pinned modules are the same set of versions.
    vendored=$(versions_of "$outdir" .sql)
    if [[ $vendored != "$(printf '%s\n' "${VERSIONS[@]}")" ]]; then
        echo "schema.sh: $outdir/bd-v*.sql (${vendored//$'\n'/ }) differ from the tools/bd-v*/ modules" \
            "(${VERSIONS[*]}): run make schema, delete the files of dropped versions" >&2
        status=1
    fi
    # sqlc compiles the queries against the newest schema.
    newest=sql/schema/bd-${VERSIONS[0]}.sql
    sqlc_schema=$(sed -n 's/^[[:space:]]*schema:[[:space:]]*\(sql\/schema\/\)/\1/p' "$root/sqlc.yaml") # the SQLite engine's (sql/dolt/ is the Dolt one)
    if [[ $sqlc_schema != "$newest" ]]; then
        echo "schema.sh: sqlc.yaml has schema: ${sqlc_schema:-(none)}, want $newest (then make generate)" >&2
        status=1
    fi
fi
for v in "${VERSIONS[@]}"; do
    dump_schema "$v" "$tmp/bd-$v.sql"
    want=$outdir/bd-$v.sql
    if ((check)); then
        if ! diff -u "$want" "$tmp/bd-$v.sql"; then
            echo "schema.sh: $want is stale; run make schema" >&2
            status=1
        fi
    else
        mkdir -p "$outdir"
        cp "$tmp/bd-$v.sql" "$want"
        echo "wrote $want"
    fi
done
exit $status
