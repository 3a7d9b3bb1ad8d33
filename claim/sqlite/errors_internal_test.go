package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
)

// openMustFail opens path expecting an error with code and message parts,
// and checks that the file is byte-identical afterwards.
func openMustFail(t *testing.T, path string, code claim.Code, msg ...string) {
	t.Helper()
	before := claimtest.FileSum(t, path)
	s, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
	assert.Assert(t, s == nil)
	assert.Equal(t, claim.ErrorCode(err), code, "%v", err)
	for _, m := range msg {
		assert.ErrorContains(t, err, m)
	}
	assert.Equal(t, claimtest.FileSum(t, path), before, "Open changed %s", path)
}

// exec runs statements on a database outside the code under test.
func exec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	conn := claimtest.Open(t, path)
	for _, s := range stmts {
		_, err := conn.Exec(s)
		assert.NilError(t, err, s)
	}
	assert.NilError(t, conn.Close())
}

// minimalColumns is a hand-written Beads schema reduced to the columns a
// claim needs, in the order they are created. Constraints are left out on
// purpose, so a test can store values bd never would.
var minimalColumns = []struct{ table, cols string }{
	{"issues", "id TEXT PRIMARY KEY, content_hash TEXT, title TEXT, description TEXT DEFAULT '', design TEXT DEFAULT '', " +
		"acceptance_criteria TEXT DEFAULT '', notes TEXT DEFAULT '', status TEXT, priority INTEGER DEFAULT 2, " +
		"issue_type TEXT DEFAULT 'task', assignee TEXT, created_at DATETIME, updated_at DATETIME, external_ref TEXT"},
	{"labels", "issue_id TEXT, label TEXT"},
	{"dependencies", "issue_id TEXT, depends_on_id TEXT, type TEXT"},
	{"blocked_issues_cache", "issue_id TEXT"},
	{"events", "id INTEGER PRIMARY KEY AUTOINCREMENT, issue_id TEXT, event_type TEXT, actor TEXT, old_value TEXT, " +
		"new_value TEXT, comment TEXT, created_at DATETIME DEFAULT CURRENT_TIMESTAMP"},
	{"comments", "issue_id TEXT, author TEXT, text TEXT, created_at DATETIME"},
	{"dirty_issues", "issue_id TEXT PRIMARY KEY, marked_at DATETIME"},
	{"metadata", "key TEXT PRIMARY KEY, value TEXT"},
	{"config", "key TEXT PRIMARY KEY, value TEXT"},
}

// minimalDB creates a database with the minimal schema, without column
// omit of table (both "" to keep everything), with bd_version version (""
// for none), and one open issue mini-1.
func minimalDB(t *testing.T, table, omit, version string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "beads.db")
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=rwc")
	assert.NilError(t, err)
	defer conn.Close()
	for _, tc := range minimalColumns {
		var cols []string
		for _, c := range strings.Split(tc.cols, ", ") {
			if tc.table != table || strings.Fields(c)[0] != omit {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			cols = []string{"unrelated TEXT"}
		}
		_, err := conn.Exec(fmt.Sprintf("CREATE TABLE %s (%s)", tc.table, strings.Join(cols, ", ")))
		assert.NilError(t, err)
	}
	if version != "" && table != "metadata" {
		_, err = conn.Exec("INSERT INTO metadata (key, value) VALUES ('bd_version', ?)", version)
		assert.NilError(t, err)
	}
	if table != "issues" {
		_, err = conn.Exec(`INSERT INTO issues (id, title, status, created_at, updated_at)
			VALUES ('mini-1', 'Minimal', 'open', '2025-01-02T03:04:05Z', '2025-01-02T03:04:05Z')`)
		assert.NilError(t, err)
	}
	return path
}

// The minimal schema is enough: a bd v0.27 database reduced to the columns
// a claim needs opens and claims. This is the control for the next test.
func TestMinimalSchemaClaims(t *testing.T) {
	t.Parallel()
	path := minimalDB(t, "", "", "0.27.2")
	s, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "mini"}))
	assert.NilError(t, err)
	assert.Equal(t, iss.ID, "mini-1")
	assert.Equal(t, iss.Status, "in_progress")
}

// Every column a claim reads or writes is required: without any one of them
// the database is SCHEMA_INCOMPATIBLE and left untouched.
func TestOpenRefusesMissingColumn(t *testing.T) {
	t.Parallel()
	for _, tc := range minimalColumns {
		for _, c := range strings.Split(tc.cols, ", ") {
			col := strings.Fields(c)[0]
			if tc.table == "events" && col == "id" {
				continue // events.id is bd's, never read by a claim
			}
			t.Run(tc.table+"."+col, func(t *testing.T) {
				t.Parallel()
				path := minimalDB(t, tc.table, col, "0.27.2")
				openMustFail(t, path, claim.ESchema, fmt.Sprintf("table %s has no column %s", tc.table, col))
			})
		}
	}
	t.Run("no config table", func(t *testing.T) {
		path := minimalDB(t, "", "", "0.27.2")
		exec(t, path, "DROP TABLE config")
		openMustFail(t, path, claim.ESchema, "there is no config table")
	})
}

func TestOpenRefusesBadFiles(t *testing.T) {
	t.Parallel()
	fixtureDB := claimtest.DBPath(claimtest.Fixture(t, "0.49.6"))
	full, err := os.ReadFile(fixtureDB)
	assert.NilError(t, err)
	for _, tc := range []struct {
		name    string
		content []byte
		code    claim.Code
		msg     []string
	}{
		{"text", []byte("this is not a database\n"), claim.ESchema, []string{"could not read the schema: the file is not a SQLite database", "file is not a database"}},
		{"garbage header", append([]byte("SQLite format 3\x00"), make([]byte, 200)...), claim.ESchema, []string{"could not read the schema"}},
		{"empty file", nil, claim.ESchema, []string{"there is no issues table", "not a Beads SQLite database"}},
		// SQLite reports a cut database as corrupt (SQLITE_CORRUPT), not NOTADB.
		{"truncated to 8 KiB", full[:8192], claim.ESchema, []string{"the database file is corrupt", "database disk image is malformed"}},
		{"truncated to one page", full[:4096], claim.ESchema, []string{"the database file is corrupt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "beads.db")
			assert.NilError(t, os.WriteFile(path, tc.content, 0o644))
			openMustFail(t, path, tc.code, tc.msg...)
			assert.DeepEqual(t, claimtest.Names(t, dir), []string{"beads.db"})
		})
	}
	t.Run("missing file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "beads.db")
		_, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
		assert.Equal(t, claim.ErrorCode(err), claim.EDBNotFound, "%v", err)
		assert.ErrorContains(t, err, "the database cannot be opened")
		created := claimtest.Names(t, dir)
		assert.Equal(t, len(created), 0, "Open created %v", created)
	})
}

// Databases bd-claim cannot write faithfully: beads_rust's cache, an
// unknown, too old or too new bd version.
func TestOpenRefusesIncompatibleDatabases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stmts []string
		msg   []string
	}{
		{"beads_rust blocked cache", []string{
			"DROP TABLE blocked_issues_cache",
			"CREATE TABLE blocked_issues_cache (issue_id TEXT NOT NULL, blocked_by TEXT NOT NULL, blocked_at DATETIME)",
		}, []string{"beads_rust (br)", "open it with bd first"}},
		{"no bd_version", []string{"DELETE FROM metadata WHERE key = 'bd_version'"}, []string{`metadata.bd_version is ""`}},
		{"garbage bd_version", []string{"UPDATE metadata SET value = 'latest' WHERE key = 'bd_version'"}, []string{`metadata.bd_version is "latest"`}},
		{"too old", []string{"UPDATE metadata SET value = '0.20.0' WHERE key = 'bd_version'"}, []string{"bd 0.20.0 wrote this database", "bd 0.27.0 to 0.50.x"}},
		{"just too old", []string{"UPDATE metadata SET value = '0.26.9' WHERE key = 'bd_version'"}, []string{"bd 0.26.9 wrote"}},
		{"too new", []string{"UPDATE metadata SET value = '0.51.0' WHERE key = 'bd_version'"}, []string{"bd 0.51.0 wrote this database"}},
		{"much newer", []string{"UPDATE metadata SET value = 'v1.0.0' WHERE key = 'bd_version'"}, []string{"bd 1.0.0 wrote"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := claimtest.DBPath(claimtest.Fixture(t, "0.49.6"))
			exec(t, path, append(tc.stmts, "PRAGMA wal_checkpoint(TRUNCATE)")...)
			openMustFail(t, path, claim.ESchema, tc.msg...)
		})
	}
}

// The supported range is inclusive at both ends.
func TestOpenAcceptsVersionBounds(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0.27.0", "0.50.3", "v0.50.99-dev", "0.49.6 (abc123)"} {
		path := claimtest.DBPath(claimtest.Fixture(t, "0.49.6"))
		exec(t, path, fmt.Sprintf("UPDATE metadata SET value = '%s' WHERE key = 'bd_version'", v))
		s, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
		assert.NilError(t, err, v)
		want, _ := claim.ParseVersion(v)
		assert.Equal(t, engineOf(s).flavor.Version, want)
		assert.NilError(t, s.Close())
	}
}

// A NULL bd_version is no version; a NULL id-pattern setting is unset. A
// metadata table bd-claim cannot read is UNEXPECTED, with SQLite's reason.
func TestOpenUnreadableMetadataAndConfig(t *testing.T) {
	t.Parallel()
	path := minimalDB(t, "", "", "")
	exec(t, path, "INSERT INTO metadata (key, value) VALUES ('bd_version', NULL)")
	openMustFail(t, path, claim.ESchema, `metadata.bd_version is ""`)

	path = minimalDB(t, "", "", "0.49.0")
	exec(t, path, "INSERT INTO config (key, value) VALUES ('ready.exclude_id_patterns', NULL)")
	s, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
	assert.NilError(t, err)
	assert.DeepEqual(t, engineOf(s).flavor.idPatterns, []string{"-mol-", "-wisp-"})
	s.Close()

	path = minimalDB(t, "", "", "")
	exec(t, path, "DROP TABLE metadata")
	exec(t, path, "CREATE VIEW metadata AS SELECT 'bd_version' AS key, json_extract('not json', '$') AS value")
	openMustFail(t, path, claim.EUnexpected, "could not read bd's metadata", "malformed JSON")
}

// excludeIDPatterns follows bd's versions and config rules.
func TestExcludeIDPatterns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v, configured string
		want          []string
	}{
		{"0.27.2", "-foo-", nil},
		{"0.47.1", "", nil},
		{"0.47.1", "-foo-", nil},
		{"0.47.2", "", []string{"-wisp-"}},
		{"0.48.9", " , ", []string{"-wisp-"}},
		{"0.48.0", "-foo-", []string{"-foo-"}},
		{"0.49.0", "", []string{"-mol-", "-wisp-"}},
		{"0.49.6", "-foo-, ,-bar-", []string{"-foo-", "-bar-"}},
		{"0.50.1", " x ", []string{"x"}},
	} {
		v, ok := claim.ParseVersion(tc.v)
		assert.Assert(t, ok)
		assert.DeepEqual(t, excludeIDPatterns(v, tc.configured), tc.want)
	}
}

// ready.exclude_id_patterns changes which ids are claimable, end to end.
func TestExcludeIDPatternsDecideClaims(t *testing.T) {
	t.Parallel()
	ids := []string{"fx-foo-1", "fx-bar-1", "fx-wisp-1", "fx-mol-1"}
	for _, tc := range []struct {
		fixture, version, config string // version "" keeps the fixture's
		excluded                 []string
	}{
		{"0.49.6", "", "", []string{"fx-wisp-1", "fx-mol-1"}},
		{"0.49.6", "", "-foo-, ,-bar-", []string{"fx-foo-1", "fx-bar-1"}},
		{"0.49.6", "", " , ", []string{"fx-wisp-1", "fx-mol-1"}},
		{"0.47.1", "", "-foo-", nil},
		{"0.47.1", "0.48.2", "", []string{"fx-wisp-1"}},
		{"0.47.1", "0.48.2", "-bar-", []string{"fx-bar-1"}},
	} {
		t.Run(tc.fixture+"/"+tc.version+"/"+tc.config, func(t *testing.T) {
			path := claimtest.DBPath(claimtest.Fixture(t, tc.fixture))
			var stmts []string
			for _, id := range ids {
				stmts = append(stmts, fmt.Sprintf(`INSERT INTO issues (id, title, priority, created_at, updated_at)
					VALUES ('%s', 'pattern %s', 0, '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')`, id, id))
			}
			if tc.version != "" {
				stmts = append(stmts, fmt.Sprintf("UPDATE metadata SET value = '%s' WHERE key = 'bd_version'", tc.version))
			}
			if tc.config != "" {
				stmts = append(stmts, fmt.Sprintf("INSERT INTO config (key, value) VALUES ('ready.exclude_id_patterns', '%s')", tc.config))
			}
			exec(t, path, stmts...)
			s, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
			assert.NilError(t, err)
			defer s.Close()
			for _, id := range ids {
				iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "p", ID: id, DryRun: true}))
				if slices.Contains(tc.excluded, id) {
					assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "%s: %v", id, err)
					assert.ErrorContains(t, err, "(ready.exclude_id_patterns)")
					continue
				}
				assert.NilError(t, err, id)
				assert.Equal(t, iss.ID, id)
			}
		})
	}
}

// sqliteErrors produces a real driver error for each result code classify
// tells apart.
func sqliteErrors(t *testing.T) map[int]error {
	t.Helper()
	ctx := context.Background()
	out := map[int]error{}

	// SQLITE_BUSY: another connection holds the write lock.
	path := claimtest.DBPath(claimtest.Fixture(t, "0.49.6"))
	holder := OpenDB(path, time.Second)
	defer holder.Close()
	lock, err := holder.BeginTx(ctx, nil)
	assert.NilError(t, err)
	defer lock.Rollback()
	waiter := OpenDB(path, time.Millisecond)
	defer waiter.Close()
	_, err = waiter.BeginTx(ctx, nil)
	out[CodeBusy] = err

	// SQLITE_LOCKED: a table dropped while a statement on the same
	// connection still reads it.
	path = claimtest.DBPath(claimtest.Fixture(t, "0.47.1"))
	conn := OpenDB(path, time.Second)
	defer conn.Close()
	c, err := conn.Conn(ctx)
	assert.NilError(t, err)
	rows, err := c.QueryContext(ctx, "SELECT id FROM issues")
	assert.NilError(t, err)
	assert.Assert(t, rows.Next())
	_, out[CodeLocked] = c.ExecContext(ctx, "DROP TABLE labels")
	assert.NilError(t, rows.Close())
	assert.NilError(t, c.Close())

	query := func(content []byte) error {
		p := filepath.Join(t.TempDir(), "x.db")
		if content != nil {
			assert.NilError(t, os.WriteFile(p, content, 0o644))
		}
		conn := OpenDB(p, time.Second)
		defer conn.Close()
		var n int
		return conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n)
	}
	out[CodeNotADB] = query([]byte("plain text, long enough to be read as a header of a database file.........................................."))
	full, err := os.ReadFile(claimtest.DBPath(claimtest.Fixture(t, "0.27.2")))
	assert.NilError(t, err)
	out[CodeCorrupt] = query(full[:8192])
	out[CodeCantOpen] = query(nil)

	// SQLITE_ERROR, a code classify does not single out.
	conn2 := OpenDB(claimtest.DBPath(claimtest.Fixture(t, "0.27.2")), time.Second)
	defer conn2.Close()
	_, out[1] = conn2.ExecContext(ctx, "SELECT * FROM no_such_table")
	return out
}

func TestClassify(t *testing.T) {
	errs := sqliteErrors(t)
	for code, want := range map[int]struct {
		code claim.Code
		msg  string
	}{
		CodeBusy:     {claim.EBusy, "could not do it: the database stayed locked by another writer; retry later or raise --timeout-ms"},
		CodeLocked:   {claim.EBusy, "could not do it: the database stayed locked"},
		CodeNotADB:   {claim.ESchema, "could not do it: the file is not a SQLite database"},
		CodeCorrupt:  {claim.ESchema, "could not do it: the database file is corrupt; restore it or rebuild it with bd from issues.jsonl"},
		CodeCantOpen: {claim.EDBNotFound, "could not do it: the database cannot be opened"},
		1:            {claim.EUnexpected, "could not do it: SQL logic error: no such table: no_such_table"},
	} {
		err := errs[code]
		assert.Equal(t, Code(err), code, "driver error %v", err)
		got := engine.Classify(err, "do it", sqliteCode)
		assert.Equal(t, claim.ErrorCode(got), want.code, "%v", got)
		assert.ErrorContains(t, got, want.msg)
		assert.ErrorContains(t, got, err.Error(), "the driver's text is kept")
	}

	assert.NilError(t, engine.Classify(nil, "do it", sqliteCode))
	coded := claim.Errorf(claim.ENotFound, "no issue x")
	assert.Equal(t, engine.Classify(coded, "do it", sqliteCode), error(coded), "a classified error passes through")
	wrapped := fmt.Errorf("context: %w", coded)
	assert.Equal(t, engine.Classify(wrapped, "do it", sqliteCode), wrapped)
	plain := engine.Classify(errors.New("disk on fire"), "do it", sqliteCode)
	assert.Equal(t, claim.ErrorCode(plain), claim.EUnexpected)
	assert.Equal(t, claim.ErrorMessage(plain), "could not do it: disk on fire")
}

// store opens a private copy of a fixture with options o.
func store(t *testing.T, version string, o claim.Options) (*claim.Store, string) {
	t.Helper()
	path := claimtest.DBPath(claimtest.Fixture(t, version))
	s, err := open(context.Background(), claim.Workspace{DBPath: path}, o)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, path
}

// A statement that fails inside the claim transaction rolls back the whole
// claim: the issue row, the event and the dirty mark land together or not at
// all. Once the fault is gone, the same store claims the same issue.
func TestClaimIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, trigger string
		code          claim.Code
		msg           string
	}{
		{"event insert fails", "BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'boom in events'); END",
			claim.EUnexpected, "could not claim an issue: constraint failed: boom in events"},
		{"dirty mark fails", "BEFORE INSERT ON dirty_issues BEGIN SELECT RAISE(ABORT, 'boom in dirty_issues'); END",
			claim.EUnexpected, "could not claim an issue: constraint failed: boom in dirty_issues"},
		{"issue update fails", "BEFORE UPDATE ON issues BEGIN SELECT RAISE(ABORT, 'boom in issues'); END",
			claim.EUnexpected, "could not claim an issue: constraint failed: boom in issues"},
		{"issue update touches no row", "BEFORE UPDATE ON issues BEGIN SELECT RAISE(IGNORE); END",
			claim.EUnexpected, "changed while bd-claim held the write lock"},
	} {
		for _, v := range claimtest.Versions {
			t.Run(tc.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				s, path := store(t, v, claim.Options{})
				exec(t, path, "CREATE TRIGGER fault "+tc.trigger)
				want := claimtest.Claimable(t, v, "priority")[0]
				before := claimtest.Snapshot(t, path)

				iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "faulty"}))
				assert.Assert(t, iss == nil)
				assert.Equal(t, claim.ErrorCode(err), tc.code, "%v", err)
				assert.ErrorContains(t, err, tc.msg)
				assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, path)), map[string][2][]string{})

				exec(t, path, "DROP TRIGGER fault")
				iss, err = issueOf(s.Claim(context.Background(), claim.Request{Agent: "faulty"}))
				assert.NilError(t, err)
				assert.Equal(t, iss.ID, want)
				assert.Equal(t, claimtest.Count(t, claimtest.Open(t, path), "SELECT count(*) FROM events"), len(before["events"])+1)
			})
		}
	}
}

// The compare-and-swap error names the issue that changed.
func TestClaimCompareAndSwapNamesIssue(t *testing.T) {
	t.Parallel()
	s, path := store(t, "0.49.6", claim.Options{})
	exec(t, path, "CREATE TRIGGER fault BEFORE UPDATE ON issues BEGIN SELECT RAISE(IGNORE); END")
	want := claimtest.Claimable(t, "0.49.6", "priority")[0]
	_, err := s.Claim(context.Background(), claim.Request{Agent: "cas"})
	assert.ErrorContains(t, err, "issue "+want+" changed while bd-claim held the write lock")
}

// A database held by another writer past the busy timeout and every retry
// is SQLITE_BUSY; a dry run still reads (WAL readers are not blocked), and
// once the lock is released the claim goes through.
func TestClaimBusy(t *testing.T) {
	ctx := context.Background()
	s, path := store(t, "0.49.6", claim.Options{BusyTimeout: 50 * time.Millisecond, Retry: claim.Retry{Attempts: 2, Backoff: time.Millisecond}})
	before := claimtest.Snapshot(t, path)
	other := OpenDB(path, time.Second)
	defer other.Close()
	lock, err := other.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	assert.NilError(t, err)

	start := time.Now()
	iss, err := issueOf(s.Claim(ctx, claim.Request{Agent: "patient"}))
	elapsed := time.Since(start)
	assert.Assert(t, iss == nil)
	assert.Equal(t, claim.ErrorCode(err), claim.EBusy, "%v", err)
	assert.ErrorContains(t, err, "could not claim an issue: the database stayed locked by another writer")
	assert.Assert(t, elapsed >= 100*time.Millisecond, "two tries of a 50ms busy timeout took only %s", elapsed)
	assert.Assert(t, elapsed < 5*time.Second, "took %s", elapsed)

	want := claimtest.Claimable(t, "0.49.6", "priority")[0]
	dry, err := issueOf(s.Claim(ctx, claim.Request{Agent: "patient", DryRun: true}))
	assert.NilError(t, err)
	assert.Equal(t, dry.ID, want)
	assert.Equal(t, dry.Status, "open")

	assert.NilError(t, lock.Rollback())
	assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, path)), map[string][2][]string{})
	iss, err = issueOf(s.Claim(ctx, claim.Request{Agent: "patient"}))
	assert.NilError(t, err)
	assert.Equal(t, iss.ID, want)
}

// A negative BusyTimeout does not wait for the lock at all (0 would wait
// the default 5s per try).
func TestClaimBusyNoWait(t *testing.T) {
	ctx := context.Background()
	s, path := store(t, "0.49.6", claim.Options{BusyTimeout: -1, Retry: claim.Retry{Attempts: 1}})
	other := OpenDB(path, time.Second)
	defer other.Close()
	lock, err := other.BeginTx(ctx, nil)
	assert.NilError(t, err)
	defer lock.Rollback()
	start := time.Now()
	_, err = s.Claim(ctx, claim.Request{Agent: "impatient"})
	assert.Equal(t, claim.ErrorCode(err), claim.EBusy, "%v", err)
	assert.Assert(t, time.Since(start) < time.Second, "waited %s", time.Since(start))
}

// Requests are checked before the database is touched.
func TestClaimRejectsBadRequests(t *testing.T) {
	t.Parallel()
	s, path := store(t, "0.49.6", claim.Options{})
	before := claimtest.Snapshot(t, path)
	for _, tc := range []struct {
		req claim.Request
		msg string
	}{
		{claim.Request{Agent: ""}, "agent name is empty"},
		{claim.Request{Agent: "a\tb"}, "control character"},
		{claim.Request{Agent: "ok", Filters: claim.Filters{Sort: "random"}}, `unknown sort "random"`},
		{claim.Request{Agent: "ok", DryRun: true, Filters: claim.Filters{IncludeLabels: []string{""}}}, "empty value"},
	} {
		iss, err := issueOf(s.Claim(context.Background(), tc.req))
		assert.Assert(t, iss == nil)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
		assert.ErrorContains(t, err, tc.msg)
	}
	assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, path)), map[string][2][]string{})
}

// A schema that changes under an open Store makes each step of a claim fail
// with UNEXPECTED and write nothing, for a claim and for a dry run.
func TestClaimSchemaChangedAfterOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, change, msg string
	}{
		// pick: the candidates query
		{"blocked cache dropped", "DROP TABLE blocked_issues_cache", "no such table: blocked_issues_cache"},
		// read: the issue row
		{"read column renamed", "ALTER TABLE issues RENAME COLUMN close_reason TO why_closed", "no such column: close_reason"},
		// read: the labels
		{"labels dropped", "DROP TABLE labels", "no such table: labels"},
	} {
		for _, dry := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dry=%v", tc.name, dry), func(t *testing.T) {
				t.Parallel()
				s, path := store(t, "0.49.6", claim.Options{})
				exec(t, path, tc.change)
				before := claimtest.Snapshot(t, path)
				iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "a", DryRun: dry}))
				assert.Assert(t, iss == nil)
				assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected, "%v", err)
				assert.ErrorContains(t, err, tc.msg)
				doing := "could not claim an issue: "
				if dry {
					doing = "could not find a ready issue: "
				}
				assert.ErrorContains(t, err, doing)
				assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, path)), map[string][2][]string{})
			})
		}
	}
}

// The reads that explain a refused --id claim can fail too; the failure is
// UNEXPECTED, not a misleading NOT_CLAIMABLE.
func TestRefuseReadErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("issue state", func(t *testing.T) {
		// bd's schema makes status NOT NULL; this one does not, so the
		// state of the issue cannot be read into a string.
		path := minimalDB(t, "", "", "0.27.2")
		exec(t, path, "UPDATE issues SET status = NULL WHERE id = 'mini-1'")
		s, err := open(ctx, claim.Workspace{DBPath: path}, claim.Options{})
		assert.NilError(t, err)
		defer s.Close()
		for _, dry := range []bool{false, true} {
			_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: "mini-1", DryRun: dry})
			assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected, "%v", err)
			assert.ErrorContains(t, err, "converting NULL to string is unsupported")
		}
	})
	t.Run("rule verdicts", func(t *testing.T) {
		// labels becomes a view whose rows cannot be computed; the claim
		// query never looks at them for a closed issue (its status rule
		// fails first), the explanation evaluates every rule and does.
		s, path := store(t, "0.49.6", claim.Options{})
		closed := claimtest.Cases(t, "0.49.6")["S_CLOSED"].ID
		exec(t, path,
			"DROP TABLE labels",
			"CREATE TABLE label_rows (issue_id TEXT, raw TEXT)",
			fmt.Sprintf("INSERT INTO label_rows VALUES ('%s', '{not json')", closed),
			"CREATE VIEW labels AS SELECT issue_id, json_extract(raw, '$.name') AS label FROM label_rows")
		before := claimtest.Snapshot(t, path)
		_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: closed, Filters: claim.Filters{IncludeLabels: []string{"backend"}}})
		assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected, "%v", err)
		assert.ErrorContains(t, err, "malformed JSON")
		assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, path)), map[string][2][]string{})
	})
}

// bd ready's excluded issue types grow with the bd version: none before
// v0.36, then merge-request/gate/molecule/message, agent from v0.42, role
// and rig from v0.48.
func TestExcludedTypesByVersion(t *testing.T) {
	t.Parallel()
	c := claimtest.Cases(t, "0.47.1")
	for _, tc := range []struct {
		version  string
		excluded []string // case keys
	}{
		{"0.35.9", nil},
		{"0.36.0", []string{"T_GATE", "T_MOLECULE", "T_MESSAGE", "T_MERGE_REQUEST"}},
		{"0.41.9", []string{"T_GATE", "T_MOLECULE", "T_MESSAGE", "T_MERGE_REQUEST"}},
		{"0.42.0", []string{"T_GATE", "T_MOLECULE", "T_MESSAGE", "T_MERGE_REQUEST", "T_AGENT"}},
		{"0.47.9", []string{"T_GATE", "T_MOLECULE", "T_MESSAGE", "T_MERGE_REQUEST", "T_AGENT"}},
		{"0.48.0", []string{"T_GATE", "T_MOLECULE", "T_MESSAGE", "T_MERGE_REQUEST", "T_AGENT", "T_ROLE", "T_RIG"}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			path := claimtest.DBPath(claimtest.Fixture(t, "0.47.1"))
			exec(t, path, fmt.Sprintf("UPDATE metadata SET value = '%s' WHERE key = 'bd_version'", tc.version))
			s, err := open(context.Background(), claim.Workspace{DBPath: path}, claim.Options{})
			assert.NilError(t, err)
			defer s.Close()
			for _, key := range []string{"T_GATE", "T_MOLECULE", "T_MESSAGE", "T_MERGE_REQUEST", "T_AGENT", "T_ROLE", "T_RIG", "T_CONVOY"} {
				_, err := s.Claim(context.Background(), claim.Request{Agent: "typed", ID: c[key].ID, DryRun: true})
				if slices.Contains(tc.excluded, key) {
					assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "%s: %v", key, err)
					assert.ErrorContains(t, err, "its type ("+strings.Join(engineOf(s).flavor.ExcludedTypes, ", ")+") is never ready")
					continue
				}
				assert.NilError(t, err, key)
			}
			_, err = s.Claim(context.Background(), claim.Request{Agent: "typed", ID: c["T_GATE"].ID, DryRun: true, Filters: claim.Filters{Types: []string{"gate"}}})
			if !slices.Contains(tc.excluded, "T_GATE") {
				// A bd without the gate type: --type gate names no type it knows.
				assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%v", err)
				assert.ErrorContains(t, err, `unknown --type "gate": not a type bd `+tc.version+" builds in")
				return
			}
			// --type lifts the exclusion, as in bd.
			assert.NilError(t, err)
		})
	}
}

// firstClaimable sets columns of the issue a claim-next would take in a
// private copy of a fixture and returns the open store, the database and the
// issue id.
func firstClaimable(t *testing.T, version, set string) (*claim.Store, string, string) {
	t.Helper()
	s, path := store(t, version, claim.Options{})
	id := claimtest.Claimable(t, version, "priority")[0]
	exec(t, path, fmt.Sprintf("UPDATE issues SET %s WHERE id = '%s'", set, id))
	return s, path, id
}

func lastOldValue(t *testing.T, path, id string) string {
	t.Helper()
	var old string
	assert.NilError(t, claimtest.Open(t, path).QueryRow(
		"SELECT old_value FROM events WHERE issue_id = ? ORDER BY id DESC LIMIT 1", id).Scan(&old))
	return old
}

// A bd v0.27 issue with an external_ref: the contract shows it, and bd's
// legacy hash appends it raw, without a trailing NUL (computed here by hand
// from the columns).
func TestClaimLegacyExternalRef(t *testing.T) {
	t.Parallel()
	s, path, id := firstClaimable(t, "0.27.2", "external_ref = 'gh-42'")
	iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "ref-agent"}))
	assert.NilError(t, err)
	assert.Equal(t, iss.ID, id)
	assert.Assert(t, iss.ExternalRef != nil)
	assert.Equal(t, *iss.ExternalRef, "gh-42")

	var f [8]string
	var priority int
	assert.NilError(t, claimtest.Open(t, path).QueryRow(`SELECT title, description, design, acceptance_criteria, notes,
		status, issue_type, assignee, priority, content_hash FROM issues WHERE id = ?`, id).
		Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &priority, new(string)))
	h := sha256.New()
	for _, v := range []string{f[0], f[1], f[2], f[3], f[4], f[5], fmt.Sprint(priority), f[6], f[7]} {
		h.Write([]byte(v + "\x00"))
	}
	h.Write([]byte("gh-42"))
	assert.Equal(t, iss.ContentHash, hex.EncodeToString(h.Sum(nil)))
	assert.Assert(t, strings.Contains(lastOldValue(t, path, id), `"external_ref":"gh-42"`))
}

// Columns no fixture issue has set still reach the event payload the way
// bd's json.Marshal prints them.
func TestClaimEventPayloadUnusualColumns(t *testing.T) {
	t.Parallel()
	s, path, id := firstClaimable(t, "0.49.6",
		`metadata = '{ "files" : [1, 2] }', crystallizes = 1, waiters = '["w1","w2"]', external_ref = 'jira-7', created_at = 'last tuesday'`)
	iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "payload", ID: id})) // its created_at no longer sorts
	assert.NilError(t, err)
	assert.Equal(t, iss.ID, id)
	assert.Equal(t, *iss.ExternalRef, "jira-7")
	var old map[string]json.RawMessage
	assert.NilError(t, json.Unmarshal([]byte(lastOldValue(t, path, id)), &old))
	for key, want := range map[string]string{
		"metadata":     `{"files":[1,2]}`, // json.RawMessage is compacted by json.Marshal
		"crystallizes": `true`,
		"waiters":      `["w1","w2"]`,
		"external_ref": `"jira-7"`,
		"created_at":   `"last tuesday"`, // not a time: kept as text
		"status":       `"open"`,
	} {
		assert.Equal(t, string(old[key]), want, key)
	}
}

// Metadata that is not JSON makes bd's json.Marshal of the issue fail; bd
// then records only the id, and the claim still succeeds.
func TestClaimInvalidMetadataFallsBackToID(t *testing.T) {
	t.Parallel()
	_, err := json.Marshal(struct{ M json.RawMessage }{json.RawMessage(`{broken`)})
	assert.ErrorContains(t, err, "invalid character", "Go's json.Marshal refuses invalid RawMessage, which is what bd runs")
	s, path, id := firstClaimable(t, "0.49.6", `metadata = '{broken'`)
	iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "meta"}))
	assert.NilError(t, err)
	assert.Equal(t, iss.ID, id)
	assert.Equal(t, lastOldValue(t, path, id), `{"id":"`+id+`"}`)
}

// bd's --json of such an issue fails too: a claim that asks for bd's JSON
// of it is refused, with what to do, and claims nothing; a dry run too.
func TestBdJSONInvalidMetadata(t *testing.T) {
	t.Parallel()
	s, path, id := firstClaimable(t, "0.49.6", `metadata = '{broken'`)
	before := claimtest.Snapshot(t, path)
	for _, dry := range []bool{false, true} {
		_, err := s.Claim(context.Background(), claim.Request{Agent: "meta", BdJSON: true, DryRun: dry})
		assert.Equal(t, claim.ErrorCode(err), claim.ESchema)
		assert.ErrorContains(t, err, "issue "+id+": its metadata is not JSON, and bd's --json cannot print it either; give it JSON metadata (bd update "+id+" --metadata '{}')")
	}
	assert.DeepEqual(t, claimtest.Snapshot(t, path), before)
}

// waiters are hashed element by element, each followed by NUL; anything
// but a JSON array of strings hashes as no waiters.
func TestContentHashWaiters(t *testing.T) {
	t.Parallel()
	s := openFixture(t, "0.49.6")
	id := claimtest.Claimable(t, "0.49.6", "priority")[0]
	hashWith := func(waiters sql.NullString) string {
		r, err := engineOf(s).tx(context.Background(), nil).Read(id)
		assert.NilError(t, err)
		r.Data.(columns)["waiters"] = waiters
		return engineOf(s).flavor.contentHash(r)
	}
	none := hashWith(sql.NullString{})
	assert.Equal(t, hashWith(sql.NullString{String: "[]", Valid: true}), none)
	assert.Equal(t, hashWith(sql.NullString{String: "not json", Valid: true}), none)
	ab := hashWith(sql.NullString{String: `["a","b"]`, Valid: true})
	assert.Assert(t, ab != none)
	assert.Assert(t, ab != hashWith(sql.NullString{String: `["ab"]`, Valid: true}))
	assert.Assert(t, ab != hashWith(sql.NullString{String: `["b","a"]`, Valid: true}))
}

// A claim cancelled before it starts writes nothing, says INTERRUPTED and
// keeps its cause for errors.Is.
func TestClaimCancelledUnwraps(t *testing.T) {
	t.Parallel()
	s := openFixture(t, "0.49.6")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, dry := range []bool{false, true} {
		_, err := s.Claim(ctx, claim.Request{Agent: "a", DryRun: dry})
		assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
		assert.Equal(t, claim.ErrorCode(err), claim.EInterrupted)
	}
}

// issueOf returns the claimed issue of a Claim call.
func issueOf(res claim.Result, err error) (*claim.Issue, error) { return res.Issue, err }

// A Store used after Close refuses, with UNEXPECTED: its write finds no
// connection to run on.
func TestClaimOnClosedStore(t *testing.T) {
	s := openFixture(t, "0.49.6")
	assert.NilError(t, s.Close())
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: "x"})
	assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected)
	assert.ErrorContains(t, err, "database is closed")
}

// A Store whose write connection broke reports the failed write and takes
// another connection from the pool for the next one.
func TestClaimWriterConnectionLost(t *testing.T) {
	s := openFixture(t, "0.49.6")
	ctx := context.Background()
	_, err := s.Claim(ctx, claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.NilError(t, engineOf(s).writer.Close()) // this handle on the connection is done
	_, err = s.Claim(ctx, claim.Request{Agent: "a"})
	assert.Assert(t, errors.Is(err, sql.ErrConnDone), "%v", err)
	res, err := s.Claim(ctx, claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue != nil)
}
