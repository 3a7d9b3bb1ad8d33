package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"github.com/bdclaim/bd-claim/db"
)

// Stmts prepares each distinct query once on conn and reuses it, inside or
// outside a transaction, so that a process claiming many times compiles
// each statement once. A query is prepared at its second run: its first
// runs unprepared on the handle, so that a process that claims once (the
// CLI) compiles nothing twice and opens one connection (a statement
// prepared on the pool while a transaction holds the open connection opens
// another, then compiles again on the transaction's). It is safe for
// concurrent use. Queries built from
// filters bind their values as arguments, so the number of distinct texts
// grows only with the shapes of the filters used (how many labels...).
type Stmts struct {
	conn *sql.DB
	mu   sync.Mutex
	m    map[string]*sql.Stmt // nil for a query that ran once, unprepared
}

// NewStmts returns an empty statement cache on conn.
func NewStmts(conn *sql.DB) *Stmts { return &Stmts{conn: conn, m: map[string]*sql.Stmt{}} }

// again reports whether query ran before, and notes that it did.
func (s *Stmts) again(query string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ran := s.m[query]
	if !ran {
		s.m[query] = nil
	}
	return ran
}

// On returns a db.DBTX that runs queries through the cache, in tx when tx is
// not nil and on the pool otherwise.
func (s *Stmts) On(tx *sql.Tx) db.DBTX { return stmtsOn{s, tx} }

// Close closes every cached statement.
func (s *Stmts) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for q, st := range s.m {
		if st != nil {
			st.Close()
		}
		delete(s.m, q)
	}
}

func (s *Stmts) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.m[query]; st != nil {
		return st, nil
	}
	st, err := s.conn.PrepareContext(ctx, query)
	if err == nil {
		s.m[query] = st
	}
	return st, err
}

type stmtsOn struct {
	s  *Stmts
	tx *sql.Tx
}

func (o stmtsOn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := o.s.prepare(ctx, query)
	if err == nil && o.tx != nil {
		st = o.tx.StmtContext(ctx, st)
	}
	return st, err
}

// handle is where an unprepared query runs: the transaction, or the pool.
func (o stmtsOn) handle() db.DBTX {
	if o.tx != nil {
		return o.tx
	}
	return o.s.conn
}

// stmt is the prepared statement of a query that ran before; nil, and the
// handle to run it on, at its first run.
func (o stmtsOn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if !o.s.again(query) {
		return nil, nil
	}
	return o.PrepareContext(ctx, query)
}

func (o stmtsOn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := o.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return o.handle().ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

func (o stmtsOn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := o.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return o.handle().QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext cannot return an error itself: when the statement cannot
// be prepared, the query runs unprepared on the same handle and its Scan
// reports why.
func (o stmtsOn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := o.stmt(ctx, query); st != nil && err == nil {
		return st.QueryRowContext(ctx, args...)
	}
	return o.handle().QueryRowContext(ctx, query, args...)
}
