// Package sql holds what bd-claim shares with Beads: the vendored Beads
// schema (written by `make schema` from the real bd) and the static queries
// that sqlc compiles into package db.
package sql

import _ "embed"

// SchemaVersion is the bd release whose schema is vendored in Schema.
const SchemaVersion = "0.49.6"

// Schema is `sqlite3 .beads/beads.db .schema` of a workspace made by
// `bd init` at SchemaVersion.
//
//go:embed schema/bd-v0.49.6.sql
var Schema string
