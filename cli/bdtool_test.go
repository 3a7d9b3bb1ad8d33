package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	beadssql "github.com/bdclaim/bd-claim/sql"
)

// bdVersions are the real bd releases the interop tests run against, the
// vendored ones ("v0.49.6", newest first); their binaries are built by
// `make bd` (scripts/build-bd.sh) into .bin/.
var bdVersions = func() []string {
	var vs []string
	for _, v := range beadssql.Versions() {
		vs = append(vs, "v"+v)
	}
	return vs
}()

// bdTool runs one real bd release in one workspace (claimtest.BdWorkspace).
type bdTool struct {
	t *testing.T
	*claimtest.BdWorkspace
}

// bdWorkspace makes a new workspace with bd version: `git init`, then
// `bd init --prefix bt`. bd runs as actor bd-test unless told otherwise (as).
func bdWorkspace(t *testing.T, version string) *bdTool {
	t.Helper()
	return &bdTool{t, claimtest.SQLiteWorkspace(t, version)}
}

// as is the same bd acting as another actor (BD_ACTOR).
func (b *bdTool) as(actor string) *bdTool { return &bdTool{b.t, b.As(actor)} }

// run runs bd --no-daemon ARGS in the workspace. Safe from any goroutine.
func (b *bdTool) run(args ...string) *icmd.Result { return b.Bd(args...) }

// ok runs bd and requires exit status 0. bd also exits 0 on many per-issue
// errors, so callers check what it printed or wrote too.
func (b *bdTool) ok(args ...string) *icmd.Result { return b.OK(args...) }

// json runs bd ARGS --json and decodes its stdout into v.
func (b *bdTool) json(v any, args ...string) {
	b.t.Helper()
	r := b.ok(append(args, "--json")...)
	assert.NilError(b.t, json.Unmarshal([]byte(r.Stdout()), v), "bd %s printed:\n%s", strings.Join(args, " "), r.Combined())
}

// bdIssue is an issue as bd's --json commands print it.
type bdIssue struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Notes     string   `json:"notes"`
	Status    string   `json:"status"`
	Assignee  string   `json:"assignee"`
	Priority  int      `json:"priority"`
	IssueType string   `json:"issue_type"`
	Labels    []string `json:"labels"`
	UpdatedAt string   `json:"updated_at"`
}

// create runs bd create TITLE FLAGS and returns the new issue's id.
func (b *bdTool) create(title string, flags ...string) string {
	b.t.Helper()
	var iss bdIssue
	b.json(&iss, append([]string{"create", title}, flags...)...)
	assert.Assert(b.t, iss.ID != "" && iss.Title == title, "bd create %q: %+v", title, iss)
	return iss.ID
}

// show is bd show ID.
func (b *bdTool) show(id string) bdIssue {
	b.t.Helper()
	var list []bdIssue
	b.json(&list, "show", id)
	assert.Assert(b.t, len(list) == 1 && list[0].ID == id, "bd show %s: %+v", id, list)
	return list[0]
}

// ready is bd ready in bd's priority order, unabridged.
func (b *bdTool) ready() []bdIssue {
	b.t.Helper()
	var list []bdIssue
	b.json(&list, "ready", "--sort", "priority", "--limit", "1000")
	return list
}

// export is bd export into a fresh file outside .beads/ (exporting into
// .beads/issues.jsonl would change what bd auto-imports; bd also refuses to
// overwrite a file holding issues the database lacks). It returns the file
// and its lines by id.
func (b *bdTool) export() (file string, byID map[string]map[string]any) {
	b.t.Helper()
	file = filepath.Join(b.t.TempDir(), "export.jsonl")
	b.ok("export", "-o", file)
	return file, jsonLines(b.t, file)
}

// jsonLines reads a bd JSONL file: each issue by id.
func jsonLines(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	assert.NilError(t, err)
	byID := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		assert.NilError(t, json.Unmarshal([]byte(line), &m), line)
		byID[fmt.Sprint(m["id"])] = m
	}
	return byID
}

// db opens the workspace's database for inspection.
func (b *bdTool) db() *sql.DB { return claimtest.Open(b.t, claimtest.DBPath(b.Dir)) }

// dbIssue is what the database says of one issue (timestamps as the text
// bd stored: the driver would otherwise parse DATETIME columns).
type dbIssue struct {
	Status, Assignee, ContentHash, UpdatedAt string
}

func readDBIssue(t *testing.T, conn *sql.DB, id string) dbIssue {
	t.Helper()
	var r dbIssue
	err := conn.QueryRow(`SELECT status, COALESCE(assignee, ''), COALESCE(content_hash, ''), CAST(updated_at AS TEXT)
		FROM issues WHERE id = ?`, id).Scan(&r.Status, &r.Assignee, &r.ContentHash, &r.UpdatedAt)
	assert.NilError(t, err, "issue %s", id)
	return r
}
