package sqlite_test

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/sqlite"
)

// The statement cache runs every kind of query, in and out of a
// transaction, preparing each text once from its second run (a first run
// inside a transaction opens no other connection), and reports what cannot
// be prepared through the usual error paths.
func TestStmts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := open(t, newDB(t, "beads.db"), time.Second)
	stmts := sqlite.NewStmts(conn)
	defer stmts.Close()
	pool := stmts.On(nil)

	_, err := pool.ExecContext(ctx, "INSERT INTO config (key, value) VALUES (?, ?)", "a", "1")
	assert.NilError(t, err)
	first, err := pool.PrepareContext(ctx, "SELECT value FROM config WHERE key = ?")
	assert.NilError(t, err)
	again, err := pool.PrepareContext(ctx, "SELECT value FROM config WHERE key = ?")
	assert.NilError(t, err)
	assert.Assert(t, first == again, "a query is prepared once")

	for range 2 { // unprepared, then prepared
		rows, err := pool.QueryContext(ctx, "SELECT value FROM config WHERE key = ? AND 1", "a")
		assert.NilError(t, err)
		assert.Assert(t, rows.Next())
		assert.NilError(t, rows.Close())
	}

	tx, err := conn.BeginTx(ctx, nil)
	assert.NilError(t, err)
	in := stmts.On(tx)
	const insert = "INSERT INTO config (value, key) VALUES (?, ?)"
	_, err = in.ExecContext(ctx, insert, "2", "b")
	assert.NilError(t, err)
	assert.Equal(t, conn.Stats().OpenConnections, 1, "the first run of a text is not prepared on another connection")
	_, err = in.ExecContext(ctx, insert, "3", "c")
	assert.NilError(t, err)
	assert.Equal(t, conn.Stats().OpenConnections, 2, "the second run prepares it for the pool")
	assert.Equal(t, claimtest.Count(t, in, "SELECT count(*) FROM config WHERE key = ?", "b"), 1)
	assert.NilError(t, tx.Rollback())
	assert.Equal(t, claimtest.Count(t, pool, "SELECT count(*) FROM config WHERE key = ?", "b"), 0, "the insert was inside the rolled-back transaction")

	const bad = "SELECT nope FROM nowhere"
	var v string
	for range 2 { // unprepared, then failing to prepare
		_, err = pool.ExecContext(ctx, bad)
		assert.ErrorContains(t, err, "no such table: nowhere")
		_, err = pool.QueryContext(ctx, bad+" WHERE 1")
		assert.ErrorContains(t, err, "no such table: nowhere")
		assert.ErrorContains(t, pool.QueryRowContext(ctx, bad+" WHERE 2").Scan(&v), "no such table: nowhere")
	}
	tx, err = conn.BeginTx(ctx, nil)
	assert.NilError(t, err)
	assert.ErrorContains(t, stmts.On(tx).QueryRowContext(ctx, bad).Scan(&v), "no such table: nowhere")
	assert.NilError(t, tx.Rollback())
}
