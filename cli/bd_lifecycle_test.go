package cli_test

// The claim lifecycle seen by the real bd (v0.27.2, v0.47.1, v0.49.6): release,
// failed attempts and abandonment, reset, leases with heartbeat, takeover
// and reap, and completion left to bd. Every state bd-claim writes must be
// what bd show, bd ready, bd list and bd export read back.

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// abandonedLabel is the default label of an abandoned issue.
const abandonedLabel = "claim:abandoned"

// bdc runs bd-claim ARGS --json --quiet in dir (ARGS may start with a
// command: release, heartbeat...), requires exit status want and decodes
// the output.
func bdc(t *testing.T, dir string, want int, args ...string) result {
	t.Helper()
	r := run(t, dir, nil, slices.Concat(args, []string{"--json", "--quiet"})...)
	r.Assert(t, icmd.Expected{ExitCode: want})
	var out result
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &out), r.Combined())
	if want == 0 || want == 3 { // 3: nothing to claim is no error
		assert.Assert(t, out.Status == "ok" && out.Error == nil, r.Combined())
	} else {
		assert.Assert(t, out.Status == "error" && out.Error != nil, r.Combined())
	}
	return out
}

// refused runs a bd-claim command that must be refused (exit 7) with code.
func refused(t *testing.T, dir string, code claim.Code, args ...string) result {
	t.Helper()
	out := bdc(t, dir, 7, args...)
	assert.Check(t, is.Equal(out.Error.Code, code), "bd-claim %s: %s", strings.Join(args, " "), out.Error.Message)
	return out
}

// claimStats is bd-claim stats --json.
func claimStats(t *testing.T, dir string, flags ...string) claim.Stats {
	t.Helper()
	r := run(t, dir, nil, slices.Concat([]string{"stats", "--json", "--quiet"}, flags)...)
	r.Assert(t, icmd.Success)
	var st claim.Stats
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &st), r.Combined())
	return st
}

// heldBy maps each agent to the ids of its in_progress issues, as stats says.
func heldBy(st claim.Stats) map[string][]string {
	m := map[string][]string{}
	for _, a := range st.InProgress {
		for _, i := range a.Issues {
			m[a.Agent] = append(m[a.Agent], i.ID)
		}
	}
	return m
}

// bdComment is a comment as bd show --json prints it.
type bdComment struct {
	Author string `json:"author"`
	Text   string `json:"text"`
}

// bdShown is bd show --json of one issue, with its comments.
type bdShown struct {
	bdIssue
	Comments []bdComment `json:"comments"`
}

func showFull(b *bdTool, id string) bdShown {
	b.t.Helper()
	var list []bdShown
	b.json(&list, "show", id)
	assert.Assert(b.t, len(list) == 1 && list[0].ID == id, "bd show %s: %+v", id, list)
	return list[0]
}

// hasComment reports whether issue has a comment by author containing text.
func (s bdShown) hasComment(author, text string) bool {
	return slices.ContainsFunc(s.Comments, func(c bdComment) bool { return c.Author == author && strings.Contains(c.Text, text) })
}

// listLabel is bd list --label LABEL: the ids, sorted.
func listLabel(b *bdTool, label string) []string {
	b.t.Helper()
	var list []bdIssue
	b.json(&list, "list", "--label", label)
	ids := []string{}
	for _, i := range list {
		ids = append(ids, i.ID)
	}
	slices.Sort(ids)
	return ids
}

// inReady returns issue id as bd ready lists it, and whether it does.
func inReady(b *bdTool, id string) (bdIssue, bool) {
	b.t.Helper()
	ready := b.ready()
	i := slices.IndexFunc(ready, func(r bdIssue) bool { return r.ID == id })
	if i < 0 {
		return bdIssue{}, false
	}
	return ready[i], true
}

// sortedLabels is labels sorted, nil for none.
func sortedLabels(labels []string) []string {
	if len(labels) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(labels))
}

// exportedComments are the texts of an exported issue's comments.
func exportedComments(line map[string]any) []string {
	list, _ := line["comments"].([]any)
	var texts []string
	for _, c := range list {
		m, _ := c.(map[string]any)
		texts = append(texts, fmt.Sprint(m["author"], ": ", m["text"]))
	}
	return texts
}

func exportedLabels(line map[string]any) []string {
	list, _ := line["labels"].([]any)
	var labels []string
	for _, l := range list {
		labels = append(labels, fmt.Sprint(l))
	}
	return sortedLabels(labels)
}

// exportRoundTrip exports the workspace and checks that bd, importing the
// export back (dry run), finds the database already equal to it. Only
// issues bd itself closed may be reported as colliding: bd v0.49.6 reports
// every issue bd closed so, even one bd alone claimed and closed (see
// bdClosedControl and sameCollisions), so the caller names them.
func exportRoundTrip(t *testing.T, b *bdTool, closedByBd ...string) map[string]map[string]any {
	t.Helper()
	file, byID := b.export()
	imported := b.ok("import", "-i", file, "--dry-run").Combined()
	assert.Check(t, is.Contains(imported, "update 0 existing issues"))
	colliding := collidingIDs(imported)
	for _, id := range colliding {
		assert.Check(t, slices.Contains(closedByBd, id), "bd import finds %s colliding:\n%s", id, imported)
	}
	return byID
}

// collidingIDs are the ids of bd import's "Colliding issue IDs: [a b]" line.
func collidingIDs(report string) []string {
	for _, line := range strings.Split(report, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Colliding issue IDs:"); ok {
			return strings.Fields(strings.Trim(strings.TrimSpace(rest), "[]"))
		}
	}
	return nil
}

// bdClosedControl is an issue bd claims and closes alone (bd's claim, bd
// close): what bd's own completion looks like, export included.
func bdClosedControl(t *testing.T, b *bdTool) string {
	t.Helper()
	id := b.create("Closed by bd alone", "-d", "control")
	b.as("agent-z").claim(id)
	b.as("agent-z").ok("close", id, "--reason", "done")
	return id
}

// sameCollisions checks that bd import reports a closed issue bd-claim
// claimed as colliding exactly when it reports bd's own control so.
func sameCollisions(t *testing.T, b *bdTool, id, control string) {
	t.Helper()
	file, _ := b.export()
	colliding := collidingIDs(b.ok("import", "-i", file, "--dry-run").Combined())
	t.Logf("bd import --dry-run of bd export: colliding %v", colliding)
	assert.Check(t, is.Equal(slices.Contains(colliding, id), slices.Contains(colliding, control)),
		"bd import's collisions %v: %s (claimed by bd-claim) and %s (by bd) differ", colliding, id, control)
}

// checkCommentExport checks that bd export carries bd-claim's comment on id
// exactly as it carries a comment bd itself added (on control): v0.49.6
// exports comments, v0.47.1 exports none at all.
func checkCommentExport(t *testing.T, exported map[string]map[string]any, exportsComments bool, id, want, control, controlWant string) {
	t.Helper()
	mine, bds := exportedComments(exported[id]), exportedComments(exported[control])
	if !exportsComments {
		assert.Check(t, is.Len(bds, 0), "this bd exports comments after all: %v", bds)
		assert.Check(t, is.Len(mine, 0), "export of %s: %v", id, mine)
		return
	}
	assert.Check(t, slices.ContainsFunc(bds, func(c string) bool { return strings.Contains(c, controlWant) }), "bd's own comment, exported: %v", bds)
	assert.Check(t, slices.ContainsFunc(mine, func(c string) bool { return strings.Contains(c, want) }), "export of %s: %v, want a comment %q", id, mine, want)
}

// flushJSONL makes bd write (a note on issue other), which flushes every
// dirty issue to .beads/issues.jsonl, and returns that file's issues. No
// dirty mark may be left.
func flushJSONL(t *testing.T, b *bdTool, other string) map[string]map[string]any {
	t.Helper()
	b.ok("update", other, "--notes", "flush "+time.Now().Format(time.RFC3339Nano))
	assert.Check(t, is.Len(dirtyIssues(t, b.db()), 0), "dirty_issues after bd's flush")
	return jsonLines(t, filepath.Join(b.Dir, ".beads", "issues.jsonl"))
}

func lastEventID(t *testing.T, conn *sql.DB) int64 {
	t.Helper()
	var id int64
	assert.NilError(t, conn.QueryRow("SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id))
	return id
}

// checkIntegrity runs SQLite's own checks on the workspace's database.
func checkIntegrity(t *testing.T, conn *sql.DB) {
	t.Helper()
	var integrity string
	assert.NilError(t, conn.QueryRow("PRAGMA integrity_check").Scan(&integrity))
	assert.Check(t, is.Equal(integrity, "ok"))
	rows, err := conn.Query("PRAGMA foreign_key_check")
	assert.NilError(t, err)
	defer rows.Close()
	assert.Check(t, !rows.Next(), "PRAGMA foreign_key_check found violations")
}

// waitPast sleeps until t has passed on this machine's clock (the one
// bd-claim reads), with a margin.
func waitPast(until time.Time) { time.Sleep(time.Until(until) + 150*time.Millisecond) }

func TestBdLifecycle(t *testing.T) {
	for _, br := range bdReleases {
		t.Run(br.version, func(t *testing.T) {
			t.Run("release", func(t *testing.T) { testBdLifecycleRelease(t, br) })
			t.Run("abandon", func(t *testing.T) { testBdLifecycleAbandon(t, br) })
			t.Run("lease", func(t *testing.T) { testBdLifecycleLease(t, br) })
			t.Run("completion", func(t *testing.T) { testBdLifecycleCompletion(t, br) })
		})
	}
}

// Release twins: bd-claim release and bd update --status open --assignee ""
// write the same issue row, the same event and the same dirty mark.
func testBdLifecycleRelease(t *testing.T, br bdRelease) {
	bd := bdWorkspace(t, br).as("agent-a")
	fields := []string{"-d", "the same description", "-t", "bug", "-p", "1", "-l", "backend", "--design", "a design", "--acceptance", "it works"}
	if br.createsNotes {
		fields = append(fields, "--notes", "notes")
	}
	twin := func() string { return bd.create("Twin", fields...) }
	viaRelease, viaUpdate := twin(), twin()
	conn := bd.db()
	created := readDBIssue(t, conn, viaRelease)
	assert.Equal(t, readDBIssue(t, conn, viaUpdate).ContentHash, created.ContentHash)

	claims := map[string]result{}
	for _, id := range []string{viaRelease, viaUpdate} {
		c := bdc(t, bd.Dir, 0, "--agent", "agent-a", "--id", id)
		assert.Assert(t, c.Issue != nil && c.Issue.ID == id)
		assert.Check(t, c.ClaimID > 0)
		assert.Check(t, c.LeaseExpiresAt == nil, "a claim without --lease has no lease")
		claims[id] = c
		// The claim_id is the id of the claim event.
		ev := claimtest.Events(t, conn, id, c.ClaimID-1)
		assert.Assert(t, len(ev) > 0)
		assert.Check(t, is.Equal(ev[0].ID, c.ClaimID))
		assert.Check(t, is.Equal(ev[0].Type, br.claimEvent))
		shown := bd.show(id)
		assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "in_progress/agent-a"))
	}
	before := lastEventID(t, conn)

	rel := bdc(t, bd.Dir, 0, "release", "--agent", "agent-a", "--id", viaRelease)
	bd.ok("update", viaUpdate, "--status", "open", "--assignee", "", "--no-auto-flush")

	assert.Assert(t, rel.Issue != nil)
	assert.Check(t, is.Equal(rel.ClaimID, claims[viaRelease].ClaimID))
	assert.Check(t, rel.Attempt == nil, "a plain release is no attempt: %+v", rel.Attempt)
	released, updated := readDBIssue(t, conn, viaRelease), readDBIssue(t, conn, viaUpdate)
	assert.Check(t, is.DeepEqual(released, dbIssue{Status: "open", Assignee: "", ContentHash: rel.Issue.ContentHash, UpdatedAt: rel.Issue.UpdatedAt}))
	assert.Check(t, is.Equal(rel.Issue.Status+"/"+rel.Issue.Assignee, "open/"))
	assert.Check(t, is.Equal(updated.Status+"/"+updated.Assignee, "open/"))
	// Each tool's own hash: equal, and back to the hash of the issue as created.
	assert.Check(t, is.Equal(released.ContentHash, updated.ContentHash))
	assert.Check(t, is.Equal(released.ContentHash, created.ContentHash))
	assert.Check(t, released.ContentHash != claims[viaRelease].Issue.ContentHash)
	u, err := time.Parse(time.RFC3339Nano, released.UpdatedAt)
	assert.Check(t, err == nil && u.Format(time.RFC3339Nano) == released.UpdatedAt, "updated_at %q", released.UpdatedAt)
	claimed, err := time.Parse(time.RFC3339Nano, claims[viaRelease].Issue.UpdatedAt)
	assert.NilError(t, err)
	assert.Check(t, u.After(claimed), "updated_at %s -> %s", claimed, released.UpdatedAt)
	// Every other column alike too (assignee '' and not NULL, as bd writes it).
	assert.Check(t, is.DeepEqual(issueColumns(t, conn, viaRelease), issueColumns(t, conn, viaUpdate)))

	// One event each: the same type, actor and new value; old_value the
	// issue as claimed; bd-claim's comment says it released.
	evR, evU := claimtest.Events(t, conn, viaRelease, before), claimtest.Events(t, conn, viaUpdate, before)
	assert.Assert(t, is.Len(evR, 1), "%+v", evR)
	assert.Assert(t, is.Len(evU, 1), "%+v", evU)
	assert.Check(t, is.Equal(evR[0].Type, "status_changed"))
	assert.Check(t, is.Equal(evR[0].Type, evU[0].Type))
	assert.Check(t, is.Equal(evR[0].Actor, "agent-a"))
	assert.Check(t, is.Equal(evR[0].Actor, evU[0].Actor))
	assert.Check(t, is.Equal(evR[0].NewValue.String, `{"assignee":"","status":"open"}`))
	assert.Check(t, is.DeepEqual(evR[0].NewValue, evU[0].NewValue))
	assert.Check(t, is.Equal(evR[0].Comment, sql.NullString{String: "bd-claim released: no reason given", Valid: true}))
	assert.Check(t, !evU[0].Comment.Valid, "bd's comment: %+v", evU[0].Comment)
	oldValues := map[string]map[string]any{}
	for id, e := range map[string]claimtest.Event{viaRelease: evR[0], viaUpdate: evU[0]} {
		_, err := time.Parse(time.DateTime, e.CreatedAt)
		assert.Check(t, err == nil, "created_at of %s's event: %q", id, e.CreatedAt)
		var old map[string]any
		assert.NilError(t, json.Unmarshal([]byte(e.OldValue.String), &old), "old_value %q", e.OldValue.String)
		assert.Check(t, is.Equal(old["id"], id))
		assert.Check(t, is.Equal(old["updated_at"], claims[id].Issue.UpdatedAt), "old_value.updated_at of %s", id)
		assert.Check(t, is.Equal(old["status"], "in_progress"))
		assert.Check(t, is.Equal(old["assignee"], "agent-a"))
		delete(old, "id")
		delete(old, "created_at")
		delete(old, "updated_at")
		oldValues[id] = old
	}
	assert.Check(t, is.DeepEqual(oldValues[viaRelease], oldValues[viaUpdate]))

	dirty := dirtyIssues(t, conn)
	for _, id := range []string{viaRelease, viaUpdate} {
		d, ok := dirty[id]
		assert.Check(t, ok && d.MarkedAtOK, "dirty_issues of %s: %+v (present %v)", id, d, ok)
	}
	assert.Check(t, is.DeepEqual(dirty[viaRelease], dirty[viaUpdate]))

	// bd sees both open and unassigned, and offers both again.
	for _, id := range []string{viaRelease, viaUpdate} {
		shown := bd.show(id)
		assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "open/"), id)
		r, ok := inReady(bd, id)
		assert.Check(t, ok, "bd ready does not list %s", id)
		assert.Check(t, is.Equal(r.Status+"/"+r.Assignee, "open/"), id)
	}
	assert.Check(t, is.Equal(bd.show(viaRelease).UpdatedAt, released.UpdatedAt))

	// A plain release has no backoff: the next claim takes the oldest twin
	// again, and its release with a reason is a bd comment.
	again := bdc(t, bd.Dir, 0, "--agent", "agent-b")
	assert.Assert(t, again.Issue != nil)
	assert.Check(t, is.Equal(again.Issue.ID, viaRelease))
	assert.Check(t, again.ClaimID > rel.ClaimID)
	assert.Check(t, is.Equal(bd.show(viaRelease).Assignee, "agent-b"))
	refused(t, bd.Dir, claim.ENotClaimable, "release", "--agent", "agent-b", "--id", viaUpdate)
	refused(t, bd.Dir, claim.EAlready, "release", "--agent", "agent-a", "--id", viaRelease)
	bdc(t, bd.Dir, 0, "release", "--agent", "agent-b", "--id", viaRelease, "--reason", "handing over to a human")
	shown := showFull(bd, viaRelease)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "open/"))
	assert.Check(t, shown.hasComment("agent-b", "bd-claim: agent-b released the issue: handing over to a human"), "comments: %+v", shown.Comments)
	ev := claimtest.Events(t, conn, viaRelease, again.ClaimID)
	assert.Assert(t, is.Len(ev, 1), "%+v", ev)
	assert.Check(t, is.Equal(ev[0].Comment.String, "bd-claim released: handing over to a human"))
	assert.Check(t, is.Equal(readDBIssue(t, conn, viaRelease).ContentHash, created.ContentHash))

	// bd export carries it: open, unassigned, and the comment as bd carries its own.
	bd.ok("comments", "add", viaUpdate, "a comment bd added")
	exported := exportRoundTrip(t, bd)
	for _, id := range []string{viaRelease, viaUpdate} {
		line := exported[id]
		assert.Check(t, is.Equal(line["status"], "open"), id)
		_, assigned := line["assignee"]
		assert.Check(t, !assigned, "export of %s: %v", id, line)
		assert.Check(t, is.DeepEqual(exportedLabels(line), []string{"backend"}), id)
	}
	checkCommentExport(t, exported, br.exportsComments, viaRelease, "agent-b: bd-claim: agent-b released the issue: handing over to a human",
		viaUpdate, "a comment bd added")
	checkIntegrity(t, conn)
}

// Failed attempts: a backoff bd does not know of, then abandonment, a label
// bd lists, and a reset that bd and bd-claim both see.
func testBdLifecycleAbandon(t *testing.T, br bdRelease) {
	bd := bdWorkspace(t, br)
	flaky := bd.create("Flaky", "-d", "fails", "-l", "flaky")
	steady := bd.create("Steady", "-d", "fine", "-l", "steady")
	conn := bd.db()
	createdHash := readDBIssue(t, conn, flaky).ContentHash

	// A first failure under the default policy: 1m of backoff.
	c1 := bdc(t, bd.Dir, 0, "--agent", "agent-a", "--id", flaky)
	start := time.Now()
	f1 := bdc(t, bd.Dir, 0, "release", "--agent", "agent-a", "--id", flaky, "--failed", "--reason", "tests keep failing")
	assert.Check(t, is.Equal(f1.ClaimID, c1.ClaimID))
	assert.Assert(t, f1.Attempt != nil && f1.Attempt.RetryAt != nil, "%+v", f1.Attempt)
	assert.Check(t, is.Equal(f1.Attempt.Failures, 1))
	assert.Check(t, !f1.Attempt.Abandoned)
	retryIn := f1.Attempt.RetryAt.Sub(start)
	assert.Check(t, retryIn > 55*time.Second && retryIn < 65*time.Second, "retry_at %s is %s away", f1.Attempt.RetryAt, retryIn)
	ev := claimtest.Events(t, conn, flaky, c1.ClaimID)
	assert.Assert(t, len(ev) >= 1)
	assert.Check(t, is.Equal(ev[0].Type, "status_changed"))
	assert.Check(t, is.Equal(ev[0].NewValue.String, `{"assignee":"","status":"open"}`))
	assert.Check(t, is.Equal(ev[0].Comment.String, "bd-claim failed: tests keep failing"))

	shown := showFull(bd, flaky)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "open/"))
	assert.Check(t, shown.hasComment("agent-a", "bd-claim: attempt 1 by agent-a failed: tests keep failing"), "comments: %+v", shown.Comments)
	// bd knows nothing of the backoff: bd ready offers the issue...
	r, ok := inReady(bd, flaky)
	assert.Check(t, ok && r.Status == "open" && r.Assignee == "", "bd ready: %+v (listed %v)", r, ok)
	assert.Check(t, is.DeepEqual(listLabel(bd, abandonedLabel), []string{}))
	// ...while bd-claim waits it out.
	none := bdc(t, bd.Dir, 3, "--agent", "agent-b", "--label", "flaky")
	assert.Check(t, none.Issue == nil)
	refused(t, bd.Dir, claim.ENotClaimable, "--agent", "agent-b", "--id", flaky)
	st := claimStats(t, bd.Dir)
	assert.Check(t, len(st.Backoff) == 1 && st.Backoff[0].ID == flaky && st.Backoff[0].Failures == 1, "stats backoff: %+v", st.Backoff)
	assert.Check(t, is.Len(st.Abandoned, 0))

	// Without backoff it is handed out again, and the second failure with
	// --max-failures 1 abandons it.
	c2 := bdc(t, bd.Dir, 0, "--agent", "agent-b", "--label", "flaky", "--backoff-initial", "0")
	assert.Assert(t, c2.Issue != nil)
	assert.Check(t, is.Equal(c2.Issue.ID, flaky))
	assert.Check(t, is.Equal(bd.show(flaky).Assignee, "agent-b"))
	f2 := bdc(t, bd.Dir, 0, "release", "--agent", "agent-b", "--id", flaky, "--failed", "--max-failures", "1", "--reason", "still failing")
	assert.Assert(t, f2.Attempt != nil, "%+v", f2)
	assert.Check(t, is.Equal(f2.Attempt.Failures, 2))
	assert.Check(t, f2.Attempt.Abandoned)
	assert.Check(t, f2.Attempt.RetryAt == nil)

	// bd lists it under the label, shows the label and the failure, and bd
	// wrote nothing else: the label as bd label add writes it, the hash of
	// an open, unassigned issue.
	assert.Check(t, is.DeepEqual(listLabel(bd, abandonedLabel), []string{flaky}))
	assert.Check(t, is.DeepEqual(listLabel(bd, "flaky"), []string{flaky}))
	shown = showFull(bd, flaky)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "open/"))
	assert.Check(t, is.DeepEqual(sortedLabels(shown.Labels), []string{abandonedLabel, "flaky"}))
	assert.Check(t, shown.hasComment("agent-b", "bd-claim: attempt 2 by agent-b failed: still failing"), "comments: %+v", shown.Comments)
	text := bd.ok("show", flaky).Stdout()
	assert.Check(t, is.Contains(text, "still failing"))
	assert.Check(t, is.Contains(text, "tests keep failing"))
	assert.Check(t, is.Contains(text, abandonedLabel))
	// The JSON of the release is the issue as it now is: bd show's labels.
	assert.Assert(t, f2.Issue != nil)
	assert.Check(t, is.DeepEqual(sortedLabels(f2.Issue.Labels), sortedLabels(shown.Labels)),
		"release --failed reported labels %v; bd show says %v", f2.Issue.Labels, shown.Labels)
	row := readDBIssue(t, conn, flaky)
	assert.Check(t, is.Equal(row.ContentHash, createdHash))
	assert.Check(t, is.Equal(row.ContentHash, f2.Issue.ContentHash))
	ev = claimtest.Events(t, conn, flaky, c2.ClaimID)
	assert.Assert(t, is.Len(ev, 2), "%+v", ev)
	assert.Check(t, is.Equal(ev[0].Comment.String, "bd-claim failed: still failing"))
	assert.Check(t, is.Equal(ev[1].Type, "label_added"))
	assert.Check(t, is.Equal(ev[1].Actor, "agent-b"))
	assert.Check(t, is.Equal(ev[1].Comment.String, "Added label: "+abandonedLabel))
	assert.Check(t, !ev[1].OldValue.Valid && !ev[1].NewValue.Valid, "%+v", ev[1])

	// Abandoned: claim-next skips it even with no backoff and the default
	// max-failures (5 > 2): the label alone excludes it. --id refuses it.
	assert.Check(t, bdc(t, bd.Dir, 3, "--agent", "agent-c", "--label", "flaky", "--backoff-initial", "0").Issue == nil)
	refused(t, bd.Dir, claim.ENotClaimable, "--agent", "agent-c", "--id", flaky, "--backoff-initial", "0")
	other := bdc(t, bd.Dir, 0, "--agent", "agent-c", "--backoff-initial", "0")
	assert.Assert(t, other.Issue != nil)
	assert.Check(t, is.Equal(other.Issue.ID, steady))
	st = claimStats(t, bd.Dir, "--max-failures", "1")
	assert.Check(t, is.DeepEqual(st.Abandoned, []claim.Abandoned{{ID: flaky, Failures: 2, Labelled: true}}))

	// bd export carries the abandoned state.
	bd.ok("comments", "add", steady, "a comment bd added")
	exported := exportRoundTrip(t, bd)
	line := exported[flaky]
	assert.Check(t, is.Equal(line["status"], "open"))
	_, assigned := line["assignee"]
	assert.Check(t, !assigned, "export: %v", line)
	assert.Check(t, is.DeepEqual(exportedLabels(line), []string{abandonedLabel, "flaky"}))
	checkCommentExport(t, exported, br.exportsComments, flaky, "agent-b: bd-claim: attempt 2 by agent-b failed: still failing",
		steady, "a comment bd added")
	// bd's next write flushes it to .beads/issues.jsonl, for git.
	flushed := flushJSONL(t, bd, steady)
	assert.Check(t, is.Equal(fmt.Sprint(flushed[flaky]["status"], "/", flushed[flaky]["assignee"]), "open/<nil>"))
	assert.Check(t, is.DeepEqual(exportedLabels(flushed[flaky]), []string{abandonedLabel, "flaky"}))

	// Reset: the label goes as bd label remove takes it away, and the
	// failures stop counting.
	beforeReset := lastEventID(t, conn)
	rs := bdc(t, bd.Dir, 0, "reset", "--id", flaky, "--max-failures", "1")
	assert.Assert(t, rs.Reset != nil && rs.Issue != nil, "%+v", rs)
	assert.Check(t, is.Equal(rs.Reset.Cleared, 2))
	assert.Check(t, rs.Reset.LabelRemoved)
	assert.Check(t, is.DeepEqual(listLabel(bd, abandonedLabel), []string{}))
	shown = showFull(bd, flaky)
	assert.Check(t, is.DeepEqual(sortedLabels(shown.Labels), []string{"flaky"}))
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "open/"))
	assert.Check(t, shown.hasComment("bd-claim", "reset the attempt history (2 failed attempts cleared)"), "comments: %+v", shown.Comments)
	assert.Check(t, is.DeepEqual(sortedLabels(rs.Issue.Labels), sortedLabels(shown.Labels)),
		"reset reported labels %v; bd show says %v", rs.Issue.Labels, shown.Labels)
	ev = claimtest.Events(t, conn, flaky, beforeReset)
	assert.Check(t, slices.ContainsFunc(ev, func(e claimtest.Event) bool {
		return e.Type == "label_removed" && e.Comment.String == "Removed label: "+abandonedLabel && e.Actor == "bd-claim"
	}), "%+v", ev)
	assert.Check(t, is.Equal(readDBIssue(t, conn, flaky).ContentHash, createdHash))
	assert.Check(t, is.Len(claimStats(t, bd.Dir, "--max-failures", "1").Abandoned, 0))
	flushed = flushJSONL(t, bd, steady)
	assert.Check(t, is.DeepEqual(exportedLabels(flushed[flaky]), []string{"flaky"}))
	assert.Check(t, is.Equal(flushed[flaky]["updated_at"], readDBIssue(t, conn, flaky).UpdatedAt))

	// Claimable again under the default policy: neither backoff nor the
	// failures count any more.
	c3 := bdc(t, bd.Dir, 0, "--agent", "agent-d", "--label", "flaky")
	assert.Assert(t, c3.Issue != nil)
	assert.Check(t, is.Equal(c3.Issue.ID, flaky))
	shown = showFull(bd, flaky)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "in_progress/agent-d"))
	exported = exportRoundTrip(t, bd)
	assert.Check(t, is.Equal(fmt.Sprint(exported[flaky]["status"], "/", exported[flaky]["assignee"]), "in_progress/agent-d"))
	assert.Check(t, is.DeepEqual(exportedLabels(exported[flaky]), []string{"flaky"}))
	checkIntegrity(t, conn)
}

// Leases: a heartbeat bd does not see, a takeover and a reap it does, and
// an issue bd closed meanwhile that neither touches.
func testBdLifecycleLease(t *testing.T, br bdRelease) {
	bd := bdWorkspace(t, br)
	taken := bd.create("Taken over", "-d", "x", "-l", "takeover")
	reaped := bd.create("Reaped", "-d", "x", "-l", "reap")
	kept := bd.create("Kept alive", "-d", "x", "-l", "kept")
	done := bd.create("Closed while leased", "-d", "x", "-l", "done")
	conn := bd.db()

	claims := map[string]result{}
	var latest time.Time
	for _, id := range []string{taken, reaped, kept, done} {
		c := bdc(t, bd.Dir, 0, "--agent", "agent-a", "--id", id, "--lease", "1s")
		assert.Assert(t, c.Issue != nil && c.LeaseExpiresAt != nil, "%+v", c)
		assert.Check(t, is.Equal(c.Issue.Assignee, "agent-a"))
		claims[id] = c
		if c.LeaseExpiresAt.After(latest) {
			latest = *c.LeaseExpiresAt
		}
	}

	// A heartbeat rewrites the claim event's lease and nothing bd reads.
	row, cols, events := readDBIssue(t, conn, kept), issueColumns(t, conn, kept), claimtest.Count(t, conn, "SELECT count(*) FROM events")
	hb := bdc(t, bd.Dir, 0, "heartbeat", "--agent", "agent-a", "--id", kept, "--lease", "1h")
	assert.Check(t, is.Equal(hb.ClaimID, claims[kept].ClaimID))
	assert.Assert(t, hb.LeaseExpiresAt != nil)
	assert.Check(t, time.Until(*hb.LeaseExpiresAt) > 59*time.Minute, "lease until %s", hb.LeaseExpiresAt)
	assert.Check(t, is.Equal(claimtest.Count(t, conn, "SELECT count(*) FROM events"), events))
	assert.Check(t, is.DeepEqual(readDBIssue(t, conn, kept), row))
	assert.Check(t, is.DeepEqual(issueColumns(t, conn, kept), cols))
	var comment string
	assert.NilError(t, conn.QueryRow("SELECT comment FROM events WHERE id = ?", hb.ClaimID).Scan(&comment))
	assert.Check(t, is.Equal(comment, "bd-claim lease until "+hb.LeaseExpiresAt.UTC().Format(time.RFC3339)+" (1h0m0s)"))
	shown := bd.show(kept)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "in_progress/agent-a"))
	assert.Check(t, is.Equal(shown.UpdatedAt, row.UpdatedAt))

	// bd completes one of the leased issues; that write flushes the claims
	// to .beads/issues.jsonl: a copy is what a teammate's older JSONL holds.
	bd.as("agent-a").ok("close", done)
	assert.Check(t, is.Equal(bd.show(done).Status, "closed"))
	stale := filepath.Join(t.TempDir(), "stale.jsonl")
	claimtest.CopyFile(t, filepath.Join(bd.Dir, ".beads", "issues.jsonl"), stale)
	for _, id := range []string{taken, reaped, kept} {
		assert.Check(t, is.Equal(fmt.Sprint(jsonLines(t, stale)[id]["assignee"]), "agent-a"), id)
	}

	waitPast(latest)
	st := claimStats(t, bd.Dir)
	var expired []string
	for _, e := range st.ExpiredLeases {
		expired = append(expired, e.ID)
	}
	slices.Sort(expired)
	assert.Check(t, is.DeepEqual(expired, slices.Sorted(slices.Values([]string{taken, reaped}))))
	held := heldBy(st)["agent-a"]
	slices.Sort(held)
	assert.Check(t, is.DeepEqual(held, slices.Sorted(slices.Values([]string{taken, reaped, kept}))))

	// Takeover: another agent's claim-next takes the expired claim, and bd
	// shows the new holder.
	to := bdc(t, bd.Dir, 0, "--agent", "agent-b", "--label", "takeover")
	assert.Assert(t, to.Issue != nil)
	assert.Check(t, is.Equal(to.Issue.ID, taken))
	assert.Assert(t, to.TookOver != nil, "%+v", to)
	assert.Check(t, is.Equal(to.TookOver.Agent, "agent-a"))
	assert.Check(t, is.Equal(to.TookOver.ClaimID, claims[taken].ClaimID))
	assert.Check(t, to.ClaimID > claims[taken].ClaimID)
	full := showFull(bd, taken)
	assert.Check(t, is.Equal(full.Status+"/"+full.Assignee, "in_progress/agent-b"))
	assert.Check(t, full.hasComment("agent-b", "taken over by agent-b"), "comments: %+v", full.Comments)
	takenRow := readDBIssue(t, conn, taken)
	assert.Check(t, is.Equal(takenRow.ContentHash, to.Issue.ContentHash))
	// The old holder is fenced off; bd's view does not move.
	refused(t, bd.Dir, claim.EAlready, "release", "--agent", "agent-a", "--id", taken)
	refused(t, bd.Dir, claim.EAlready, "heartbeat", "--agent", "agent-a", "--id", taken, "--lease", "1h")
	refused(t, bd.Dir, claim.EAlready, "release", "--agent", "agent-b", "--id", taken, "--claim-id", fmt.Sprint(claims[taken].ClaimID))
	assert.Check(t, is.DeepEqual(readDBIssue(t, conn, taken), takenRow))
	// Neither the kept-alive issue nor the one bd closed is anyone's to take.
	for _, label := range []string{"kept", "done"} {
		assert.Check(t, bdc(t, bd.Dir, 3, "--agent", "agent-c", "--label", label).Issue == nil, label)
	}

	// Reap: the other expired claim goes back to open, and bd offers it
	// again; a dry run only lists it.
	before := lastEventID(t, conn)
	dry := bdc(t, bd.Dir, 0, "reap", "--agent", "reaper", "--dry-run")
	assert.Check(t, len(dry.Reaped) == 1 && dry.Reaped[0].ID == reaped, "%+v", dry.Reaped)
	assert.Check(t, is.Equal(lastEventID(t, conn), before))
	shown = bd.show(reaped)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "in_progress/agent-a"))
	rp := bdc(t, bd.Dir, 0, "reap", "--agent", "reaper")
	assert.Check(t, is.Len(rp.Reaped, 1), "%+v", rp.Reaped)
	if len(rp.Reaped) == 1 {
		assert.Check(t, is.Equal(rp.Reaped[0].ID, reaped))
		assert.Check(t, is.Equal(rp.Reaped[0].Holder, "agent-a"))
		assert.Check(t, is.Equal(rp.Reaped[0].ClaimID, claims[reaped].ClaimID))
		assert.Check(t, rp.Reaped[0].LeaseUntil.Equal(*claims[reaped].LeaseExpiresAt))
	}
	full = showFull(bd, reaped)
	assert.Check(t, is.Equal(full.Status+"/"+full.Assignee, "open/"))
	assert.Check(t, full.hasComment("reaper", "reaped by reaper"), "comments: %+v", full.Comments)
	r, ok := inReady(bd, reaped)
	assert.Check(t, ok && r.Status == "open" && r.Assignee == "", "bd ready: %+v (listed %v)", r, ok)
	ev := claimtest.Events(t, conn, reaped, before)
	assert.Assert(t, is.Len(ev, 1), "%+v", ev)
	assert.Check(t, is.Equal(ev[0].Type, "status_changed"))
	assert.Check(t, is.Equal(ev[0].Actor, "reaper"))
	assert.Check(t, is.Equal(ev[0].NewValue.String, `{"assignee":"","status":"open"}`))
	assert.Check(t, strings.HasPrefix(ev[0].Comment.String, "bd-claim expired: "), ev[0].Comment.String)
	for _, id := range []string{taken, kept, done} {
		assert.Check(t, is.Len(claimtest.Events(t, conn, id, before), 0), "reap wrote to %s", id)
	}
	shown = bd.show(kept)
	assert.Check(t, is.Equal(shown.Status+"/"+shown.Assignee, "in_progress/agent-a"))
	assert.Check(t, is.Equal(bd.show(done).Status, "closed"))
	assert.Check(t, is.Equal(bd.show(taken).Assignee, "agent-b"))
	assert.Check(t, is.Len(bdc(t, bd.Dir, 0, "reap").Reaped, 0))
	st = claimStats(t, bd.Dir)
	assert.Check(t, is.Len(st.ExpiredLeases, 0))
	assert.Check(t, is.DeepEqual(heldBy(st), map[string][]string{"agent-a": {kept}, "agent-b": {taken}}))

	// Importing the older JSONL keeps the takeover and the reap, whose
	// updated_at is newer.
	rows := map[string]dbIssue{}
	for _, id := range []string{taken, reaped, kept} {
		rows[id] = readDBIssue(t, conn, id)
	}
	bd.ok("import", "-i", stale)
	for id, row := range rows {
		assert.Check(t, is.DeepEqual(readDBIssue(t, conn, id), row), "%s after importing the older JSONL", id)
	}

	// bd export carries all of it.
	control := bdClosedControl(t, bd)
	sameCollisions(t, bd, done, control)
	exported := exportRoundTrip(t, bd, done, control)
	for id, want := range map[string]string{taken: "in_progress/agent-b", reaped: "open/<nil>", kept: "in_progress/agent-a", done: "closed/agent-a"} {
		assert.Check(t, is.Equal(fmt.Sprint(exported[id]["status"], "/", exported[id]["assignee"]), want), id)
	}
	bd.ok("comments", "add", kept, "a comment bd added")
	exported = exportRoundTrip(t, bd, done, control)
	checkCommentExport(t, exported, br.exportsComments, reaped, "reaper: bd-claim: lease of agent-a (claim "+fmt.Sprint(claims[reaped].ClaimID)+") ended",
		kept, "a comment bd added")
	checkCommentExport(t, exported, br.exportsComments, taken, "agent-b: bd-claim: lease of agent-a (claim "+fmt.Sprint(claims[taken].ClaimID)+") ended",
		kept, "a comment bd added")
	checkIntegrity(t, conn)
}

// Completion stays bd's: once bd closed a claimed issue, bd-claim neither
// releases, renews nor hands it out, and stats forgets it.
func testBdLifecycleCompletion(t *testing.T, br bdRelease) {
	bd := bdWorkspace(t, br)
	id := bd.create("Finish me", "-d", "x")
	conn := bd.db()
	c := bdc(t, bd.Dir, 0, "--agent", "agent-a", "--id", id)
	assert.Assert(t, c.Issue != nil)
	assert.Check(t, is.DeepEqual(heldBy(claimStats(t, bd.Dir)), map[string][]string{"agent-a": {id}}))

	bd.as("agent-a").ok("close", id, "--reason", "done")
	shown := bd.show(id)
	assert.Check(t, is.Equal(shown.Status, "closed"))
	row, events := readDBIssue(t, conn, id), claimtest.Count(t, conn, "SELECT count(*) FROM events")

	rel := refused(t, bd.Dir, claim.ENotClaimable, "release", "--agent", "agent-a", "--id", id)
	assert.Check(t, is.Contains(rel.Error.Message, "closed"))
	refused(t, bd.Dir, claim.ENotClaimable, "release", "--agent", "agent-a", "--id", id, "--failed")
	refused(t, bd.Dir, claim.ENotClaimable, "heartbeat", "--agent", "agent-a", "--id", id, "--lease", "1m")
	refused(t, bd.Dir, claim.ENotClaimable, "--agent", "agent-a", "--id", id)
	refused(t, bd.Dir, claim.ENotClaimable, "--agent", "agent-b", "--id", id)
	assert.Check(t, bdc(t, bd.Dir, 3, "--agent", "agent-b").Issue == nil)
	assert.Check(t, is.Len(bdc(t, bd.Dir, 0, "reap").Reaped, 0))
	st := claimStats(t, bd.Dir)
	assert.Check(t, is.Len(st.InProgress, 0), "stats in_progress: %+v", st.InProgress)
	assert.Check(t, is.Len(st.ExpiredLeases, 0))

	// Nothing of that was written.
	assert.Check(t, is.DeepEqual(readDBIssue(t, conn, id), row))
	assert.Check(t, is.Equal(claimtest.Count(t, conn, "SELECT count(*) FROM events"), events))
	assert.Check(t, is.Equal(bd.show(id).Status, "closed"))
	control := bdClosedControl(t, bd)
	sameCollisions(t, bd, id, control)
	exported := exportRoundTrip(t, bd, id, control)
	assert.Check(t, is.Equal(exported[id]["status"], "closed"))
	checkIntegrity(t, conn)
}
