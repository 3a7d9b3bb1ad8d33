package claimtest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
)

// DBTX is what an engine's queries run on (sqlc's db.DBTX, as both engines
// generate it).
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Faulty runs every statement on the real database except the Fail-th one
// (counting from 1), which fails. It counts the statements it sees in
// Seen, and logs the first line of each in Log when Log is not nil. An
// engine's fault-injection tests wrap its handle in it.
type Faulty struct {
	DBTX
	Seen *atomic.Int64
	Fail int64
	Log  *[]string
}

// ErrInjected is the error of the statement Faulty fails.
var ErrInjected = errors.New("injected fault")

func (f Faulty) hit(query string) bool {
	n := f.Seen.Add(1)
	if f.Log != nil {
		*f.Log = append(*f.Log, strings.SplitN(strings.TrimSpace(query), "\n", 2)[0])
	}
	return n == f.Fail
}

func (f Faulty) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if f.hit(query) {
		return nil, ErrInjected
	}
	return f.DBTX.ExecContext(ctx, query, args...)
}

func (f Faulty) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if f.hit(query) {
		return nil, ErrInjected
	}
	return f.DBTX.QueryContext(ctx, query, args...)
}

func (f Faulty) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if f.hit(query) {
		return f.DBTX.QueryRowContext(ctx, "SELECT json_extract('{', '$')") // a row whose Scan fails
	}
	return f.DBTX.QueryRowContext(ctx, query, args...)
}

// Must is the value of a call whose error must be nil.
func Must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		assert.NilError(t, err)
		return v
	}
}
