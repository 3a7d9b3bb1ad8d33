// Package dolt is bd-claim's adapter to a Beads database in a dolt
// sql-server (bd v1.3.x server mode), over the MySQL protocol: the
// connection, the server's error numbers, and what bd v1.3.0 writes into an
// event (its content-derived id, its old_value JSON). The sqlc-generated
// queries of sql/dolt/queries are package db/dolt.
package dolt

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Open returns a handle on the database c names. It connects lazily: the
// first query reports an unreachable server or a refused login.
func Open(c *mysql.Config) *sql.DB {
	connector, _ := mysql.NewConnector(c) // fails only for an unknown TLS config name or charset, which bd-claim never sets
	return sql.OpenDB(connector)
}

// The server's error numbers that bd-claim tells apart.
const (
	NumAccessDenied   = 1045 // a wrong user or password
	NumDBAccessDenied = 1044 // the user may not use the database
	NumTableDenied    = 1142 // a command (an UPDATE, an INSERT) the user may not run
	NumProcDenied     = 1370 // a procedure (DOLT_COMMIT) the user may not run
	NumUnknownDB      = 1049 // no such database
	NumNoSuchTable    = 1146 // no such table
	NumLockWait       = 1205 // lock wait timeout
	NumSerialization  = 1213 // Dolt: a concurrent transaction committed a conflicting write
	NumUnknown        = 1105 // Dolt's catch-all, also "Merge conflict detected, @autocommit transaction rolled back"
	NumReadOnly       = 1290 // the server runs --read-only
)

// Number returns the MySQL error number carried by err, or 0.
func Number(err error) uint16 {
	var e *mysql.MySQLError
	if errors.As(err, &e) {
		return e.Number
	}
	return 0
}

// IsConflict reports whether err is Dolt's optimistic-commit failure, after
// which bd replays the whole transaction: a serialization failure, a lock
// wait timeout, or a merge conflict.
func IsConflict(err error) bool {
	switch Number(err) {
	case NumSerialization, NumLockWait:
		return true
	case NumUnknown:
		return strings.Contains(err.Error(), "onflict")
	}
	return false
}
