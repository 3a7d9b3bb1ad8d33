package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func main() {
	ctx := context.Background()
	t0 := time.Now()
	lap := func(what string) { fmt.Printf("%-28s %6.1f ms\n", what, float64(time.Since(t0).Microseconds())/1000); t0 = time.Now() }
	db, _ := sql.Open("mysql", "root@tcp(127.0.0.1:33999)/dx?parseTime=true&interpolateParams=true&tls=false")
	var v int
	db.QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&v)
	lap("connect+schema")
	var pid string
	db.QueryRow("SELECT value FROM metadata WHERE `key`='_project_id'").Scan(&pid)
	lap("project id")
	tx, _ := db.BeginTx(ctx, nil)
	lap("begin")
	var id string
	var lock int64
	err := tx.QueryRow("SELECT id, row_lock FROM issues i WHERE status='open' AND is_blocked=0 ORDER BY priority, created_at, id LIMIT 1").Scan(&id, &lock)
	lap("select candidate")
	_, err = tx.Exec("UPDATE issues SET status='in_progress', assignee='t', updated_at=?, row_lock=? WHERE id=? AND row_lock=?", time.Now(), time.Now().UnixNano(), id, lock)
	lap("update")
	_, err = tx.Exec("INSERT INTO leases VALUES (?, 't', ?, ?, ?, '') ON DUPLICATE KEY UPDATE holder='t'", id, time.Now(), time.Now(), time.Now())
	lap("lease")
	err = tx.Commit()
	lap("commit")
	c, _ := db.Conn(ctx)
	lap("conn")
	_, err = c.ExecContext(ctx, "CALL DOLT_ADD('issues')")
	lap("dolt_add")
	_, err = c.ExecContext(ctx, "CALL DOLT_COMMIT('-m', 'x', '--author', 'beads <beads@local>')")
	lap("dolt_commit")
	fmt.Println(err)
}
