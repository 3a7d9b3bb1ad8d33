package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// --bd-json parity: twin workspaces that the real bd makes alike from one
// fixture (bdJSONFixture, and in Dolt workspaces bdJSONWisps); in one the
// real bd claims, in the other bd-claim --bd-json, as the same agents,
// claim after claim until nothing is left. Each pair of outputs must be
// the same bytes, but for the values that are the instant of each claim
// (bdJSONInstants), which must each equal what its workspace's database
// holds, in bd's form, and fall within its claim.

// bdJSONFixture is the parity tests' issues as `bd import` reads them, PFX
// standing for the workspace's prefix: what bd's --json prints of an issue
// (text that JSON escapes, metadata, an empty external_ref, an estimate,
// due and past defer dates, labels, comments), dependency records of every
// kind (a parent, a closed and an external blocker, one with metadata, one
// with a thread), an issue that others depend on, and blocked ones. Claimed
// by bd ready's order (priority, then age): PFX-e1, PFX-d1, PFX-a1,
// PFX-b1 (blocked in Dolt workspaces: bdJSONWisps), PFX-w1; PFX-e1.1 is
// claimed by id first.
const bdJSONFixture = `{"id":"PFX-e1","title":"Epic one","issue_type":"epic","priority":1,"status":"open","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z","created_by":"maker","owner":"o@x.y"}
{"id":"PFX-e1.1","title":"Child <a> & \"b\"","description":"desc\nline","design":"des","notes":"n","acceptance_criteria":"ac","issue_type":"bug","priority":0,"status":"open","created_at":"2026-01-02T03:04:06Z","updated_at":"2026-01-03T03:04:06Z","created_by":"maker","owner":"o@x.y","labels":["zz","aa","m-b"],"metadata":{"k":"v<>&","n":2,"nested":{"a":[1,2]}},"external_ref":"gh-9","estimated_minutes":30,"due_at":"2027-01-01T00:00:00Z","defer_until":"2026-01-01T00:00:00Z","dependencies":[{"issue_id":"PFX-e1.1","depends_on_id":"PFX-e1","type":"parent-child","created_at":"2026-01-02T03:04:07Z","created_by":"maker"},{"issue_id":"PFX-e1.1","depends_on_id":"PFX-c1","type":"blocks","created_at":"2026-01-02T03:04:08Z","created_by":"maker"}],"comments":[{"issue_id":"PFX-e1.1","author":"maker","text":"one","created_at":"2026-01-02T03:05:00Z"}]}
{"id":"PFX-c1","title":"closed blocker","issue_type":"task","priority":2,"status":"closed","closed_at":"2026-01-02T04:00:00Z","created_at":"2026-01-02T03:00:00Z","updated_at":"2026-01-02T04:00:00Z","created_by":"maker"}
{"id":"PFX-d1","title":"many edges","description":"d","issue_type":"chore","priority":2,"status":"open","created_at":"2026-01-02T03:09:00Z","updated_at":"2026-01-02T03:09:00Z","created_by":"maker","labels":["one"],"metadata":{"gc.routed_to":"rig/worker"},"dependencies":[{"issue_id":"PFX-d1","depends_on_id":"PFX-e1","type":"parent-child","created_at":"2026-01-02T03:09:01Z","created_by":"maker"},{"issue_id":"PFX-d1","depends_on_id":"PFX-c1","type":"blocks","created_at":"2026-01-02T03:09:02Z","created_by":"maker","metadata":"{\"why\": \"<x>\"}"},{"issue_id":"PFX-d1","depends_on_id":"PFX-a2","type":"replies-to","created_at":"2026-01-02T03:09:03Z","created_by":"other","thread_id":"PFX-a2"},{"issue_id":"PFX-d1","depends_on_id":"PFX-a1","type":"discovered-from","created_at":"2026-01-02T03:09:03Z","created_by":"maker"},{"issue_id":"PFX-d1","depends_on_id":"external:proj:cap","type":"blocks","created_at":"2026-01-02T03:09:04Z","created_by":"maker"}],"comments":[{"issue_id":"PFX-d1","author":"maker","text":"c","created_at":"2026-01-02T03:09:05Z"},{"issue_id":"PFX-d1","author":"other","text":"c2","created_at":"2026-01-02T03:09:06Z"}]}
{"id":"PFX-a1","title":"plain","issue_type":"task","priority":2,"status":"open","created_at":"2026-01-02T03:10:00Z","updated_at":"2026-01-02T03:10:00Z","created_by":"maker","external_ref":""}
{"id":"PFX-a2","title":"blocked by a1","issue_type":"feature","priority":2,"status":"open","created_at":"2026-01-02T03:11:00Z","updated_at":"2026-01-02T03:11:00Z","created_by":"maker","dependencies":[{"issue_id":"PFX-a2","depends_on_id":"PFX-a1","type":"blocks","created_at":"2026-01-02T03:11:01Z","created_by":"maker"}]}
{"id":"PFX-b1","title":"blocked by a wisp","issue_type":"task","priority":2,"status":"open","created_at":"2026-01-02T03:11:30Z","updated_at":"2026-01-02T03:11:30Z","created_by":"maker"}
{"id":"PFX-w1","title":"no history","issue_type":"task","priority":3,"status":"open","no_history":true,"created_at":"2026-01-02T03:12:00Z","updated_at":"2026-01-02T03:12:00Z","created_by":"maker","labels":["wl"]}
`

// bdJSONWisps adds to a Dolt twin what `bd import` cannot make, as bd
// leaves it: two `--no-history` wisps in bd's wisps table (which bd ready
// --claim takes), PFX-wisp-w2, ready, with a label, a blocks record on the
// closed PFX-c1 and a comment, and PFX-wisp-w3, blocked by it and by
// PFX-a1; and PFX-b1 blocked by PFX-wisp-w2. So the counts that bd's modes
// read differently (an issue's and a wisp's, in the wisp tables) differ
// from 0. Claimed after PFX-d1.
var bdJSONWisps = []string{
	`INSERT INTO wisps (id, title, description, design, acceptance_criteria, notes, priority, issue_type, no_history, is_blocked, row_lock, created_at, updated_at, created_by) VALUES
	 ('PFX-wisp-w2', 'a wisp <w>', 'wd', '', '', '', 2, 'task', 1, 0, 7, '2026-01-02 03:09:30', '2026-01-02 03:09:30', 'maker'),
	 ('PFX-wisp-w3', 'a blocked wisp', '', '', '', '', 2, 'task', 1, 1, 8, '2026-01-02 03:09:40', '2026-01-02 03:09:40', 'maker')`,
	`INSERT INTO wisp_labels (issue_id, label) VALUES ('PFX-wisp-w2', 'wl')`,
	`INSERT INTO wisp_dependencies (id, issue_id, depends_on_issue_id, depends_on_wisp_id, type, created_at, created_by) VALUES
	 ('00000000-0000-5000-8000-000000000001', 'PFX-wisp-w2', 'PFX-c1', NULL, 'blocks', '2026-01-02 03:09:31', 'maker'),
	 ('00000000-0000-5000-8000-000000000002', 'PFX-wisp-w3', NULL, 'PFX-wisp-w2', 'blocks', '2026-01-02 03:09:41', 'maker'),
	 ('00000000-0000-5000-8000-000000000003', 'PFX-wisp-w3', 'PFX-a1', NULL, 'blocks', '2026-01-02 03:09:42', 'maker')`,
	`INSERT INTO wisp_comments (id, issue_id, author, text, created_at) VALUES ('00000000-0000-5000-8000-000000000004', 'PFX-wisp-w2', 'maker', 'wc', '2026-01-02 03:09:32')`,
	`INSERT INTO dependencies (id, issue_id, depends_on_wisp_id, type, created_at, created_by) VALUES ('00000000-0000-5000-8000-000000000005', 'PFX-b1', 'PFX-wisp-w2', 'blocks', '2026-01-02 03:11:31', 'maker')`,
	`UPDATE issues SET is_blocked = 1 WHERE id = 'PFX-b1'`,
	`CALL DOLT_COMMIT('-Am', 'bd-json parity: wisps')`,
}

// bdJSONInstants are the keys of bd's --json whose values are the instant
// of the claim: updated_at, and in Dolt workspaces started_at and the
// lease's times.
var bdJSONInstants = []string{"updated_at", "started_at", "lease_expires_at", "heartbeat_at"}

// bdTwin is one of the twins of a parity test.
type bdTwin struct {
	bd     bool     // bd claims here, else bd-claim
	prefix string   // the workspace's issue prefix
	dir    string   // the workspace
	env    []string // bd's environment there, which bd-claim runs with too
	v13    bool     // bd v1.3 (Dolt): bd ready --claim, leases
	// as is the real bd in the workspace acting as agent.
	as func(agent string) *claimtest.BdRunner
	// held reads what the database holds of the claim-instant values of
	// issue id, as bd prints them (none when there is none).
	held func(id string) map[string]string
	// oldValue reads the old_value of the claim event of issue id: the
	// issue before the claim, as bd's json.Marshal prints it.
	oldValue func(id string) string
}

// importFixture has bd import bdJSONFixture into the workspace of r, whose
// prefix is prefix, then (where bd has metadata) set PFX-d1's metadata as
// a user does, whose text bd keeps as given (bd import writes it as
// encoding/json does, compact and escaped).
func importFixture(t *testing.T, r *claimtest.BdRunner, prefix string, v13, metadata bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "fixture.jsonl")
	assert.NilError(t, os.WriteFile(file, []byte(strings.ReplaceAll(bdJSONFixture, "PFX", prefix)), 0o644))
	if v13 {
		r.OK("import", file)
	} else {
		r.OK("import", "-i", file)
	}
	if metadata {
		r.OK("update", prefix+"-d1", "--metadata", `{"gc.routed_to": "rig/<w>&", "n": [1, 2.50]}`)
	}
}

// execer runs a statement: a *sql.DB or *sql.Conn.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// addWisps runs bdJSONWisps on a Dolt twin's database.
func addWisps(t *testing.T, conn execer, prefix string) {
	t.Helper()
	for _, q := range bdJSONWisps {
		q = strings.ReplaceAll(q, "PFX", prefix)
		_, err := conn.ExecContext(context.Background(), q)
		assert.NilError(t, err, q)
	}
}

// doltHeld reads the claim-instant values of issue id from a Dolt
// database, formatted as bd prints them (RFC 3339, whole seconds, UTC).
func doltHeld(t *testing.T, q claimtest.Querier, id string) map[string]string {
	t.Helper()
	const f = `'%Y-%m-%dT%H:%i:%sZ'`
	row := "SELECT CONCAT_WS(' ', DATE_FORMAT(updated_at, " + f + "), COALESCE(DATE_FORMAT(started_at, " + f + "), '')) FROM "
	held := map[string]string{}
	for _, s := range claimtest.Strings(t, q, row+"issues WHERE id = ? UNION ALL "+row+"wisps WHERE id = ?", id, id) {
		held["updated_at"], held["started_at"], _ = strings.Cut(s, " ")
	}
	for _, s := range claimtest.Strings(t, q, "SELECT CONCAT_WS(' ', DATE_FORMAT(lease_expires_at, "+f+"), DATE_FORMAT(heartbeat_at, "+f+")) FROM leases WHERE issue_id = ?", id) {
		held["lease_expires_at"], held["heartbeat_at"], _ = strings.Cut(s, " ")
	}
	for k, v := range held {
		if v == "" {
			delete(held, k)
		}
	}
	return held
}

// doltOldValue reads the old_value of the claim event of issue id from a
// Dolt database (an issue has one in these tests).
func doltOldValue(t *testing.T, q claimtest.Querier, id string) string {
	t.Helper()
	return claimtest.Strings(t, q, "SELECT old_value FROM events WHERE issue_id = ? AND event_type = 'claimed' UNION ALL SELECT old_value FROM wisp_events WHERE issue_id = ? AND event_type = 'claimed'", id, id)[0]
}

// sqliteTwin is a SQLite workspace of bd version, the fixture imported.
func sqliteTwin(t *testing.T, version string) bdTwin {
	w := claimtest.SQLiteWorkspace(t, version)
	conn := claimtest.Open(t, claimtest.DBPath(w.Dir))
	metadata := claimtest.Count(t, conn, "SELECT count(*) FROM pragma_table_info('issues') WHERE name = 'metadata'") == 1
	importFixture(t, &w.BdRunner, "bt", false, metadata)
	return bdTwin{prefix: "bt", dir: w.Dir, env: w.Env,
		as: func(agent string) *claimtest.BdRunner { return &w.As(agent).BdRunner },
		held: func(id string) map[string]string {
			return map[string]string{"updated_at": claimtest.Strings(t, conn, "SELECT updated_at FROM issues WHERE id = ?", id)[0]}
		},
		oldValue: func(id string) string {
			return claimtest.Strings(t, conn, "SELECT old_value FROM events WHERE issue_id = ? AND event_type IN ('claimed', 'status_changed') ORDER BY id DESC LIMIT 1", id)[0]
		}}
}

// serverTwin is a server-mode workspace on the package's dolt sql-server,
// the fixture imported and the wisps added. Its prefix is its own (each
// workspace has its database on the server).
func serverTwin(t *testing.T) bdTwin {
	w := claimtest.NeedDolt(t).Workspace(t, "bj")
	return sqlTwin(t, &w.BdRunner, w.Prefix, w.DB(t), func(agent string) *claimtest.BdRunner { return &w.As(agent).BdRunner })
}

// proxiedTwin is a proxied-server workspace, the fixture imported and the
// wisps added (through its proxy).
func proxiedTwin(t *testing.T) bdTwin {
	w := claimtest.ProxiedWorkspace(t, "pj")
	return sqlTwin(t, &w.BdRunner, w.Prefix, w.DB(t), func(agent string) *claimtest.BdRunner { return &w.As(agent).BdRunner })
}

// sqlTwin is the Dolt workspace of r, whose prefix is prefix and whose
// database conn reaches, the fixture imported and the wisps added; as is
// its bd acting as an agent.
func sqlTwin(t *testing.T, r *claimtest.BdRunner, prefix string, conn *sql.DB, as func(agent string) *claimtest.BdRunner) bdTwin {
	importFixture(t, r, prefix, true, true)
	addWisps(t, conn, prefix)
	return bdTwin{prefix: prefix, dir: r.Dir, env: r.Env, v13: true, as: as,
		held:     func(id string) map[string]string { return doltHeld(t, conn, id) },
		oldValue: func(id string) string { return doltOldValue(t, conn, id) }}
}

// topLevel matches a line of bd's indented --json that holds a string
// value of the listed issue (in bd's envelope, two spaces further in): its
// key and value.
var topLevel = regexp.MustCompile(`^    (?:  )?"([a-z_]+)": "([^"]*)",?\n$`)

// settle checks the claim-instant values of out, a twin's --json of a
// claim of one issue, against held (what its database holds) and, for a
// claim made between from and to, against that window; then it blanks
// them and writes the twin's prefix PFX. What it returns must be the same
// bytes for both twins.
func settle(t *testing.T, tw bdTwin, out string, held map[string]string, from, to time.Time) string {
	t.Helper()
	var b strings.Builder
	seen := map[string]string{}
	for _, line := range strings.SplitAfter(out, "\n") {
		if m := topLevel.FindStringSubmatch(line); m != nil && slices.Contains(bdJSONInstants, m[1]) {
			seen[m[1]] = m[2]
			line = strings.Replace(line, `"`+m[2]+`"`, `"<`+m[1]+`>"`, 1)
		}
		b.WriteString(line)
	}
	assert.DeepEqual(t, seen, held)
	at, err := time.Parse(time.RFC3339Nano, held["updated_at"])
	assert.NilError(t, err)
	if !from.IsZero() {
		assert.Assert(t, !at.Before(from.Add(-time.Second)) && !at.After(to.Add(time.Second)), "updated_at %s, claimed between %s and %s", at, from, to)
	}
	if tw.v13 {
		assert.Equal(t, held["started_at"], held["updated_at"])
		if lease, ok := held["lease_expires_at"]; ok {
			until, err := time.Parse(time.RFC3339, lease)
			assert.NilError(t, err)
			beat, err := time.Parse(time.RFC3339, held["heartbeat_at"])
			assert.NilError(t, err)
			// bd's lease ends 5 minutes after the claim's instant, which
			// the server rounds; bd-claim's expiry is rounded up to the
			// second, so its lease may last a second longer
			// (docs/dolt.md).
			if d := until.Sub(beat); d != 5*time.Minute {
				assert.Assert(t, !tw.bd && d == 5*time.Minute+time.Second, "lease of %s", d)
			}
			assert.Equal(t, held["heartbeat_at"], held["updated_at"])
		}
	}
	return strings.ReplaceAll(b.String(), `"`+tw.prefix+"-", `"PFX-`)
}

// dryOf is what a dry run printed before the claim that printed claimed
// must have printed: the issue as it was, open, unassigned, unstarted,
// unleased, last updated at updated.
func dryOf(claimed, updated string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(claimed, "\n") {
		if m := topLevel.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case "assignee", "started_at", "lease_expires_at", "heartbeat_at":
				continue
			case "status":
				line = strings.Replace(line, `"in_progress"`, `"open"`, 1)
			case "updated_at":
				line = strings.Replace(line, `"`+m[2]+`"`, `"`+updated+`"`, 1)
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// idOf is the id of the issue a --json of a claim lists (in bd's
// envelope or not), "" for none.
func idOf(t *testing.T, out string) string {
	t.Helper()
	var list []struct{ ID string }
	if strings.HasPrefix(out, "{") {
		var envelope struct {
			Data          *[]struct{ ID string }
			SchemaVersion int `json:"schema_version"`
		}
		envelope.Data = &list
		assert.NilError(t, json.Unmarshal([]byte(out), &envelope), out)
		assert.Equal(t, envelope.SchemaVersion, 1, out)
	} else {
		assert.NilError(t, json.Unmarshal([]byte(out), &list), out)
	}
	assert.Assert(t, len(list) <= 1, out)
	if len(list) == 0 {
		return ""
	}
	return list[0].ID
}

// bdJSONParity drains twins a (the real bd) and b (bd-claim --bd-json)
// claim after claim, as agents agent-1, agent-2...: first PFX-e1.1 by id
// (bd update --claim), again by id as its holder (bd v1.3, which answers
// a re-claim with the issue), then the next ready issue (bd ready --claim
// on bd v1.3; on the SQLite releases, which have none, bd update --claim
// of the issue bd-claim took) until both print []. Before each claim a
// dry run prints the issue the claim then takes, as it was. The first
// claim of the next issue, and a claim once drained, run with
// BD_JSON_ENVELOPE=1 (bd v1.3 prints its envelope, the SQLite releases
// ignore it). want lists the issues claimed next, in order.
func bdJSONParity(t *testing.T, a, b bdTwin, want []string) {
	a.bd = true
	envelope := []string{"BD_JSON_ENVELOPE=1"}
	// ours and theirs run bd-claim --bd-json in b and bd in a as agent,
	// with what env adds to the workspace's environment.
	ours := func(env []string, agent string, args ...string) (string, time.Time, time.Time) {
		t.Helper()
		from := time.Now()
		r := run(t, b.dir, append(slices.Clone(b.env), env...), append([]string{"--bd-json", "--quiet", "--agent", agent}, args...)...)
		to := time.Now()
		r.Assert(t, icmd.Expected{Err: icmd.None})
		return r.Stdout(), from, to
	}
	theirs := func(env []string, agent string, args ...string) (string, time.Time, time.Time) {
		t.Helper()
		from := time.Now()
		bd := a.as(agent)
		bd.Env = append(bd.Env, env...)
		r := bd.OK(args...)
		return r.Stdout(), from, time.Now()
	}
	compared := 0
	same := func(agent, bdOut, ourOut string, bdFrom, bdTo, ourFrom, ourTo time.Time) {
		t.Helper()
		aID, bID := idOf(t, bdOut), idOf(t, ourOut)
		assert.Equal(t, strings.TrimPrefix(bID, b.prefix), strings.TrimPrefix(aID, a.prefix), "%s: bd claimed %s, bd-claim %s", agent, aID, bID)
		if aID == "" {
			assert.Equal(t, ourOut, bdOut)
			return
		}
		assert.Equal(t, settle(t, b, ourOut, b.held(bID), ourFrom, ourTo), settle(t, a, bdOut, a.held(aID), bdFrom, bdTo), "%s", aID)
		compared++
		// And the claim's event says what the issue was as bd's does
		// (the twins' updated_at may differ: bd update --metadata).
		blank := func(tw bdTwin, id string) string {
			old := regexp.MustCompile(`"updated_at":"[^"]*"`).ReplaceAllString(tw.oldValue(id), `"updated_at":""`)
			return strings.ReplaceAll(old, `"`+tw.prefix+"-", `"PFX-`)
		}
		assert.Equal(t, blank(b, bID), blank(a, aID), "old_value of %s", aID)
	}
	byID := func(agent string, fresh bool) {
		t.Helper()
		dry, _, _ := ours(nil, agent, "--dry-run", "--id", b.prefix+"-e1.1")
		before := b.held(b.prefix + "-e1.1")["updated_at"]
		bdOut, bdFrom, bdTo := theirs(nil, agent, "update", a.prefix+"-e1.1", "--claim", "--json")
		ourOut, ourFrom, ourTo := ours(nil, agent, "--id", b.prefix+"-e1.1")
		if fresh {
			assert.Equal(t, dry, dryOf(ourOut, before))
		} else { // a re-claim: the issue as it is
			assert.Equal(t, dry, ourOut)
			bdFrom, ourFrom = time.Time{}, time.Time{}
		}
		same(agent, bdOut, ourOut, bdFrom, bdTo, ourFrom, ourTo)
	}
	byID("agent-1", true)
	if a.v13 {
		byID("agent-1", false)
	}
	var got []string
	for round := 2; ; round++ {
		agent := fmt.Sprintf("agent-%d", round)
		var env []string
		if round == 2 {
			env = envelope
		}
		var bdOut string
		var bdFrom, bdTo time.Time
		if a.v13 {
			bdOut, bdFrom, bdTo = theirs(env, agent, "ready", "--claim", "--json")
		}
		dry, _, _ := ours(nil, agent, "--dry-run")
		id := idOf(t, dry)
		var before string
		if id != "" {
			before = b.held(id)["updated_at"]
		}
		ourOut, ourFrom, ourTo := ours(env, agent)
		if env == nil {
			assert.Equal(t, dry, dryOf(ourOut, before))
		}
		if !a.v13 {
			bdOut = "[]\n"
			if id != "" {
				bdOut, bdFrom, bdTo = theirs(env, agent, "update", a.prefix+strings.TrimPrefix(id, b.prefix), "--claim", "--json")
			}
		}
		same(agent, bdOut, ourOut, bdFrom, bdTo, ourFrom, ourTo)
		if id == "" {
			break
		}
		got = append(got, "PFX"+strings.TrimPrefix(id, b.prefix))
	}
	assert.DeepEqual(t, got, want)
	if a.v13 { // drained, in the envelope
		bdOut, _, _ := theirs(envelope, "agent-0", "ready", "--claim", "--json")
		ourOut, _, _ := ours(envelope, "agent-0")
		assert.Equal(t, ourOut, bdOut)
		assert.Equal(t, ourOut, "{\n  \"data\": [],\n  \"schema_version\": 1\n}\n")
	}
	if !a.v13 { // drained for bd too: no open issue is ready
		var ready []struct{ ID, Status string }
		a.as("agent-0").JSON(&ready, "ready")
		assert.Assert(t, !slices.ContainsFunc(ready, func(r struct{ ID, Status string }) bool { return r.Status == "open" }), "%v", ready)
	}
	t.Logf("%d claims compared, each after a dry run", compared)
}

func TestBdJSONParitySQLite(t *testing.T) {
	for _, r := range bdReleases {
		if !r.claimFlag { // bd before v0.42 has no update --claim to compare with
			continue
		}
		v := r.version
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			bdJSONParity(t, sqliteTwin(t, v), sqliteTwin(t, v), []string{"PFX-e1", "PFX-d1", "PFX-a1", "PFX-b1", "PFX-w1"})
		})
	}
}

// bdJSONDoltOrder is what bd ready --claim takes in a Dolt twin, after
// PFX-e1.1.
var bdJSONDoltOrder = []string{"PFX-e1", "PFX-d1", "PFX-wisp-w2", "PFX-a1", "PFX-w1"}

func TestBdJSONParityServer(t *testing.T) {
	bdJSONParity(t, serverTwin(t), serverTwin(t), bdJSONDoltOrder)
}

func TestBdJSONParityProxied(t *testing.T) {
	bdJSONParity(t, proxiedTwin(t), proxiedTwin(t), bdJSONDoltOrder)
}

// --bd-json's outcomes but a claim, on a bd v0.49.6 workspace: nothing
// claimable prints [] with exit 0, as bd does (a dry run and --json too);
// an error keeps bd-claim's exit status and code, its JSON on stderr and
// nothing on stdout, a command line that does not parse included once
// --bd-json is on it; --human, --pretty and --explain are refused with it.
// Nothing is written.
func TestBdJSONOutcomes(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	for _, c := range []struct {
		dir  string
		args []string
		exit int
		code string
	}{
		{root, []string{"--bd-json", "--label", "no-such-label"}, 0, ""},
		{root, []string{"--bd-json", "--label", "no-such-label", "--dry-run"}, 0, ""},
		{root, []string{"--json", "--bd-json", "--label", "no-such-label"}, 0, ""},
		{root, []string{"--bd-json", "--id", "fx-none"}, 7, "ISSUE_NOT_FOUND"},
		{t.TempDir(), []string{"--bd-json"}, 5, "WORKSPACE_NOT_FOUND"},
		{root, []string{"--bd-json", "--human"}, 2, "INVALID_ARGUMENT"},
		{root, []string{"--pretty", "--bd-json"}, 2, "INVALID_ARGUMENT"},
		{root, []string{"--bd-json", "--dry-run", "--explain"}, 2, "INVALID_ARGUMENT"},
		{root, []string{"--bd-json", "--bogus"}, 2, "INVALID_ARGUMENT"},
		{root, []string{"--bogus", "--bd-json"}, 2, "INVALID_ARGUMENT"},
		{root, []string{"--bd-json=maybe"}, 2, "INVALID_ARGUMENT"},
		{root, []string{"--bd-json=false", "--bd-json=1", "--bogus"}, 2, "INVALID_ARGUMENT"},
	} {
		r := run(t, c.dir, nil, append([]string{"--agent", "a", "--quiet"}, c.args...)...)
		assert.Equal(t, r.ExitCode, c.exit, "%q: %s", c.args, r.Combined())
		if c.exit == 0 {
			assert.Equal(t, r.Stdout(), "[]\n", "%q", c.args)
			assert.Equal(t, r.Stderr(), "", "%q", c.args)
			continue
		}
		assert.Equal(t, r.Stdout(), "", "%q", c.args)
		var e struct {
			Status string
			Error  struct{ Code, Message string }
		}
		assert.NilError(t, json.Unmarshal([]byte(r.Stderr()), &e), "%q: %s", c.args, r.Stderr())
		assert.Equal(t, e.Status+" "+e.Error.Code, "error "+c.code, "%q", c.args)
	}
	// Without --bd-json on the command line (--bd-json=false, or after
	// --), an error is the JSON contract's, on stdout.
	for _, args := range [][]string{{"--bd-json=false", "--bogus"}, {"--bogus", "--", "--bd-json"}} {
		r := run(t, root, nil, append([]string{"--agent", "a", "--quiet"}, args...)...)
		r.Assert(t, icmd.Expected{ExitCode: 2, Out: `"code":"INVALID_ARGUMENT"`, Err: icmd.None})
	}
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
}
