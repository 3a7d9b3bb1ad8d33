// Package claimtest builds and inspects Beads workspaces for tests: copies of
// the real bd-made fixtures in testdata/fixtures, and snapshots of every row
// so a test can prove what a command changed and what it left alone.
package claimtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver behind sql.Open("sqlite")

	beadssql "github.com/bdclaim/bd-claim/sql"
)

// Versions are the bd releases whose real workspaces are in testdata/fixtures
// (the directories bd-vX.Y.Z), oldest first: "0.27.2", "0.47.1", ...
var Versions = fixtureVersions()

func fixtureVersions() []string {
	dirs, _ := filepath.Glob(filepath.Join(Root(), "testdata", "fixtures", "bd-v*"))
	var vs []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			vs = append(vs, strings.TrimPrefix(filepath.Base(d), "bd-v"))
		}
	}
	if len(vs) == 0 {
		panic("claimtest: no testdata/fixtures/bd-v*/ under " + Root())
	}
	slices.SortFunc(vs, beadssql.CompareVersions)
	return vs
}

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// FixtureDir is the directory of one fixture.
func FixtureDir(version string) string {
	return filepath.Join(Root(), "testdata", "fixtures", "bd-v"+version)
}

// Fixture copies a bd-made workspace into a new temp dir (SQLite must be able
// to create -wal/-shm files beside the database) and returns the workspace
// root; the database is Root/.beads/beads.db.
func Fixture(t testing.TB, version string) string {
	t.Helper()
	dir := t.TempDir()
	copyFixture(t, version, dir)
	return dir
}

// copyFixture copies a fixture's workspace files into dir/.beads.
func copyFixture(t testing.TB, version, dir string) {
	t.Helper()
	must(t, os.Mkdir(filepath.Join(dir, ".beads"), 0o755))
	for _, f := range []string{"beads.db", "metadata.json", "config.yaml"} {
		CopyFile(t, filepath.Join(FixtureDir(version), f), filepath.Join(dir, ".beads", f))
	}
}

// DBPath is the database of a workspace made by Fixture.
func DBPath(root string) string { return filepath.Join(root, ".beads", "beads.db") }

// CopyFile copies one file.
func CopyFile(t testing.TB, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	must(t, err)
	defer src.Close()
	dst, err := os.Create(to)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	must(t, dst.Close())
}

// Open opens a database for inspection, outside the code under test.
func Open(t testing.TB, path string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(10000)")
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Snapshot renders every row of every table, sorted, so that two snapshots
// show exactly what happened in between.
func Snapshot(t testing.TB, path string) map[string][]string {
	t.Helper()
	conn := Open(t, path)
	defer conn.Close()
	names := Strings(t, conn, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	snap := map[string][]string{}
	for _, n := range names {
		rows, err := conn.Query(fmt.Sprintf("SELECT * FROM %q", n))
		must(t, err)
		cols, _ := rows.Columns()
		for i, c := range cols {
			cols[i] = fmt.Sprintf("quote(%q)", c)
		}
		must(t, rows.Close())
		rows, err = conn.Query(fmt.Sprintf("SELECT %s FROM %q", strings.Join(cols, " || ',' || "), n))
		must(t, err)
		for rows.Next() {
			var r string
			must(t, rows.Scan(&r))
			snap[n] = append(snap[n], r)
		}
		must(t, rows.Close())
		slices.Sort(snap[n])
	}
	return snap
}

// Diff lists, per table that changed, the rows only in a and only in b.
func Diff(a, b map[string][]string) map[string][2][]string {
	out := map[string][2][]string{}
	tables := map[string]bool{}
	for k := range a {
		tables[k] = true
	}
	for k := range b {
		tables[k] = true
	}
	for t := range tables {
		var onlyA, onlyB []string
		for _, r := range a[t] {
			if !slices.Contains(b[t], r) {
				onlyA = append(onlyA, r)
			}
		}
		for _, r := range b[t] {
			if !slices.Contains(a[t], r) {
				onlyB = append(onlyB, r)
			}
		}
		if onlyA != nil || onlyB != nil {
			out[t] = [2][]string{onlyA, onlyB}
		}
	}
	return out
}

// Listed is an issue as `bd ready --json` prints it.
type Listed struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Assignee  string   `json:"assignee"`
	Priority  int      `json:"priority"`
	IssueType string   `json:"issue_type"`
	Labels    []string `json:"labels"`
}

// BdReady is bd's own `bd ready --json --sort SORT` output for a fixture.
func BdReady(t testing.TB, version, sort string) []Listed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureDir(version), "expected-ready-"+sort+".json"))
	must(t, err)
	var ready []Listed
	must(t, json.Unmarshal(b, &ready))
	return ready
}

// Claimable is bd ready's order for a sort, keeping the issues a fresh agent
// may claim: open and unassigned (bd ready also lists pre-assigned and,
// before v0.49.4, in_progress issues).
func Claimable(t testing.TB, version, sort string) []string {
	t.Helper()
	var ids []string
	for _, r := range BdReady(t, version, sort) {
		if r.Status == "open" && r.Assignee == "" {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// ReadyTime is when bd ready ran for a fixture: "now" for the hybrid order.
func ReadyTime(t testing.TB, version string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureDir(version), "build-info.txt"))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ready_outputs_taken_at_utc: "); ok {
			at, err := time.Parse(time.RFC3339, v)
			must(t, err)
			return at
		}
	}
	t.Fatal("no ready_outputs_taken_at_utc in build-info.txt")
	return time.Time{}
}

// Case is one fixture issue, looked up by its case key (ids change with
// every fixture build).
type Case struct {
	Key     string `json:"key"`
	ID      string `json:"id"`
	Status  string `json:"status"`
	InReady bool   `json:"in_ready"`
	WhyNot  string `json:"why_not"`
}

// Cases maps case keys to issues for a fixture.
func Cases(t testing.TB, version string) map[string]Case {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureDir(version), "cases.json"))
	must(t, err)
	var list []Case
	must(t, json.Unmarshal(b, &list))
	m := map[string]Case{}
	for _, c := range list {
		m[c.Key] = c
	}
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Event is one events row.
type Event struct {
	ID                          int64
	Type, Actor                 string
	OldValue, NewValue, Comment sql.NullString
	CreatedAt                   string
}

// Events lists the events of issue id after event after, oldest first.
func Events(t testing.TB, conn *sql.DB, id string, after int64) []Event {
	t.Helper()
	rows, err := conn.Query(`SELECT id, event_type, actor, old_value, new_value, comment, CAST(created_at AS TEXT)
		FROM events WHERE issue_id = ? AND id > ? ORDER BY id`, id, after)
	must(t, err)
	defer rows.Close()
	var list []Event
	for rows.Next() {
		var e Event
		must(t, rows.Scan(&e.ID, &e.Type, &e.Actor, &e.OldValue, &e.NewValue, &e.Comment, &e.CreatedAt))
		list = append(list, e)
	}
	must(t, rows.Err())
	return list
}

// FileSum is the hex SHA-256 of a file's bytes: equal sums before and after
// mean the file was left byte for byte as it was.
func FileSum(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Names lists the names of a directory's entries, sorted by name (nil for
// an empty directory).
func Names(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Querier is what Count and Strings query: a *sql.DB, *sql.Tx or *sql.Conn
// (and db.DBTX).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Count runs a query that returns one integer, such as SELECT count(*).
func Count(t testing.TB, conn Querier, query string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Strings runs a query of one text column and returns its values in the
// order of the rows (nil for none).
func Strings(t testing.TB, conn Querier, query string, args ...any) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		must(t, rows.Scan(&s))
		out = append(out, s)
	}
	must(t, rows.Err())
	return out
}

// Changed lists the keys whose value differs from before to after (a
// key after has that before lacks counts), sorted.
func Changed(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
