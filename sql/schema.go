// Package sql holds what bd-claim shares with Beads: the vendored Beads
// schema (written by `make schema` from the real bd) and the static queries
// that sqlc compiles into package db.
package sql

import (
	"embed"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// files are the vendored schemas, schema/bd-vX.Y.Z.sql, one per bd release
// pinned in tools/bd-vX.Y.Z (scripts/schema.sh --check keeps the two equal).
//
//go:embed schema/bd-v*.sql
var files embed.FS

var versions = newestFirst(vendored())

// SchemaVersion is the newest bd release whose schema is vendored: the one
// in Schema.
var SchemaVersion = versions[0]

// Schema is `sqlite3 .beads/beads.db .schema` of a workspace made by
// `bd init` at SchemaVersion.
var Schema = schema(SchemaVersion)

// Versions lists the bd releases whose schemas are vendored ("0.49.6"),
// newest first.
func Versions() []string { return slices.Clone(versions) }

// vendored lists the versions of the embedded files. The pattern is a
// constant and the directory is embedded, so neither call can fail.
func vendored() []string {
	names, _ := fs.Glob(files, "schema/bd-v*.sql")
	vs := make([]string, len(names))
	for i, n := range names {
		vs[i] = strings.TrimSuffix(strings.TrimPrefix(n, "schema/bd-v"), ".sql")
	}
	return vs
}

func schema(version string) string {
	b, _ := files.ReadFile("schema/bd-v" + version + ".sql")
	return string(b)
}

// newestFirst sorts versions "X.Y.Z" newest first.
func newestFirst(vs []string) []string {
	slices.SortFunc(vs, func(a, b string) int { return CompareVersions(b, a) })
	return vs
}

// CompareVersions orders bd versions "X.Y.Z" by number, not as strings
// (0.100.0 is newer than 0.99.0): -1, 0 or +1 as a is older, the same or
// newer than b.
func CompareVersions(a, b string) int { return slices.Compare(numbers(a), numbers(b)) }

func numbers(version string) []int {
	var n []int
	for _, f := range strings.Split(version, ".") {
		i, _ := strconv.Atoi(f)
		n = append(n, i)
	}
	return n
}
