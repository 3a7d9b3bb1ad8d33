//go:build embedded

// Command embeddedfloor is the floor of a claim process on an embedded Dolt
// workspace (bd v1.3's default mode) for `make bench`: the least a program
// can do to claim one issue with bd's footprint. Built with the embedded
// build's tags (embedded,gms_pure_go, cgo), it opens the embedded engine
// once, as bd-claim does (github.com/dolthub/driver/v2: bd's commit
// identity, multi-statements, the open tried again while another process
// holds the database), and in one session: a transaction that reads the
// most urgent open unassigned issue (priority, created_at, id: none of bd
// ready's other rules) with its row_lock, moves it to in_progress as bd's
// claim does (IssueClaimSet: the five cells under a compare-and-swap on
// row_lock), upserts bd's 5-minute lease (LeaseUpsert) and inserts the
// claimed event (EventInsert); after COMMIT, DOLT_ADD('issues') and
// DOLT_COMMIT with bd's message and author. Then it closes the engine. No
// workspace discovery, gates, writers' queue, open check, issue snapshot,
// derived event id or retry: what is left is what any program that writes
// bd's claim in the embedded engine pays.
//
// With -phases it prints the time of each phase to stderr as one JSON
// object of milliseconds (open, read, write, commit, dolt, close), so that
// the bench can tell where a claim's time goes.
//
//	embeddedfloor [-phases] DIR DATABASE AGENT
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/cenkalti/backoff/v4"

	_ "github.com/bdclaim/bd-claim/claim/dolt/nometrics" // before the driver's init
	embedded "github.com/dolthub/driver/v2"
)

func main() {
	phases := flag.Bool("phases", false, "print each phase's time (ms) to stderr as JSON")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: embeddedfloor [-phases] DIR DATABASE AGENT")
		os.Exit(2)
	}
	p := timer{last: time.Now(), ms: map[string]float64{}}
	id, err := claim(context.Background(), flag.Arg(0), flag.Arg(1), flag.Arg(2), &p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *phases {
		out, _ := json.Marshal(p.ms)
		fmt.Fprintln(os.Stderr, string(out))
	}
	if id == "" {
		os.Exit(3)
	}
	fmt.Println(id)
}

// timer adds the time since its last mark to a phase.
type timer struct {
	last time.Time
	ms   map[string]float64
}

func (t *timer) mark(phase string) {
	now := time.Now()
	t.ms[phase] += float64(now.Sub(t.last)) / 1e6
	t.last = now
}

func claim(ctx context.Context, dir, database, agent string, p *timer) (id string, err error) {
	// The open waits for another process's engine as bd-claim's does
	// (claim/dolt/embedded.go); the bench runs the floor alone.
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.Multiplier, bo.MaxInterval, bo.MaxElapsedTime = 10*time.Millisecond, 1.5, 250*time.Millisecond, 5*time.Second
	connector, err := embedded.NewConnector(embedded.Config{Directory: dir, Database: database,
		CommitName: "beads", CommitEmail: "beads@local", MultiStatements: true, BackOff: bo})
	if err != nil {
		return "", err
	}
	pool := sql.OpenDB(connector)
	defer func() {
		pool.Close()
		connector.Close() // the engine's shutdown reports context.Canceled even when clean
		p.mark("close")
	}()
	conn, err := pool.Conn(ctx) // opens the engine; one session for the transaction and the Dolt commit
	if err != nil {
		return "", err
	}
	defer conn.Close()
	p.mark("open")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var rowLock int64
	err = tx.QueryRowContext(ctx, `SELECT id, row_lock FROM issues WHERE status = 'open' AND (assignee IS NULL OR assignee = '')
ORDER BY priority, created_at, id LIMIT 1`).Scan(&id, &rowLock)
	p.mark("read")
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var b [24]byte
	_, _ = rand.Read(b[:])
	newLock := max(int64(binary.LittleEndian.Uint64(b[16:]))&math.MaxInt64, 1)
	now := time.Now().UTC()
	res, err := tx.ExecContext(ctx, `UPDATE issues
SET assignee = ?, status = 'in_progress', updated_at = ?, started_at = COALESCE(started_at, ?), row_lock = ?
WHERE id = ? AND row_lock = ? AND status = 'open'`, agent, now, now, newLock, id, rowLock)
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return "", fmt.Errorf("%s was taken meanwhile (%v)", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO leases (issue_id, holder, granted_at, lease_expires_at, heartbeat_at, granted_node)
VALUES (?, ?, ?, ?, ?, '')
ON DUPLICATE KEY UPDATE holder = VALUES(holder), granted_at = VALUES(granted_at),
  lease_expires_at = VALUES(lease_expires_at), heartbeat_at = VALUES(heartbeat_at), granted_node = VALUES(granted_node)`,
		id, agent, now, now.Add(5*time.Minute), now); err != nil {
		return "", err
	}
	eid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (id, issue_id, event_type, actor, old_value, new_value, comment, created_at)
VALUES (?, ?, 'claimed', ?, '', ?, NULL, ?)`, eid, id, agent, fmt.Sprintf(`{"assignee":%q,"status":"in_progress"}`, agent), now.Truncate(time.Second)); err != nil {
		return "", err
	}
	p.mark("write")
	if err := tx.Commit(); err != nil {
		return "", err
	}
	p.mark("commit")
	if _, err := conn.ExecContext(ctx, "CALL DOLT_ADD('issues')"); err != nil {
		return "", err
	}
	_, err = conn.ExecContext(ctx, "CALL DOLT_COMMIT('-m', ?, '--author', 'beads <beads@local>')", "bd: claim ready "+id)
	p.mark("dolt")
	return id, err
}
