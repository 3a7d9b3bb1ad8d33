package dolt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// BenchmarkDoltWaitSignal is what a waiting claim pays per pause on a Dolt
// workspace (1,000 issues, all held: nothing to claim), against a trivial
// round trip and the full look the signal spares. Needs `make dolt`:
//
//	go test -run '^$' -bench DoltWaitSignal -benchtime 2000x ./claim/dolt
func BenchmarkDoltWaitSignal(b *testing.B) {
	ctx := context.Background()
	w := claimtest.NeedDolt(b).Workspace(b, "bsig")
	pool := w.DB(b)
	values := make([]string, 1000)
	for i := range values {
		values[i] = fmt.Sprintf("('%s-h%d', 'held', '', '', '', '', %d, 'task', 'in_progress', 'holder', %d)", w.Prefix, i, i%5, i+1)
	}
	for _, stmt := range []string{
		"INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, status, assignee, row_lock) VALUES " + strings.Join(values, ", "),
		"CALL DOLT_COMMIT('-Am', 'bench issues')",
	} {
		if _, err := pool.ExecContext(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := pool.Conn(ctx) // one connection, as the wait holds one
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	s := doltStore(b, w, claim.Options{})
	q := doltdb.New()
	for _, bc := range []struct {
		name string
		op   func() error
	}{
		{"select-1", func() error { var one int; return conn.QueryRowContext(ctx, "SELECT 1").Scan(&one) }},
		{"working-set-hash", func() error { _, err := q.WorkingSetHash(ctx, conn); return err }},
		{"dry-run-look", func() error {
			res, err := s.Claim(ctx, claim.Request{Agent: "waiter", DryRun: true})
			if err == nil && res.Issue != nil {
				err = fmt.Errorf("found %s", res.Issue.ID)
			}
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				if err := bc.op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
