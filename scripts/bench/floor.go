package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bdclaim/bd-claim/claim/sqlite"
)

// footprintSQL are the statements of the in-process footprint floor, in
// the order one claim runs them.
var footprintSQL = []string{
	// bd's ready read, at its cheapest: whether the next issue of the claim
	// order is still open, unassigned and not in blocked_issues_cache. The
	// order itself (footprintOrder) is read once, as a Store remembers
	// its order between claims.
	`SELECT 1 FROM issues i WHERE i.id = ? AND i.status = 'open' AND (i.assignee IS NULL OR i.assignee = '')
	AND NOT EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)`,
	// The issue as it was, for the event's old_value and the hash.
	`SELECT * FROM issues WHERE id = ?`,
	`SELECT label FROM labels WHERE issue_id = ? ORDER BY label`,
	`UPDATE issues SET status = 'in_progress', assignee = ?, updated_at = ?, content_hash = ? WHERE id = ? AND status = 'open'`,
	`INSERT INTO events (issue_id, event_type, actor, old_value, new_value, comment, created_at)
	VALUES (?, 'status_changed', ?, ?, ?, NULL, ?)`,
	`INSERT INTO dirty_issues (issue_id, marked_at) VALUES (?, ?)
	ON CONFLICT (issue_id) DO UPDATE SET marked_at = excluded.marked_at`,
}

// footprintOrder is bd ready's order of the ready issues (priority, then
// age), read once.
const footprintOrder = `SELECT i.id FROM issues i WHERE i.status = 'open' AND (i.assignee IS NULL OR i.assignee = '')
	AND NOT EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)
	ORDER BY i.priority, i.created_at, i.id`

// footprintMode is the in-process floor of a library claim: what any
// program must do to claim one issue as bd writes the claim, and no more.
// One connection with bd-claim's pragmas (sqlite.Open), every statement
// prepared once, the claim order read once, and per claim one BEGIN
// IMMEDIATE transaction that checks the next issue of the order is still
// ready, reads its row and labels, and writes the row (status,
// assignee, updated_at, a new content hash), one event carrying the issue
// as it was, and the dirty mark. No failure policy, no filters, no leases,
// no queue.
func footprintMode(b *bench, t *template) (*raw, error) {
	ws, err := b.workspace("footprint", t)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	pool := sqlite.OpenDB(ws.db, 5*time.Second)
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	stmts := make([]*sql.Stmt, len(footprintSQL))
	for i, q := range footprintSQL {
		if stmts[i], err = conn.PrepareContext(ctx, q); err != nil {
			conn.Close()
			pool.Close()
			return nil, fmt.Errorf("footprint floor: %w", err)
		}
	}
	closeAll := func() error {
		for _, s := range stmts {
			s.Close()
		}
		return errors.Join(conn.Close(), pool.Close())
	}
	var order []string
	return &raw{close: closeAll, run: func(n int) (int, error) {
		if order == nil {
			rows, err := conn.QueryContext(ctx, footprintOrder)
			if err != nil {
				return 0, err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return 0, err
				}
				order = append(order, id)
			}
			if err := rows.Close(); err != nil {
				return 0, err
			}
		}
		for i := range n {
			var err error
			if order, err = footprintClaim(ctx, conn, stmts, order); err != nil {
				return i, err
			}
		}
		return n, nil
	}}, nil
}

// footprintClaim claims the first ready issue of order for agent "floor"
// (see footprintMode) and returns the rest of the order.
func footprintClaim(ctx context.Context, conn *sql.Conn, stmts []*sql.Stmt, order []string) ([]string, error) {
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		return order, err
	}
	defer tx.Rollback()
	st := func(i int) *sql.Stmt { return tx.StmtContext(ctx, stmts[i]) }
	var id string
	for id == "" {
		if len(order) == 0 {
			return order, errors.New("footprint floor: no ready issue left")
		}
		var one int
		err := st(0).QueryRowContext(ctx, order[0]).Scan(&one)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return order, err
		}
		if err == nil {
			id = order[0]
		}
		order = order[1:]
	}
	return order, footprintWrite(ctx, tx, st, id)
}

// footprintWrite writes bd's claim of issue id in tx and commits.
func footprintWrite(ctx context.Context, tx *sql.Tx, st func(int) *sql.Stmt, id string) error {
	rows, err := st(1).QueryContext(ctx, id)
	if err != nil {
		return err
	}
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	issue := map[string]any{}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return err
		}
		for i, c := range cols {
			if vals[i].Valid {
				issue[c] = vals[i].String
			}
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	labels, err := st(2).QueryContext(ctx, id)
	if err != nil {
		return err
	}
	var names []string
	for labels.Next() {
		var l string
		if err := labels.Scan(&l); err != nil {
			labels.Close()
			return err
		}
		names = append(names, l)
	}
	if err := labels.Close(); err != nil {
		return err
	}
	issue["labels"] = names
	oldValue, _ := json.Marshal(issue)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	issue["status"], issue["assignee"], issue["updated_at"] = "in_progress", "floor", now
	next, _ := json.Marshal(issue)
	sum := sha256.Sum256(next)
	res, err := st(3).ExecContext(ctx, "floor", now, hex.EncodeToString(sum[:]), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("footprint floor: %s changed meanwhile", id)
	}
	if _, err := st(4).ExecContext(ctx, id, "floor", string(oldValue), `{"assignee":"floor","status":"in_progress"}`, now); err != nil {
		return err
	}
	if _, err := st(5).ExecContext(ctx, id, now); err != nil {
		return err
	}
	return tx.Commit()
}
