package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	beadssql "github.com/bdclaim/bd-claim/sql"
)

func createDemo(t *testing.T, n int, seed uint64) sqlite.Demo {
	t.Helper()
	dir := t.TempDir()
	demo, err := sqlite.CreateDemo(context.Background(), dir, n, seed)
	assert.NilError(t, err)
	assert.Equal(t, demo.Path, filepath.Join(dir, ".beads", "beads.db"))
	return demo
}

// column is a query's one text column, sorted.
func column(t *testing.T, conn *sql.DB, query string) []string {
	t.Helper()
	return sorted(claimtest.Strings(t, conn, query))
}

func sorted(ids []string) []string { return slices.Sorted(slices.Values(ids)) }

// bdBlocked is bd's blocked_issues_cache rebuild (v0.49.6,
// rebuildBlockedCache) restricted to the edge types the demo makes: blocks
// on a blocker that is not closed, propagated to parent-child descendants.
const bdBlocked = `
WITH RECURSIVE
  blocked_directly AS (
    SELECT DISTINCT d.issue_id FROM dependencies d JOIN issues blocker ON d.depends_on_id = blocker.id
    WHERE d.type = 'blocks' AND blocker.status IN ('open', 'in_progress', 'blocked', 'deferred', 'hooked')),
  blocked_transitively AS (
    SELECT issue_id, 0 AS depth FROM blocked_directly
    UNION ALL
    SELECT d.issue_id, bt.depth + 1 FROM blocked_transitively bt
    JOIN dependencies d ON d.depends_on_id = bt.issue_id
    WHERE d.type = 'parent-child' AND bt.depth < 50)
SELECT DISTINCT issue_id FROM blocked_transitively`

// The demo's lists agree with its database: Ready is every open, unassigned,
// unblocked issue; Blocked every open issue in the cache; the cache is what
// bd would compute from the edges.
func TestDemoListsMatchDatabase(t *testing.T) {
	t.Parallel()
	demo := createDemo(t, 1000, 7)
	conn := claimtest.Open(t, demo.Path)

	ready := column(t, conn, `SELECT id FROM issues WHERE status = 'open' AND COALESCE(assignee, '') = ''
		AND id NOT IN (SELECT issue_id FROM blocked_issues_cache)`)
	blocked := column(t, conn, `SELECT id FROM issues WHERE status = 'open' AND id IN (SELECT issue_id FROM blocked_issues_cache)`)
	assert.DeepEqual(t, sorted(demo.Ready), ready)
	assert.DeepEqual(t, sorted(demo.Blocked), blocked)
	assert.DeepEqual(t, column(t, conn, "SELECT issue_id FROM blocked_issues_cache"), column(t, conn, bdBlocked))

	// Every open issue is in exactly one list (the demo assigns only
	// in-progress issues).
	assert.DeepEqual(t, sorted(append(slices.Clone(demo.Ready), demo.Blocked...)), column(t, conn, "SELECT id FROM issues WHERE status = 'open'"))

	// Roughly 20% of the issues are blocked, and every kind of issue the
	// demo promises is there.
	open := len(demo.Ready) + len(demo.Blocked)
	share := float64(len(demo.Blocked)) / float64(open)
	assert.Assert(t, share > 0.10 && share < 0.30, "%d of %d open issues blocked", len(demo.Blocked), open)
	assert.Equal(t, len(column(t, conn, "SELECT id FROM issues")), 1000)
	for what, query := range map[string]string{
		"epics":        "SELECT id FROM issues WHERE issue_type = 'epic'",
		"in progress":  "SELECT id FROM issues WHERE status = 'in_progress' AND assignee = 'human'",
		"closed":       "SELECT id FROM issues WHERE status = 'closed' AND closed_at IS NOT NULL",
		"labelled":     "SELECT DISTINCT issue_id FROM labels",
		"children":     "SELECT issue_id FROM dependencies WHERE type = 'parent-child'",
		"blocks edges": "SELECT issue_id FROM dependencies WHERE type = 'blocks'",
	} {
		assert.Check(t, len(column(t, conn, query)) > 10, what)
	}
	labelled := len(column(t, conn, "SELECT DISTINCT issue_id FROM labels"))
	assert.Assert(t, labelled > 200 && labelled < 600, "%d of 1000 labelled", labelled)
}

// Draining the demo with bd-claim claims exactly Ready, each once, and none
// of Blocked.
func TestDemoDrain(t *testing.T) {
	t.Parallel()
	demo := createDemo(t, 100, 11)
	s, err := engines.Open(context.Background(), claim.Workspace{DBPath: demo.Path}, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	assert.Equal(t, s.Version().String(), beadssql.SchemaVersion)
	var got []string
	for {
		iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "drain"}))
		assert.NilError(t, err)
		if iss == nil {
			break
		}
		got = append(got, iss.ID)
	}
	assert.DeepEqual(t, sorted(got), sorted(demo.Ready))
	for _, id := range demo.Blocked {
		_, err := s.Claim(context.Background(), claim.Request{Agent: "drain", ID: id})
		assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, id)
		assert.ErrorContains(t, err, "blocked")
	}
}

// The same seed gives the same workspace; another seed another one.
// Timestamps are relative to the time of creation, so they are left out.
func TestDemoSeedIsDeterministic(t *testing.T) {
	t.Parallel()
	shape := func(d sqlite.Demo) []string {
		conn := claimtest.Open(t, d.Path)
		var out []string
		for _, q := range []string{
			"SELECT id || '|' || title || '|' || status || '|' || priority || '|' || issue_type || '|' || assignee || '|' || content_hash FROM issues",
			"SELECT issue_id || '|' || label FROM labels",
			"SELECT issue_id || '|' || depends_on_id || '|' || type FROM dependencies",
			"SELECT 'blocked|' || issue_id FROM blocked_issues_cache",
			"SELECT key || '=' || value FROM metadata",
		} {
			out = append(out, column(t, conn, q)...)
		}
		return out
	}
	a, b, c := createDemo(t, 80, 42), createDemo(t, 80, 42), createDemo(t, 80, 43)
	assert.DeepEqual(t, a.Ready, b.Ready)
	assert.DeepEqual(t, a.Blocked, b.Blocked)
	assert.DeepEqual(t, shape(a), shape(b))
	assert.Assert(t, !slices.Equal(shape(a), shape(c)), "seeds 42 and 43 gave the same workspace")
}

func TestDemoRefusesExistingDatabase(t *testing.T) {
	t.Parallel()
	demo := createDemo(t, 20, 1)
	dir := filepath.Dir(filepath.Dir(demo.Path))
	before := claimtest.FileSum(t, demo.Path)
	_, err := sqlite.CreateDemo(context.Background(), dir, 20, 2)
	assert.ErrorContains(t, err, "already holds a database")
	assert.Equal(t, claimtest.FileSum(t, demo.Path), before)
}

func TestDemoUnwritablePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	assert.NilError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err := sqlite.CreateDemo(context.Background(), filepath.Join(file, "sub"), 10, 1)
	assert.ErrorContains(t, err, "not a directory")

	// .beads/beads.db taken by a directory: the database cannot be made.
	assert.NilError(t, os.MkdirAll(filepath.Join(dir, "ws", ".beads", "beads.db"), 0o755))
	_, err = sqlite.CreateDemo(context.Background(), filepath.Join(dir, "ws"), 10, 1)
	assert.Assert(t, err != nil)
	assert.Check(t, is.Len(claimtest.Names(t, filepath.Join(dir, "ws", ".beads")), 1))
}

// An empty demo is a valid, empty workspace.
func TestDemoEmpty(t *testing.T) {
	t.Parallel()
	demo := createDemo(t, 0, 1)
	assert.Check(t, is.Len(demo.Ready, 0))
	assert.Check(t, is.Len(demo.Blocked, 0))
	s, err := engines.Open(context.Background(), claim.Workspace{DBPath: demo.Path}, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "x"}))
	assert.NilError(t, err)
	assert.Assert(t, iss == nil)
}

// Any failing write while seeding rolls the whole demo back.
func TestSeedDemoIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"metadata": "CREATE TRIGGER t BEFORE INSERT ON metadata BEGIN SELECT RAISE(ABORT, 'no metadata'); END",
		"config":   "CREATE TRIGGER t BEFORE INSERT ON config BEGIN SELECT RAISE(ABORT, 'no config'); END",
		"issues":   "CREATE TRIGGER t BEFORE INSERT ON issues BEGIN SELECT RAISE(ABORT, 'no issues'); END",
		"blocked":  "CREATE TRIGGER t BEFORE INSERT ON blocked_issues_cache BEGIN SELECT RAISE(ABORT, 'no cache'); END",
		"schema":   "ALTER TABLE events DROP COLUMN comment",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "beads.db")
			assert.NilError(t, sqlite.Create(context.Background(), path))
			conn := claimtest.Open(t, path)
			_, err := conn.Exec(ddl)
			assert.NilError(t, err)
			_, err = sqlite.SeedDemo(context.Background(), conn, 200, 1)
			assert.Assert(t, err != nil)
			assert.Equal(t, claimtest.Count(t, conn, "SELECT (SELECT count(*) FROM issues) + (SELECT count(*) FROM metadata) + (SELECT count(*) FROM config)"), 0)
		})
	}
}

func issueOf(res claim.Result, err error) (*claim.Issue, error) { return res.Issue, err }
