//go:build embedded

package dolt

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/dolthub/dolt/go/store/nbs"

	_ "github.com/bdclaim/bd-claim/claim/dolt/nometrics" // before the driver's init
	embedded "github.com/dolthub/driver/v2"
)

// Embedded reports whether this build links the embedded Dolt engine
// (`make embedded`: the build tags embedded and gms_pure_go, cgo).
const Embedded = true

// OpenEmbeddedConn opens database in dir (a workspace's .beads/embeddeddolt)
// with the embedded engine, as bd v1.3.0 does (embeddeddolt.OpenSQL: bd's
// commit identity, multi-statements), and returns one session on it. The engine takes
// an exclusive lock on the database's files: while another process holds
// it, the open is tried again until wait has passed, and then fails with an
// error for which Locked is true. Without that retry the engine would open
// read-only and fail at the first write. end closes the engine, which lets
// the lock go; it must run before another operation opens it again. The
// open and the session hold bd's workspace gates shared (Gates.Hold).
func OpenEmbeddedConn(ctx context.Context, dir, database string, wait time.Duration, gates Gates) (*sql.Conn, func(), error) {
	release, err := gates.Hold()
	if err != nil {
		return nil, nil, err
	}
	conn, closeEngine, err := openEmbedded(ctx, dir, database, wait)
	if err != nil {
		release()
		return nil, nil, err
	}
	return conn, func() { closeEngine(); release() }, nil
}

func openEmbedded(ctx context.Context, dir, database string, wait time.Duration) (*sql.Conn, func(), error) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.Multiplier, bo.MaxInterval = 10*time.Millisecond, 1.5, 250*time.Millisecond
	bo.MaxElapsedTime = max(wait, time.Millisecond) // 0 would wait forever
	connector, err := embedded.NewConnector(embedded.Config{Directory: dir, Database: database,
		CommitName: "beads", CommitEmail: "beads@local", MultiStatements: true, BackOff: bo})
	if err != nil { // the only cause: dir is not a directory
		return nil, nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
	}
	pool := sql.OpenDB(connector)
	conn, err := pool.Conn(ctx) // opens the engine
	if err != nil {
		pool.Close()
		connector.Close()
		return nil, nil, err
	}
	_, _ = conn.ExecContext(ctx, foreignKeyChecksOff) // were it refused, the checks stay on: slower, as correct
	return conn, func() {
		conn.Close()
		pool.Close()
		connector.Close() // the engine's shutdown reports context.Canceled even when clean
	}, nil
}

// foreignKeyChecksOff configures the session as the SQLite engine's DSN
// does its connections (sqlc holds no SET): no foreign key checks. The
// engine is this process's alone while it is open, and bd-claim's writes
// never change an issue's id, and add or delete only rows that refer to
// the issue or wisp their transaction read (events, labels, leases), so
// no check can fail; without them
// the engine plans an UPDATE of issues without an editor for each of the
// ten tables that reference it (the UPDATE took 14 ms of CPU instead of
// 2.4 as a session's first write; BENCHMARKS.md).
const foreignKeyChecksOff = "SET foreign_key_checks = 0"

// Locked reports whether err is an open of the embedded engine that found
// its database locked by another process until the wait passed.
func Locked(err error) bool { return errors.Is(err, nbs.ErrDatabaseLocked) }
