// Package sqlite is bd-claim's engine for Beads SQLite workspaces (bd
// v0.27-v0.50): opening one as bd does and telling who wrote it (its
// flavor), the transaction frame (the writers' kernel queue, BEGIN
// IMMEDIATE, the busy retry), prepared statements, every move of the claim
// lifecycle as that bd writes it (engine.Tx), and its error codes. Its SQL
// is in sql/queries, generated into package db, and in the query shapes
// of query.go over the domain's readiness spec.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/bdclaim/bd-claim/claim/engine"
	beadssql "github.com/bdclaim/bd-claim/sql"
)

// OpenDB returns a handle on an existing Beads database. It never creates the
// file (mode=rw), starts every transaction with BEGIN IMMEDIATE so that a
// claim takes the write lock before it reads, waits busyTimeout for a lock
// held elsewhere, and sets what bd's own connections have: foreign keys on
// and synchronous=NORMAL (the default of bd's driver; with the WAL journal
// bd puts every workspace in, a commit is durable once the WAL is synced at
// checkpoint). journal_mode is left as bd set it.
func OpenDB(path string, busyTimeout time.Duration) *sql.DB {
	dsn := fmt.Sprintf("file:%s?mode=rw&_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)",
		(&url.URL{Path: path}).EscapedPath(), busyTimeout.Milliseconds())
	conn, _ := sql.Open("sqlite", dsn) // only fails for an unknown driver name
	return conn
}

// Code returns the primary SQLite result code carried by err (SQLITE_BUSY,
// SQLITE_NOTADB, ...), or 0 when err did not come from SQLite.
func Code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

// Primary SQLite result codes that bd-claim tells apart.
const (
	CodeBusy     = sqlite3.SQLITE_BUSY
	CodeLocked   = sqlite3.SQLITE_LOCKED
	CodeCorrupt  = sqlite3.SQLITE_CORRUPT
	CodeCantOpen = sqlite3.SQLITE_CANTOPEN
	CodeNotADB   = sqlite3.SQLITE_NOTADB
)

// IsBusy reports whether err means another connection holds the lock.
func IsBusy(err error) bool {
	c := Code(err)
	return c == CodeBusy || c == CodeLocked
}

// Tx runs fn in one BEGIN IMMEDIATE transaction on conn (a pool, or one of
// its connections) and commits it; any error rolls everything back, so
// fn's writes land together or not at all. When SQLite still reports busy
// after its busy_timeout, the whole transaction is retried after an
// exponential, jittered pause, up to r.Attempts tries (engine.WithTx).
func Tx(ctx context.Context, conn engine.Beginner, r engine.Retry, fn func(*sql.Tx) error) error {
	return engine.WithTx(ctx, conn, r, IsBusy, fn)
}

// Create makes a new, empty Beads database at path from the vendored schema
// in WAL mode, as `bd init` leaves it. It refuses to touch an existing file.
// bd-claim uses it only for the demo, tests and benchmarks.
func Create(ctx context.Context, path string) error {
	conn, _ := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rwc&_pragma=journal_mode(WAL)")
	defer conn.Close()
	var n int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n)
	if err == nil && n > 0 {
		err = fmt.Errorf("%s already holds a database", path)
	}
	if err == nil {
		// .schema lists SQLite's own sqlite_sequence, which AUTOINCREMENT makes.
		_, err = conn.ExecContext(ctx, strings.Replace(beadssql.Schema, "CREATE TABLE sqlite_sequence(name,seq);", "", 1))
	}
	return err
}
