// Package sqlite is bd-claim's adapter to a Beads SQLite database (bd
// v0.27-v0.50): opening it as bd does, its error codes, the transaction
// (BEGIN IMMEDIATE, the busy retry, begin and commit errors wrapped),
// prepared statements, and the kernel queue of bd-claim's writers. The
// sqlc-generated queries are package db.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	beadssql "github.com/bdclaim/bd-claim/sql"
)

// Open returns a handle on an existing Beads database. It never creates the
// file (mode=rw), starts every transaction with BEGIN IMMEDIATE so that a
// claim takes the write lock before it reads, waits busyTimeout for a lock
// held elsewhere, and sets what bd's own connections have: foreign keys on
// and synchronous=NORMAL (the default of bd's driver; with the WAL journal
// bd puts every workspace in, a commit is durable once the WAL is synced at
// checkpoint). journal_mode is left as bd set it.
func Open(path string, busyTimeout time.Duration) *sql.DB {
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

// Retry bounds how often Tx runs a transaction again after SQLITE_BUSY.
type Retry struct {
	Attempts int           // total tries, at least 1
	Backoff  time.Duration // pause after the first busy try (at least 1ms); doubled each time up to 1s, with ±50% jitter
}

// Tx runs fn in one BEGIN IMMEDIATE transaction and commits it; any error
// rolls everything back, so fn's writes land together or not at all. When
// SQLite still reports busy after its busy_timeout, the whole transaction is
// retried after an exponential, jittered pause, up to r.Attempts tries.
func Tx(ctx context.Context, conn *sql.DB, r Retry, fn func(*sql.Tx) error) error {
	return TxRetry(ctx, conn, r, IsBusy, fn)
}

// Beginner begins transactions: a pool (*sql.DB) or one of its
// connections (*sql.Conn).
type Beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// TxRetry is Tx for any engine, on a pool or on one connection: the whole transaction is tried again while
// retryable says its error is worth another try (a busy SQLite, a Dolt
// serialization failure).
func TxRetry(ctx context.Context, conn Beginner, r Retry, retryable func(error) bool, fn func(*sql.Tx) error) error {
	pause := max(r.Backoff, time.Millisecond)
	for try := 1; ; try++ {
		err := tx(ctx, conn, fn)
		if !retryable(err) || try >= r.Attempts {
			return err
		}
		t := time.NewTimer(pause/2 + rand.N(pause+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// tx is one try: begin, fn, commit. Begin and commit errors say which they
// were (the driver's error stays wrapped, for Code); an error from fn, or a
// panic, rolls back.
func tx(ctx context.Context, conn Beginner, fn func(*sql.Tx) error) (err error) {
	t, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = t.Rollback()
			panic(p)
		}
	}()
	if err := fn(t); err != nil {
		_ = t.Rollback()
		return err
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
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
