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

// bdRelease is what the interop tests know of one real bd release they
// run against: the vendored ones (TestBdReleases keeps the two lists
// equal), newest first; their binaries are built by `make bd`
// (scripts/build-bd.sh) into .bin/.
type bdRelease struct {
	version              string
	readyListsInProgress bool   // bd ready lists in_progress issues (up to v0.49.3)
	claimEvent           string // the event of bd's claim, and so of bd-claim's: claimed from v0.49.4, status_changed before
	claimFlag            bool   // bd update has --claim (from v0.42.0); before, bd claims with --status in_progress --assignee
	exportsComments      bool   // bd export writes each issue's comments
	dirLabels            bool   // bd ready scopes its list to config directory.labels' label for its directory (from v0.31.0)
	createsNotes         bool   // bd create has --notes, --estimate and --due (v0.27.2 has none of them)
}

var bdReleases = []bdRelease{
	{version: "v0.49.6", claimEvent: "claimed", claimFlag: true, exportsComments: true, dirLabels: true, createsNotes: true},
	{version: "v0.47.1", readyListsInProgress: true, claimEvent: "status_changed", claimFlag: true, dirLabels: true, createsNotes: true},
	{version: "v0.27.2", readyListsInProgress: true, claimEvent: "status_changed"},
}

// The interop tests run against every vendored bd release.
func TestBdReleases(t *testing.T) {
	var have, want []string
	for _, r := range bdReleases {
		have = append(have, r.version)
	}
	for _, v := range beadssql.Versions() {
		want = append(want, "v"+v)
	}
	assert.DeepEqual(t, have, want)
}

// bdTool runs one real bd release in one workspace (claimtest.BdWorkspace).
type bdTool struct {
	t *testing.T
	*claimtest.BdWorkspace
	rel bdRelease
}

// bdWorkspace makes a new workspace with bd release rel: `git init`, then
// `bd init --prefix bt`. bd runs as actor bd-test unless told otherwise (as).
func bdWorkspace(t *testing.T, rel bdRelease) *bdTool {
	t.Helper()
	return &bdTool{t, claimtest.SQLiteWorkspace(t, rel.version), rel}
}

// as is the same bd acting as another actor (BD_ACTOR).
func (b *bdTool) as(actor string) *bdTool { return &bdTool{b.t, b.As(actor), b.rel} }

// run runs bd --no-daemon ARGS in the workspace. Safe from any goroutine.
func (b *bdTool) run(args ...string) *icmd.Result { return b.Bd(args...) }

// claim is bd's own claim of id by its actor: bd update --claim, or,
// before bd had it, bd update --status in_progress --assignee ACTOR.
func (b *bdTool) claim(id string, flags ...string) {
	b.t.Helper()
	args := []string{"update", id, "--claim"}
	if !b.rel.claimFlag {
		args = []string{"update", id, "--status", "in_progress", "--assignee", b.Getenv("BD_ACTOR")}
	}
	b.ok(append(args, flags...)...)
}

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
