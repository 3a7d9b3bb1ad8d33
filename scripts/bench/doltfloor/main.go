// Command doltfloor is the floor of a claim process on a Dolt server for
// `make bench`: the least a program can do to claim one issue with bd's
// footprint. It connects with go-sql-driver/mysql (the DSN as given), and
// in one transaction reads the most urgent open unassigned issue
// (priority, created_at, id: none of bd ready's other rules), sets it
// in_progress under a compare-and-swap on its status with a new row_lock,
// upserts bd's 5-minute lease and inserts a claimed event; after COMMIT it
// runs DOLT_ADD('issues') and DOLT_COMMIT as bd does. No workspace
// discovery, schema check, writers' lock, issue snapshot or retry: what
// is left is what any tool that writes bd's claim pays.
//
//	doltfloor DSN AGENT
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	_ "github.com/go-sql-driver/mysql"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: doltfloor DSN AGENT")
		os.Exit(2)
	}
	id, err := claim(context.Background(), os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if id == "" {
		os.Exit(3)
	}
	fmt.Println(id)
}

func claim(ctx context.Context, dsn, agent string) (string, error) {
	pool, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx) // one session for the transaction and the Dolt commit, as bd pins one
	if err != nil {
		return "", err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var id string
	err = tx.QueryRowContext(ctx, `SELECT id FROM issues WHERE status = 'open' AND (assignee IS NULL OR assignee = '')
ORDER BY priority, created_at, id LIMIT 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	res, err := tx.ExecContext(ctx, `UPDATE issues SET status = 'in_progress', assignee = ?, updated_at = UTC_TIMESTAMP(), row_lock = ?
WHERE id = ? AND status = 'open'`, agent, int64(binary.LittleEndian.Uint64(b[:8])>>1), id)
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return "", fmt.Errorf("%s was taken meanwhile (%v)", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO leases (issue_id, holder, granted_at, lease_expires_at, heartbeat_at)
VALUES (?, ?, UTC_TIMESTAMP(), UTC_TIMESTAMP() + INTERVAL 5 MINUTE, UTC_TIMESTAMP())
ON DUPLICATE KEY UPDATE holder = VALUES(holder), granted_at = VALUES(granted_at), lease_expires_at = VALUES(lease_expires_at), heartbeat_at = VALUES(heartbeat_at)`, id, agent); err != nil {
		return "", err
	}
	eid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (id, issue_id, event_type, actor, old_value, new_value, comment)
VALUES (?, ?, 'claimed', ?, '', ?, NULL)`, eid, id, agent, fmt.Sprintf(`{"assignee":%q,"status":"in_progress"}`, agent)); err != nil {
		return "", err
	}
	if err := tx.Commit(); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, "CALL DOLT_ADD('issues')"); err != nil {
		return "", err
	}
	_, err = conn.ExecContext(ctx, "CALL DOLT_COMMIT('-m', ?, '--author', 'beads <beads@local>')", "bd: update "+id)
	return id, err
}
