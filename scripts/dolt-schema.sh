#!/usr/bin/env bash
# Vendor the schema that the real bd v1.3.0 creates in server mode (sqlc's mysql engine
# compiles sql/dolt/queries against it; make verify runs --check):
#   sql/dolt/bd-v1.3.0.sql  ==  `SHOW CREATE TABLE` of every table (sorted by name) of the
#   database that `bd init --server` makes on a fresh dolt 2.2.0 sql-server, one
#   `CREATE TABLE ...;` per table (the form sqlc's mysql engine reads), plus comments naming
#   the views, the dolt_ignore patterns and the applied migration versions.
# Usage: scripts/dolt-schema.sh            write the file
#        scripts/dolt-schema.sh --check    compare, exit 1 + diff on drift
# Builds .bin/bd-v1.3.0 and .bin/dolt-2.2.0 first (scripts/build-dolt.sh). The throwaway
# server listens on a free 127.0.0.1 port, runs under a temporary HOME and is always
# stopped (by pid) on exit, failure included.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=v1.3.0
out=$root/sql/dolt/bd-$version.sql
check=0
case ${1:-} in
    --check) check=1 ;;
    "") ;;
    *) echo "usage: dolt-schema.sh [--check]" >&2; exit 2 ;;
esac

bins=$("$root/scripts/build-dolt.sh")
bd=${bins%%$'\n'*} dolt=${bins##*$'\n'}
[[ -x $bd && -x $dolt ]] || { echo "dolt-schema.sh: build-dolt.sh gave no binaries" >&2; exit 1; }

tmp=$(mktemp -d)
server_pid=
cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A clean environment: no BEADS_*/BD_* of the caller, a temporary HOME with git and dolt
# identities (bd init commits to git; dolt needs a user to start).
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(BEADS_|BD_)' || true)
export HOME=$tmp/home TZ=UTC BD_ACTOR=schema BD_DISABLE_METRICS=1 DO_NOT_TRACK=1
mkdir -p "$HOME" "$tmp/srv" "$tmp/ws"
git config --global user.name schema
git config --global user.email schema@example.invalid
"$dolt" config --global --add user.name schema >/dev/null
"$dolt" config --global --add user.email schema@example.invalid >/dev/null
"$dolt" config --global --add metrics.disabled true >/dev/null

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Start the server on a free loopback port; retry with another port if it loses a race.
port=
for _ in 1 2 3 4 5; do
    p=$((20000 + RANDOM % 40000))
    port_free "$p" || continue
    (cd "$tmp/srv" && exec "$dolt" sql-server --host 127.0.0.1 --port "$p" >"$tmp/srv.log" 2>&1) &
    server_pid=$!
    for _ in $(seq 150); do
        kill -0 "$server_pid" 2>/dev/null || break
        if port_open "$p"; then port=$p; break; fi
        sleep 0.2
    done
    [[ -n $port ]] && break
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
done
[[ -n $port ]] || { echo "dolt-schema.sh: dolt sql-server did not start:" >&2; cat "$tmp/srv.log" >&2; exit 1; }

db=x
(
    cd "$tmp/ws"
    git init -q
    "$bd" init --server --server-host 127.0.0.1 --server-port "$port" --server-user root \
        --prefix "$db" --non-interactive --skip-hooks --skip-agents --quiet </dev/null >"$tmp/init.log" 2>&1 ||
        { cat "$tmp/init.log" >&2; exit 1; }
)

q() { # SQL: run against the bd database, CSV result
    "$dolt" --host 127.0.0.1 --port "$port" --user root --no-tls --password "" --use-db "$db" \
        sql -r csv -q "$1" </dev/null
}
# The first CSV field is a plain name (no comma, no quote); the second is the quoted DDL.
unquote_ddl() { sed '1d' | sed -e '1s/^[^,]*,"//' -e '$s/"$//' -e 's/""/"/g'; }

mapfile -t tables < <(q "SHOW FULL TABLES" | sed 1d | awk -F, '$2 == "BASE TABLE" {print $1}' | LC_ALL=C sort)
mapfile -t views < <(q "SHOW FULL TABLES" | sed 1d | awk -F, '$2 == "VIEW" {print $1}' | LC_ALL=C sort)
((${#tables[@]})) || { echo "dolt-schema.sh: bd init created no tables" >&2; exit 1; }

{
    echo "-- The schema of bd $version in Dolt server mode: SHOW CREATE TABLE of every table (sorted by"
    echo "-- name) after \`bd init --server\` on dolt $("$dolt" version | sed -n 's/^dolt version //p' | head -1)."
    echo "-- Written by scripts/dolt-schema.sh; do not edit."
    echo "-- views (not vendored): ${views[*]:-(none)}"
    echo "-- dolt_ignore: $(q "SELECT pattern, ignored FROM dolt_ignore ORDER BY pattern" | sed 1d |
        awk -F, '{printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $2}')"
    echo "-- schema_migrations (rows, min, max version): $(q "SELECT COUNT(*), MIN(version), MAX(version) FROM schema_migrations" | sed 1d)"
    echo "-- ignored_schema_migrations (rows, min, max version): $(q "SELECT COUNT(*), MIN(version), MAX(version) FROM ignored_schema_migrations" | sed 1d)"
    for t in "${tables[@]}"; do
        echo
        q "SHOW CREATE TABLE \`$t\`" | unquote_ddl
        echo ";"
    done
} >"$tmp/schema.sql"
# ";" on its own line is valid but untidy: join it to the closing line of the DDL.
sed -i -e ':a' -e 'N' -e '$!ba' -e 's/\n;/;/g' "$tmp/schema.sql"

if ((check)); then
    if ! diff -u "$out" "$tmp/schema.sql"; then
        echo "dolt-schema.sh: $out is stale; run scripts/dolt-schema.sh" >&2
        exit 1
    fi
else
    mkdir -p "$(dirname "$out")"
    cp "$tmp/schema.sql" "$out"
    echo "wrote $out"
fi
