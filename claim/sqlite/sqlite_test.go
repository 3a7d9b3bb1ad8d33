package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/db"
)

// newDB creates a Beads database from the vendored schema in a temp dir.
func newDB(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	assert.NilError(t, sqlite.Create(context.Background(), path))
	return path
}

// open is sqlite.OpenDB with a cleanup.
func open(t *testing.T, path string, busy time.Duration) *sql.DB {
	t.Helper()
	conn := sqlite.OpenDB(path, busy)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestOpenNeverCreates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "beads.db")
	conn := open(t, path, time.Second)
	err := conn.Ping()
	assert.Equal(t, sqlite.Code(err), sqlite.CodeCantOpen, "%v", err)
	_, err = conn.Exec("CREATE TABLE x (y)")
	assert.Equal(t, sqlite.Code(err), sqlite.CodeCantOpen, "%v", err)
	assert.NilError(t, conn.Close())
	assert.Check(t, is.Len(claimtest.Names(t, dir), 0))
}

// File names that mean something in a URI still name the file.
func TestOpenPathsNeedingEscapes(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"with space.db", "what?mode=rwc.db", "hash#frag.db", "100%25 sure.db", "mixed ?#%&=+.db"} {
		t.Run(name, func(t *testing.T) {
			path := newDB(t, name)
			dir := filepath.Dir(path)
			assert.DeepEqual(t, claimtest.Names(t, dir), []string{name})
			conn := open(t, path, time.Second)
			assert.Assert(t, claimtest.Count(t, conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'issues'") == 1)
			_, err := db.New().IssueLabels(context.Background(), conn, "x")
			assert.NilError(t, err)
			assert.NilError(t, conn.Close())
			for _, n := range claimtest.Names(t, dir) {
				assert.Assert(t, strings.HasPrefix(n, name), "stray file %q beside %q", n, name)
			}
		})
	}
}

func TestCode(t *testing.T) {
	t.Parallel()
	assert.Equal(t, sqlite.Code(nil), 0)
	assert.Equal(t, sqlite.Code(errors.New("not sqlite")), 0)
	assert.Assert(t, !sqlite.IsBusy(nil))
	assert.Assert(t, !sqlite.IsBusy(errors.New("database is locked")), "the text alone does not make an error busy")
	assert.Assert(t, !sqlite.IsBusy(context.Canceled))

	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	_, err := conn.Exec("SELECT * FROM nope")
	assert.Equal(t, sqlite.Code(err), 1) // SQLITE_ERROR
	assert.Assert(t, !sqlite.IsBusy(err))
	_, err = conn.Exec("INSERT INTO metadata (key, value) VALUES ('k', NULL)")
	assert.Equal(t, sqlite.Code(err), 19, "%v", err) // SQLITE_CONSTRAINT: the primary code of SQLITE_CONSTRAINT_NOTNULL
	assert.Equal(t, sqlite.Code(fmt.Errorf("wrapped: %w", err)), 19)
}

// A real SQLITE_BUSY: another connection holds BEGIN IMMEDIATE.
func TestIsBusy(t *testing.T) {
	ctx := context.Background()
	path := newDB(t, "beads.db")
	holder := open(t, path, time.Second)
	lock, err := holder.BeginTx(ctx, nil)
	assert.NilError(t, err)
	defer lock.Rollback()

	waiter := open(t, path, 20*time.Millisecond)
	start := time.Now()
	_, err = waiter.BeginTx(ctx, nil)
	assert.Assert(t, time.Since(start) >= 20*time.Millisecond, "busy_timeout was not applied")
	assert.Equal(t, sqlite.Code(err), sqlite.CodeBusy, "%v", err)
	assert.Assert(t, sqlite.IsBusy(err))
	assert.Assert(t, sqlite.IsBusy(fmt.Errorf("claim: %w", err)))

	// A reader is not blocked by the writer (WAL), and a read does not
	// take the lock.
	assert.Equal(t, claimtest.Count(t, waiter, "SELECT count(*) FROM issues"), 0)
}

// A real SQLITE_LOCKED: a table dropped while the same connection reads it.
func TestIsBusyLocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	_, err := conn.Exec("INSERT INTO metadata (key, value) VALUES ('a', '1'), ('b', '2')")
	assert.NilError(t, err)
	c, err := conn.Conn(ctx)
	assert.NilError(t, err)
	defer c.Close()
	rows, err := c.QueryContext(ctx, "SELECT key FROM metadata")
	assert.NilError(t, err)
	assert.Assert(t, rows.Next())
	_, err = c.ExecContext(ctx, "DROP TABLE config")
	assert.NilError(t, rows.Close())
	assert.Equal(t, sqlite.Code(err), sqlite.CodeLocked, "%v", err)
	assert.Assert(t, sqlite.IsBusy(err))
}

func TestTxCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	calls := 0
	err := sqlite.Tx(ctx, conn, engine.Retry{Attempts: 3}, func(tx *sql.Tx) error {
		calls++
		return db.New().SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "k", Value: "v"})
	})
	assert.NilError(t, err)
	assert.Equal(t, calls, 1)
	other := open(t, path, time.Second)
	var v string
	assert.NilError(t, other.QueryRow("SELECT value FROM metadata WHERE key = 'k'").Scan(&v))
	assert.Equal(t, v, "v")
}

func TestTxRollsBackOnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	stop := errors.New("stop here")
	calls := 0
	err := sqlite.Tx(ctx, conn, engine.Retry{Attempts: 3, Backoff: time.Millisecond}, func(tx *sql.Tx) error {
		calls++
		q := db.New()
		assert.NilError(t, q.SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "first", Value: "1"}))
		assert.NilError(t, q.SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "second", Value: "2"}))
		return stop
	})
	assert.Assert(t, errors.Is(err, stop))
	assert.Equal(t, calls, 1, "an error that is not busy is not retried")
	assert.Equal(t, claimtest.Count(t, open(t, path, time.Second), "SELECT count(*) FROM metadata"), 0)
	// The connection is usable again: the rollback released the lock.
	assert.NilError(t, sqlite.Tx(ctx, conn, engine.Retry{Attempts: 1}, func(tx *sql.Tx) error {
		return db.New().SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "after", Value: "1"})
	}))
}

// A panic inside the transaction rolls it back (nothing written, the write
// lock released) and goes on up to the caller.
func TestTxPanicRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	conn := open(t, path, 100*time.Millisecond)
	func() {
		defer func() { assert.Equal(t, recover(), "boom") }()
		_ = sqlite.Tx(ctx, conn, engine.Retry{Attempts: 1}, func(tx *sql.Tx) error {
			assert.NilError(t, db.New().SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "half", Value: "1"}))
			panic("boom")
		})
	}()
	assert.Equal(t, claimtest.Count(t, open(t, path, time.Second), "SELECT count(*) FROM metadata"), 0)
	assert.NilError(t, sqlite.Tx(ctx, open(t, path, 100*time.Millisecond), engine.Retry{Attempts: 1}, func(tx *sql.Tx) error {
		return db.New().SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "after", Value: "1"})
	}), "another connection can write: the lock was released")
}

// A COMMIT that fails is an error that says so (engine.ErrCommit, which
// the Dolt engine looks for when a COMMIT's answer is lost), and nothing
// lands: here a deferred foreign key that is still violated at commit time.
func TestTxCommitFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	_, err := conn.Exec(`CREATE TABLE parent (id TEXT PRIMARY KEY);
		CREATE TABLE child (parent_id TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`)
	assert.NilError(t, err)
	err = sqlite.Tx(ctx, conn, engine.Retry{Attempts: 3, Backoff: time.Millisecond}, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO child (parent_id) VALUES ('none')")
		return err
	})
	assert.ErrorContains(t, err, "commit: ")
	assert.ErrorIs(t, err, engine.ErrCommit)
	assert.ErrorContains(t, err, "FOREIGN KEY constraint failed")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM child"), 0)
}

// lockedDB is a database whose write lock another connection holds, and a
// deferred-transaction handle on it whose first write inside fn gets
// SQLITE_BUSY after a 1ms busy timeout. release gives the lock back.
func lockedDB(t *testing.T) (conn *sql.DB, write func(*sql.Tx) error, release func()) {
	t.Helper()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	holder := open(t, path, time.Second)
	lock, err := holder.BeginTx(ctx, nil)
	assert.NilError(t, err)
	t.Cleanup(func() { lock.Rollback() })
	// Not sqlite.OpenDB: a DEFERRED BEGIN succeeds, so fn runs and its write is
	// the statement that meets the lock.
	conn, err = sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(1)")
	assert.NilError(t, err)
	t.Cleanup(func() { conn.Close() })
	write = func(tx *sql.Tx) error {
		return db.New().SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "k", Value: "v"})
	}
	return conn, write, func() { assert.NilError(t, lock.Rollback()) }
}

func TestTxRetriesBusyUpToAttempts(t *testing.T) {
	for _, attempts := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(attempts), func(t *testing.T) {
			conn, write, _ := lockedDB(t)
			calls := 0
			err := sqlite.Tx(context.Background(), conn, engine.Retry{Attempts: attempts, Backoff: time.Millisecond}, func(tx *sql.Tx) error {
				calls++
				return write(tx)
			})
			assert.Assert(t, sqlite.IsBusy(err), "%v", err)
			assert.Equal(t, sqlite.Code(err), sqlite.CodeBusy)
			assert.Equal(t, calls, attempts)
		})
	}
}

func TestTxRetrySucceedsOnceTheLockIsGone(t *testing.T) {
	conn, write, release := lockedDB(t)
	calls := 0
	err := sqlite.Tx(context.Background(), conn, engine.Retry{Attempts: 5, Backoff: time.Millisecond}, func(tx *sql.Tx) error {
		calls++
		err := write(tx)
		if calls == 2 {
			assert.Assert(t, sqlite.IsBusy(err))
			release()
		}
		return err
	})
	assert.NilError(t, err)
	assert.Equal(t, calls, 3)
	var v string
	assert.NilError(t, conn.QueryRow("SELECT value FROM metadata WHERE key = 'k'").Scan(&v))
	assert.Equal(t, v, "v")
}

// The pause between tries doubles, with ±50% jitter: with a 20ms backoff,
// five busy tries pause 20, 40, 80 and 160ms (±50%), at least 150ms in all,
// where a constant pause could not exceed 4 × 30ms.
func TestTxBackoffWaits(t *testing.T) {
	conn, write, _ := lockedDB(t)
	start := time.Now()
	err := sqlite.Tx(context.Background(), conn, engine.Retry{Attempts: 5, Backoff: 20 * time.Millisecond}, write)
	elapsed := time.Since(start)
	assert.Assert(t, sqlite.IsBusy(err))
	assert.Assert(t, elapsed >= 150*time.Millisecond, "waited only %s", elapsed)
	assert.Assert(t, elapsed < 3*time.Second, "waited %s", elapsed)
}

func TestTxStopsRetryingWhenCancelled(t *testing.T) {
	conn, write, _ := lockedDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	start := time.Now()
	err := sqlite.Tx(ctx, conn, engine.Retry{Attempts: 10, Backoff: time.Hour}, func(tx *sql.Tx) error {
		calls.Add(1)
		err := write(tx)
		// Cancel once Tx is pausing before the next try.
		time.AfterFunc(20*time.Millisecond, cancel)
		return err
	})
	assert.Assert(t, sqlite.IsBusy(err), "the last busy error is returned: %v", err)
	assert.Equal(t, calls.Load(), int32(1))
	assert.Assert(t, time.Since(start) < 10*time.Second)
}

func TestTxBeginFails(t *testing.T) {
	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := sqlite.Tx(ctx, conn, engine.Retry{Attempts: 3, Backoff: time.Millisecond}, func(*sql.Tx) error { called = true; return nil })
	assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Assert(t, !called)

	// A busy BEGIN IMMEDIATE is retried too, without ever calling fn.
	holder := open(t, path, time.Second)
	lock, err := holder.BeginTx(context.Background(), nil)
	assert.NilError(t, err)
	defer lock.Rollback()
	busy := open(t, path, time.Millisecond)
	start := time.Now()
	err = sqlite.Tx(context.Background(), busy, engine.Retry{Attempts: 3, Backoff: 20 * time.Millisecond}, func(*sql.Tx) error { called = true; return nil })
	assert.Assert(t, sqlite.IsBusy(err), "%v", err)
	assert.Assert(t, !called)
	assert.Assert(t, time.Since(start) >= 30*time.Millisecond, "no pause between busy BEGINs")
}

func TestCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newDB(t, "beads.db")
	conn := open(t, path, time.Second)
	var mode string
	assert.NilError(t, conn.QueryRow("PRAGMA journal_mode").Scan(&mode))
	assert.Equal(t, mode, "wal")
	tables := claimtest.Strings(t, conn, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	for _, want := range []string{"issues", "labels", "dependencies", "blocked_issues_cache", "events", "dirty_issues", "metadata", "config"} {
		assert.Check(t, slices.Contains(tables, want), "no table %s in %v", want, tables)
	}
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues"), 0)
	var ok string
	assert.NilError(t, conn.QueryRow("PRAGMA integrity_check").Scan(&ok))
	assert.Equal(t, ok, "ok")
	assert.NilError(t, conn.Close())

	before := claimtest.FileSum(t, path)
	err := sqlite.Create(ctx, path)
	assert.ErrorContains(t, err, path+" already holds a database")
	assert.Equal(t, claimtest.FileSum(t, path), before, "a refused Create wrote to the database")

	// Any existing schema counts, not only Beads'.
	other := filepath.Join(t.TempDir(), "other.db")
	c, err := sql.Open("sqlite", "file:"+other)
	assert.NilError(t, err)
	_, err = c.Exec("CREATE TABLE mine (x)")
	assert.NilError(t, err)
	assert.NilError(t, c.Close())
	assert.ErrorContains(t, sqlite.Create(ctx, other), "already holds a database")

	// An empty file is an empty database: Create fills it.
	empty := filepath.Join(t.TempDir(), "empty.db")
	assert.NilError(t, os.WriteFile(empty, nil, 0o644))
	assert.NilError(t, sqlite.Create(ctx, empty))
	assert.Equal(t, claimtest.Count(t, open(t, empty, time.Second), "SELECT count(*) FROM sqlite_schema WHERE name = 'issues'"), 1)
}

func TestCreateFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.db")
	assert.NilError(t, os.WriteFile(text, []byte("not a database, just some text that is long enough to be a header......................................"), 0o644))
	before := claimtest.FileSum(t, text)
	err := sqlite.Create(ctx, text)
	assert.Equal(t, sqlite.Code(err), sqlite.CodeNotADB, "%v", err)
	assert.Equal(t, claimtest.FileSum(t, text), before)

	err = sqlite.Create(ctx, filepath.Join(dir, "missing", "beads.db"))
	assert.Equal(t, sqlite.Code(err), sqlite.CodeCantOpen, "%v", err)
	assert.DeepEqual(t, claimtest.Names(t, dir), []string{"notes.db"})

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = sqlite.Create(cancelled, filepath.Join(dir, "new.db"))
	assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
}

// The generated queries against the vendored schema: each does what its
// comment says.
func TestQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := open(t, newDB(t, "beads.db"), time.Second)
	q := db.New()
	ts := "2025-01-02T03:04:05Z"
	for _, id := range []string{"t-1", "t-2"} {
		assert.NilError(t, q.SeedIssueInsert(ctx, conn, db.SeedIssueInsertParams{ID: id, Title: "T " + id, Status: "open",
			Priority: 1, IssueType: "task", Assignee: sql.NullString{String: "", Valid: true}, CreatedAt: ts, UpdatedAt: ts}))
	}
	for _, l := range []string{"zeta", "alpha", "mid"} {
		assert.NilError(t, q.SeedLabelInsert(ctx, conn, db.SeedLabelInsertParams{IssueID: "t-1", Label: l}))
	}
	assert.NilError(t, q.SeedDependencyInsert(ctx, conn, db.SeedDependencyInsertParams{IssueID: "t-2", DependsOnID: "t-1", Type: "blocks", CreatedBy: "me"}))
	assert.NilError(t, q.SeedBlockedInsert(ctx, conn, "t-2"))

	labels, err := q.IssueLabels(ctx, conn, "t-1")
	assert.NilError(t, err)
	assert.Equal(t, labels, `["alpha","mid","zeta"]`)
	labels, err = q.IssueLabels(ctx, conn, "t-2")
	assert.NilError(t, err)
	assert.Equal(t, labels, `[]`)

	setHolder := func(id, status, assignee, oldStatus, oldAssignee string) int64 {
		t.Helper()
		n, err := q.IssueHolderSet(ctx, conn, db.IssueHolderSetParams{Status: status, Assignee: assignee, UpdatedAt: "2025-02-01T00:00:00Z",
			ContentHash: sql.NullString{String: "h-" + assignee, Valid: true}, ID: id, OldStatus: oldStatus, OldAssignee: oldAssignee})
		assert.NilError(t, err)
		return n
	}
	assert.Equal(t, setHolder("t-1", "in_progress", "ann", "open", ""), int64(1))
	assert.Equal(t, setHolder("t-1", "in_progress", "bob", "open", ""), int64(0), "compare-and-swap: no longer open")
	assert.Equal(t, setHolder("t-404", "in_progress", "ann", "open", ""), int64(0))
	var status, assignee string
	assert.NilError(t, conn.QueryRow("SELECT status, assignee FROM issues WHERE id = 't-1'").Scan(&status, &assignee))
	assert.Equal(t, status+" "+assignee, "in_progress ann")
	_, err = conn.Exec("UPDATE issues SET assignee = NULL WHERE id = 't-2'")
	assert.NilError(t, err)
	assert.Equal(t, setHolder("t-2", "in_progress", "dan", "open", "cid"), int64(0), "compare-and-swap: the assignee changed")
	assert.Equal(t, setHolder("t-2", "in_progress", "cid", "open", ""), int64(1), "a NULL assignee compares as ''")
	n, err := q.IssueHeldCount(ctx, conn, "cid")
	assert.NilError(t, err)
	assert.Equal(t, n, int64(1))
	n, err = q.IssueTouch(ctx, conn, db.IssueTouchParams{UpdatedAt: "2025-03-01T00:00:00Z", ID: "t-2"})
	assert.NilError(t, err)
	assert.Equal(t, n, int64(1))

	id, err := q.EventInsert(ctx, conn, db.EventInsertParams{IssueID: "t-1", EventType: "claimed", Actor: "ann",
		OldValue: sql.NullString{String: "{}", Valid: true}, NewValue: sql.NullString{String: `{"status":"in_progress"}`, Valid: true},
		CreatedAt: "2025-02-01 00:00:00"})
	assert.NilError(t, err)
	n, err = q.EventCommentSet(ctx, conn, db.EventCommentSetParams{ID: id, Comment: sql.NullString{String: "c", Valid: true}})
	assert.NilError(t, err)
	assert.Equal(t, n, int64(1))
	var comment string
	assert.NilError(t, conn.QueryRow("SELECT comment FROM events WHERE id = ?", id).Scan(&comment))
	assert.Equal(t, comment, "c")

	for _, c := range []string{"bd-claim failed: a", "bd-claim failed: b"} {
		_, err = q.EventInsert(ctx, conn, db.EventInsertParams{IssueID: "t-1", EventType: "status_changed", Actor: "ann",
			Comment: sql.NullString{String: c, Valid: true}, CreatedAt: "2025-02-02 00:00:00"})
		assert.NilError(t, err)
	}
	counts, err := q.EventCountsSince(ctx, conn, db.EventCountsSinceParams{Since: "2025-02-01 00:00:00",
		Released: "bd-claim released: %", Failed: "bd-claim failed: %", Expired: "bd-claim expired: %"})
	assert.NilError(t, err)
	assert.Equal(t, counts, db.EventCountsSinceRow{Claims: 1, Failures: 2})
	n, err = q.LabelAdd(ctx, conn, db.LabelAddParams{IssueID: "t-1", Label: "alpha"})
	assert.NilError(t, err)
	assert.Equal(t, n, int64(0), "already there")
	n, err = q.LabelRemove(ctx, conn, db.LabelRemoveParams{IssueID: "t-1", Label: "alpha"})
	assert.NilError(t, err)
	assert.Equal(t, n, int64(1))
	assert.NilError(t, q.CommentInsert(ctx, conn, db.CommentInsertParams{IssueID: "t-1", Author: "ann", Text: "hi", CreatedAt: "2025-02-01 00:00:00"}))

	assert.NilError(t, q.DirtyIssueMark(ctx, conn, db.DirtyIssueMarkParams{IssueID: "t-1", MarkedAt: "one"}))
	assert.NilError(t, q.DirtyIssueMark(ctx, conn, db.DirtyIssueMarkParams{IssueID: "t-1", MarkedAt: "two"}))
	var marked string
	assert.NilError(t, conn.QueryRow("SELECT marked_at FROM dirty_issues WHERE issue_id = 't-1'").Scan(&marked))
	assert.Equal(t, marked, "two")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dirty_issues"), 1)

	assert.NilError(t, q.SeedMetadataSet(ctx, conn, db.SeedMetadataSetParams{Key: "bd_version", Value: "0.1.0"}))
	assert.NilError(t, q.SeedMetadataSet(ctx, conn, db.SeedMetadataSetParams{Key: "bd_version", Value: "0.49.6"}))
	set, err := q.SchemaSettings(ctx, conn)
	assert.NilError(t, err)
	assert.DeepEqual(t, set, db.SchemaSettingsRow{BdVersion: "0.49.6", CreatedAtIndex: 1}) // the vendored schema's idx_issues_created_at
	_, err = conn.Exec("INSERT INTO config (key, value) VALUES ('ready.exclude_id_patterns', '-x-')")
	assert.NilError(t, err)
	set, err = q.SchemaSettings(ctx, conn)
	assert.NilError(t, err)
	assert.DeepEqual(t, set, db.SchemaSettingsRow{BdVersion: "0.49.6", ExcludeIDPatterns: "-x-", CreatedAtIndex: 1})
	_, err = conn.Exec("DROP INDEX idx_issues_created_at")
	assert.NilError(t, err)
	set, err = q.SchemaSettings(ctx, conn)
	assert.NilError(t, err)
	assert.Equal(t, set.CreatedAtIndex, int64(0))

	cols, err := q.SchemaColumns(ctx, conn)
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(","+cols+",", ",labels.issue_id,labels.label,"), cols)
	assert.Assert(t, strings.HasPrefix(cols, "issues.id,issues.content_hash,"), cols)
}

// A zero or negative backoff still pauses (at least 1ms) instead of panicking.
func TestTxNonPositiveBackoff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	assert.NilError(t, sqlite.Create(context.Background(), path))
	holder := sqlite.OpenDB(path, time.Second)
	defer holder.Close()
	tx, err := holder.Begin()
	assert.NilError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec("INSERT INTO config (key, value) VALUES ('k', 'v')")
	assert.NilError(t, err)
	conn := sqlite.OpenDB(path, -1)
	defer conn.Close()
	calls := 0
	err = sqlite.Tx(context.Background(), conn, engine.Retry{Attempts: 3, Backoff: -time.Second}, func(*sql.Tx) error { calls++; return nil })
	assert.Assert(t, sqlite.IsBusy(err), "%v", err)
	assert.Equal(t, calls, 0) // BEGIN IMMEDIATE itself was busy
}
