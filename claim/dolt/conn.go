package dolt

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// openPool returns a handle on the database c names. It connects lazily: the
// first query reports an unreachable server or a refused login.
func openPool(c *mysql.Config) *sql.DB {
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

// Kind is what an error of the server means to its client.
type Kind int

// The kinds of error bd-claim tells apart.
const (
	Other           Kind = iota
	LoginRefused         // a wrong user or password, or a database the user may not use
	WriteDenied          // a write, or a procedure, the user may not run; a read-only server
	NoDatabase           // no such database on the server
	Conflict             // Dolt's optimistic commit failed the transaction (IsConflict)
	Unreachable          // refused, dropped or timed out: no answer from the server
	EngineLocked         // the embedded engine stayed locked by another process past the wait (Locked)
	MaintenanceHeld      // a workspace gate is held exclusively (*Maintenance)
	NotBuiltIn           // an embedded database, and a build without the embedded engine (ErrNotBuiltIn)
	ProxyDown            // a proxied-server workspace without a verified proxy (*NoProxy)
)

// ErrNotBuiltIn is OpenEmbedded in a build without the embedded engine.
var ErrNotBuiltIn = errors.New("this bd-claim is built without the embedded Dolt engine")

// KindOf reads err: Other for an error the server did not send, or one
// that needs no telling apart.
func KindOf(err error) Kind {
	var op *net.OpError
	var m *Maintenance
	var np *NoProxy
	switch n := Number(err); {
	case Locked(err):
		return EngineLocked
	case errors.As(err, &m):
		return MaintenanceHeld
	case errors.Is(err, ErrNotBuiltIn):
		return NotBuiltIn
	case errors.As(err, &np):
		return ProxyDown
	case n == NumAccessDenied || n == NumDBAccessDenied:
		return LoginRefused
	case n == NumTableDenied || n == NumProcDenied || n == NumReadOnly || (n == NumUnknown && strings.Contains(err.Error(), "denied to user")):
		return WriteDenied
	case n == NumUnknownDB, errors.Is(err, fs.ErrNotExist):
		return NoDatabase
	case IsConflict(err):
		return Conflict
	case errors.As(err, &op), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, driver.ErrBadConn):
		return Unreachable
	}
	return Other
}

// Expect is what a client requires of the database it opens: bd's schema
// version, and the project id its metadata.json names ("" for any);
// Server and MetadataDir name them in a refusal.
type Expect struct {
	Schema      int64
	ProjectID   string
	Server      string
	MetadataDir string
}

// Refusal is a database that is not the one a client expects: not a Beads
// database, another schema version, another project.
type Refusal struct{ msg string }

func (r *Refusal) Error() string { return r.msg }

// Check reads the database's schema version and project id (one
// statement), and refuses (*Refusal) a database that is not what want
// names, the schema version first; any other error is the server's.
func Check(ctx context.Context, conn doltdb.DBTX, want Expect) error {
	got, err := doltdb.New().DatabaseIdentity(ctx, conn)
	switch {
	case Number(err) == NumNoSuchTable:
		return &Refusal{fmt.Sprintf("%s is not a Beads database (%v): check dolt_database in metadata.json or BEADS_DOLT_SERVER_DATABASE", want.Server, err)}
	case err != nil:
		return err
	case got.Version != want.Schema:
		return &Refusal{fmt.Sprintf("the Beads database %s is at schema version %d; bd-claim supports version %d (bd v1.3.x): upgrade with `bd migrate schema` or use a matching bd-claim", want.Server, got.Version, want.Schema)}
	case want.ProjectID != "" && got.ProjectID != want.ProjectID:
		return &Refusal{fmt.Sprintf("project identity mismatch: %s holds project %q, but %s/metadata.json names %q; the workspace points at another project's database (check BEADS_DOLT_SERVER_DATABASE and dolt_database)",
			want.Server, got.ProjectID, want.MetadataDir, want.ProjectID)}
	}
	return nil
}

// Commit is a Dolt commit as bd makes it for a write: its message and
// author, and what it stages.
type Commit struct {
	Message, Author string
	// All stages every table that is not dolt_ignored (DOLT_COMMIT('-Am'),
	// bd's proxied-server mode); else the issues table (events and leases
	// are dolt_ignored), labels when Labels, and comments when Comments.
	All, Labels, Comments bool
	// InTx is a commit inside the write's transaction, which DOLT_COMMIT
	// commits with it: a conflict fails the transaction, which the caller
	// tries again whole. Else the commit follows the SQL commit and is
	// tried again by itself on a conflict.
	InTx bool
}

// Make makes the Dolt commit c on the writer's connection conn, as bd does
// (runIssueOperationTxWithMessage; DOLT_ADD stages for the DOLT_COMMIT of
// the same session). A commit that finds nothing staged is fine: another
// writer's commit took the change in, or the write changed nothing that
// is versioned (bd then makes none).
func (c Commit) Make(ctx context.Context, conn doltdb.DBTX) error {
	q := doltdb.New()
	var err error
	for try := 1; ; try++ {
		if c.All {
			err = q.DoltCommitAll(ctx, conn, doltdb.DoltCommitAllParams{Message: c.Message, Author: c.Author})
		} else {
			err = q.DoltAddIssues(ctx, conn)
			if err == nil && c.Labels {
				err = q.DoltAddLabels(ctx, conn)
			}
			if err == nil && c.Comments {
				err = q.DoltAddComments(ctx, conn)
			}
			if err == nil {
				err = q.DoltCommit(ctx, conn, doltdb.DoltCommitParams{Message: c.Message, Author: c.Author})
			}
		}
		if err != nil && strings.Contains(err.Error(), "nothing to commit") {
			err = nil
		}
		if !IsConflict(err) || c.InTx || try >= 20 {
			return err
		}
		time.Sleep(time.Duration(try*10) * time.Millisecond)
	}
}
