// Command minclaim is the floor of a claim process for `make bench`: the
// least a program can do to claim one issue of a SQLite workspace with
// modernc.org/sqlite. It opens the database as bd-claim does (sqlite.Open: the
// same pragmas), runs BEGIN IMMEDIATE, one guarded UPDATE … RETURNING of
// the most urgent open unassigned issue, COMMIT, and closes (trying again
// while the database is busy). No workspace discovery, schema check, bd
// ready rules, event or hash: bd-claim's process cost is measured against
// it.
//
//	minclaim DB AGENT
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bdclaim/bd-claim/claim/sqlite"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: minclaim DB AGENT")
		os.Exit(2)
	}
	id, err := claim(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if id == "" {
		os.Exit(3)
	}
	fmt.Println(id)
}

// claim claims one issue, trying again while the database is busy for
// up to 30 seconds (its only concession to a swarm: bd-claim's writers
// queue instead), so that a swarm of it measures its cost, not its busy
// errors.
func claim(path, agent string) (string, error) {
	conn := sqlite.OpenDB(path, 5*time.Second)
	defer conn.Close()
	for end := time.Now().Add(30 * time.Second); ; {
		id, err := claimOnce(conn, agent)
		if !sqlite.IsBusy(err) || time.Now().After(end) {
			return id, err
		}
	}
}

func claimOnce(conn *sql.DB, agent string) (string, error) {
	ctx := context.Background()
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var id string
	err = tx.QueryRowContext(ctx, `UPDATE issues SET status = 'in_progress', assignee = ?, updated_at = ?
WHERE status = 'open' AND id = (SELECT id FROM issues WHERE status = 'open' AND (assignee IS NULL OR assignee = '')
	ORDER BY priority, created_at, id LIMIT 1)
RETURNING id`, agent, time.Now().UTC().Format(time.RFC3339Nano)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return id, tx.Commit()
}
