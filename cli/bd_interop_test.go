package cli_test

// Interop with the real bd: workspaces made and read by bd v0.27.2,
// v0.47.1 and v0.49.6 (built by `make bd`), claims made by bd-claim in
// between.

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// The workspace that demo --keep leaves is one the SQLite bd releases
// open, as it says (bd lists the issues the demo's agents hold), and bd
// v1.3 does not.
func TestDemoWorkspaceWithBd(t *testing.T) {
	r := run(t, t.TempDir(), []string{"TMPDIR=" + t.TempDir()}, "demo", "--agents", "2", "--issues", "20", "--keep")
	r.Assert(t, icmd.Success)
	dir := keptDemo(t, r.Stdout())
	var held int
	assert.NilError(t, claimtest.Open(t, claimtest.DBPath(dir)).QueryRow("SELECT count(*) FROM issues WHERE status = 'in_progress'").Scan(&held))
	assert.Assert(t, held > 0)
	for _, rel := range bdReleases {
		bd := bdWorkspace(t, rel) // bd with its environment, run in the demo's workspace
		bd.Dir = dir
		var list []bdIssue
		bd.json(&list, "list", "--status", "in_progress", "--limit", "0")
		assert.Equal(t, len(list), held, rel.version)
	}
	bd := claimtest.EmbeddedWorkspace(t, "dm")
	bd.Dir = dir
	r = bd.Bd("list")
	assert.Assert(t, r.ExitCode != 0, "bd v1.3 opened a SQLite workspace: %s", r.Combined())
	assert.Assert(t, is.Contains(r.Combined(), "historical SQLite workspace detected"))
}

func TestBdEnvironment(t *testing.T) {
	for _, rel := range bdReleases {
		t.Run(rel.version, func(t *testing.T) {
			bd := bdWorkspace(t, rel)
			r := bd.ok("--version")
			assert.Check(t, strings.HasPrefix(r.Stdout(), "bd version "+strings.TrimPrefix(rel.version, "v")+" "), r.Stdout())
			assert.Check(t, strings.Contains(bd.ok("--help").Stdout(), "Usage:"))
			assert.Check(t, bd.ok("quickstart").Stdout() != "")

			// bd made a SQLite workspace that bd-claim finds and reads.
			_, err := os.Stat(claimtest.DBPath(bd.Dir))
			assert.NilError(t, err)
			out := bdc(t, bd.Dir, 3, "--agent", "agent-x")
			assert.Check(t, is.Equal(out.Status, "ok"))
			assert.Check(t, out.Issue == nil)
		})
	}
}

// bd ready run in a directory that config.yaml's directory.labels names
// lists only that label's issues (bd's directory scoping); a claim-next run
// there (or given it as --workspace) takes from the same list and says so
// in its filters. --label, --id and the workspace's root are not scoped.
// A bd without directory scoping (before v0.31.0) lists every issue there,
// and a claim-next takes from that list.
func TestDirectoryLabelsAsBdReady(t *testing.T) {
	for _, rel := range bdReleases {
		t.Run(rel.version, func(t *testing.T) {
			bd := bdWorkspace(t, rel)
			mav := bd.create("maverick work", "-p", "2", "-l", "maverick")
			api := bd.create("api work", "-p", "1", "-l", "api")
			plain := bd.create("plain work", "-p", "0")
			sub := maverickDir(t, bd.Dir, "src")
			ws := *bd.BdWorkspace
			ws.Dir = sub
			inSub := bdTool{t, &ws, rel}
			listed := inSub.ready()
			if !rel.dirLabels {
				assert.Assert(t, len(listed) == 3 && listed[0].ID == plain, "bd ready in %s: %+v", sub, listed)
				out := bdc(t, sub, 0, "--agent", "a", "--dry-run", "--explain")
				assert.Check(t, is.Equal(out.Issue.ID, plain))
				assert.Check(t, is.Len(out.Filters.IncludeLabels, 0))
				assert.Check(t, is.Equal(out.Explain.Claimable, 3))
				assert.Check(t, is.Equal(serve(t, sub, "m1", "--quiet").callOK(t, "claim", map[string]any{"dry_run": true}).Issue.ID, plain))
				return
			}
			assert.Assert(t, len(listed) == 1 && listed[0].ID == mav, "bd ready in %s: %+v", sub, listed)

			out := bdc(t, sub, 0, "--agent", "a", "--dry-run", "--explain")
			assert.Check(t, is.Equal(out.Issue.ID, mav))
			assert.Check(t, is.DeepEqual(out.Filters.IncludeLabels, []string{"maverick"}))
			assert.Check(t, is.Equal(out.Explain.Claimable, 1))
			assert.Check(t, is.Equal(bdc(t, bd.Dir, 0, "--agent", "a", "--dry-run", "--workspace", sub).Issue.ID, mav))
			assert.Check(t, is.Equal(bdc(t, sub, 0, "--agent", "a", "--dry-run", "--label", "api").Issue.ID, api))
			assert.Check(t, is.Equal(bdc(t, sub, 0, "--agent", "a", "--dry-run", "--id", api).Issue.ID, api))
			assert.Check(t, is.Equal(bdc(t, bd.Dir, 0, "--agent", "a", "--dry-run").Issue.ID, bd.ready()[0].ID))
			// The MCP server's claims are scoped by the server's directory
			// (live servers of one workspace have names of their own).
			for i, s := range []*server{serve(t, sub, "m1", "--quiet"), serve(t, bd.Dir, "m2", "--quiet", "--workspace", sub)} {
				assert.Check(t, is.Equal(s.callOK(t, "claim", map[string]any{"dry_run": true}).Issue.ID, mav), "server %d", i)
			}
			assert.Check(t, is.Equal(serve(t, bd.Dir, "m3", "--quiet").callOK(t, "claim", map[string]any{"dry_run": true}).Issue.ID, bd.ready()[0].ID))
		})
	}
}

// maverickDir maps packages/maverick to the label maverick in the
// workspace's .beads/config.yaml (bd's directory.labels) and makes that
// directory, or one below it.
func maverickDir(t *testing.T, root string, below ...string) string {
	t.Helper()
	cfg := filepath.Join(root, ".beads", "config.yaml")
	old, err := os.ReadFile(cfg)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(cfg, append(old, "\ndirectory:\n  labels:\n    packages/maverick: maverick\n"...), 0o644))
	dir := filepath.Join(append([]string{root, "packages", "maverick"}, below...)...)
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	return dir
}

func TestBdSeesClaim(t *testing.T) {
	for _, tc := range bdReleases {
		t.Run(tc.version, func(t *testing.T) {
			bd := bdWorkspace(t, tc)
			blocker := bd.create("Blocker", "-p", "3")
			blocked := bd.create("Blocked by the blocker", "-p", "0", "--deps", "blocks:"+blocker)
			held := bd.create("Already someone's", "-p", "0", "-a", "someone")
			epic := bd.create("Epic", "-t", "epic", "-p", "2")
			top := bd.create("Top", "-p", "1", "-l", "backend,urgent")
			child := bd.create("Child of the epic", "--parent", epic, "-p", "1", "-l", "backend")

			// bd's own order, keeping what an agent may take: open and unassigned.
			var claimable []string
			for _, iss := range bd.ready() {
				assert.Check(t, iss.ID != blocked, "bd ready lists the blocked issue")
				if iss.Status == "open" && iss.Assignee == "" {
					claimable = append(claimable, iss.ID)
				}
			}
			assert.DeepEqual(t, claimable, []string{top, child, epic, blocker})

			// What bd auto-flushed so far: a copy from before the claims, as a
			// teammate's older JSONL would be.
			stale := filepath.Join(t.TempDir(), "stale.jsonl")
			claimtest.CopyFile(t, filepath.Join(bd.Dir, ".beads", "issues.jsonl"), stale)

			// The first claim, from outside the workspace, is what bd ready hands out first.
			got := bdc(t, t.TempDir(), 0, "--agent", "agent-x", "--workspace", bd.Dir)
			assert.Assert(t, got.Issue != nil)
			assert.Equal(t, got.Issue.ID, top)
			row := readDBIssue(t, bd.db(), top)
			assert.DeepEqual(t, row, dbIssue{Status: "in_progress", Assignee: "agent-x",
				ContentHash: got.Issue.ContentHash, UpdatedAt: got.Issue.UpdatedAt})

			shown := bd.show(top)
			assert.Check(t, is.Equal(shown.Status, "in_progress"))
			assert.Check(t, is.Equal(shown.Assignee, "agent-x"))
			assert.Check(t, is.Equal(shown.UpdatedAt, row.UpdatedAt))

			ready := bd.ready()
			idx := slices.IndexFunc(ready, func(i bdIssue) bool { return i.ID == top })
			if tc.readyListsInProgress {
				assert.Assert(t, idx >= 0, "bd %s ready should still list the in_progress %s", tc.version, top)
				assert.Check(t, is.Equal(ready[idx].Status+"/"+ready[idx].Assignee, "in_progress/agent-x"))
			} else {
				assert.Check(t, idx < 0, "bd %s ready should no longer list the in_progress %s", tc.version, top)
			}

			// bd export writes the claim; it never writes content_hash (json:"-"),
			// so let bd recompute it: importing the export back (dry run) must find
			// the database already equal to it: v0.49.6 compares its hash of each
			// exported issue with the stored content_hash, v0.47.1 the fields.
			file, exported := bd.export()
			line := exported[top]
			assert.Check(t, is.Equal(line["status"], "in_progress"))
			assert.Check(t, is.Equal(line["assignee"], "agent-x"))
			assert.Check(t, is.Equal(line["updated_at"], row.UpdatedAt))
			_, hasHash := line["content_hash"]
			assert.Check(t, !hasHash, "export: %v", line)
			imported := bd.ok("import", "-i", file, "--dry-run").Combined()
			assert.Check(t, is.Contains(imported, "update 0 existing issues"))
			assert.Check(t, !strings.Contains(imported, "Colliding"), imported)
			// Importing the older JSONL keeps the claim, whose updated_at is newer.
			before, err := time.Parse(time.RFC3339Nano, fmt.Sprint(jsonLines(t, stale)[top]["updated_at"]))
			assert.NilError(t, err)
			after, err := time.Parse(time.RFC3339Nano, row.UpdatedAt)
			assert.NilError(t, err)
			assert.Check(t, after.After(before), "updated_at %s -> %s", before, after)
			bd.ok("import", "-i", stale)
			assert.Check(t, is.DeepEqual(readDBIssue(t, bd.db(), top), row))

			// Claims from a subdirectory take the rest in bd's order, never the
			// blocked issue nor someone else's.
			sub := filepath.Join(bd.Dir, "sub")
			assert.NilError(t, os.Mkdir(sub, 0o755))
			for _, want := range claimable[1:] {
				got := bdc(t, sub, 0, "--agent", "agent-x")
				assert.Assert(t, got.Issue != nil)
				assert.Equal(t, got.Issue.ID, want)
				assert.Check(t, is.Equal(bd.show(want).Status, "in_progress"))
			}
			assert.Check(t, bdc(t, sub, 3, "--agent", "agent-x").Issue == nil)
			assert.Check(t, is.Equal(readDBIssue(t, bd.db(), blocked).Status, "open"))
			heldRow := readDBIssue(t, bd.db(), held)
			assert.Check(t, is.Equal(heldRow.Status+"/"+heldRow.Assignee, "open/someone"))

			// bd closes what bd-claim claimed; closing the blocker unblocks.
			for _, id := range []string{top, blocker} {
				bd.ok("close", id)
				assert.Check(t, is.Equal(bd.show(id).Status, "closed"))
			}
			// That write flushed every dirty issue to .beads/issues.jsonl,
			// bd-claim's claims included.
			jsonl := jsonLines(t, filepath.Join(bd.Dir, ".beads", "issues.jsonl"))
			for _, id := range []string{child, epic} {
				assert.Check(t, is.Equal(fmt.Sprint(jsonl[id]["status"], "/", jsonl[id]["assignee"]), "in_progress/agent-x"), id)
			}
			got = bdc(t, sub, 0, "--agent", "agent-x")
			assert.Assert(t, got.Issue != nil)
			assert.Equal(t, got.Issue.ID, blocked)
			assert.Check(t, is.Equal(bd.show(blocked).Status, "in_progress"))
		})
	}
}

// Claim twins: the same issue made three times, claimed by bd-claim, by
// bd update --status in_progress --assignee and by bd update --claim (where
// bd has it), gets the same hash, columns, event and dirty mark.
func TestContentHashParityWithBd(t *testing.T) {
	for _, tc := range bdReleases {
		t.Run(tc.version, func(t *testing.T) {
			// Twins: same content, same creator (created_by = BD_ACTOR, owner =
			// git email), so bd hashes them alike.
			bd := bdWorkspace(t, tc).as("agent-a")
			fields := []string{"-d", "the same description", "-t", "bug", "-p", "1",
				"-l", "backend,urgent", "--design", "a design", "--acceptance", "it works"}
			if tc.createsNotes {
				fields = append(fields, "--notes", "notes", "--estimate", "45", "--due", "2030-01-15")
			}
			twin := func() string { return bd.create("Twin", fields...) }
			viaBdClaim, viaUpdate := twin(), twin()
			byBd := []string{viaUpdate} // the twins bd claims
			var viaClaim string
			if tc.claimFlag {
				viaClaim = twin()
				byBd = append(byBd, viaClaim)
			}
			twins := append([]string{viaBdClaim}, byBd...)
			conn := bd.db()
			before := readDBIssue(t, conn, viaBdClaim).ContentHash
			var lastEvent int64
			assert.NilError(t, conn.QueryRow("SELECT MAX(id) FROM events").Scan(&lastEvent))

			got := bdc(t, bd.Dir, 0, "--agent", "agent-a")
			assert.Assert(t, got.Issue != nil)
			assert.Equal(t, got.Issue.ID, viaBdClaim) // the oldest of equals
			// --no-auto-flush keeps every dirty mark for the comparison below.
			bd.ok("update", viaUpdate, "--status", "in_progress", "--assignee", "agent-a", "--no-auto-flush")
			if tc.claimFlag {
				bd.claim(viaClaim, "--no-auto-flush")
			}

			for _, id := range twins {
				row := readDBIssue(t, conn, id)
				assert.Check(t, is.Equal(row.Status+"/"+row.Assignee, "in_progress/agent-a"), id)
				assert.Check(t, is.Equal(row.ContentHash, got.Issue.ContentHash), "content_hash of %s", id)
				// updated_at in bd's own form: RFC3339Nano text, UTC here.
				u, err := time.Parse(time.RFC3339Nano, row.UpdatedAt)
				assert.Check(t, err == nil && u.Format(time.RFC3339Nano) == row.UpdatedAt, "updated_at of %s: %q", id, row.UpdatedAt)
			}
			assert.Check(t, before != got.Issue.ContentHash)
			// Every other column alike too.
			want := issueColumns(t, conn, viaUpdate)
			for _, id := range append([]string{viaBdClaim}, byBd[1:]...) {
				assert.Check(t, is.DeepEqual(issueColumns(t, conn, id), want), "columns of %s vs %s (bd update)", id, viaUpdate)
			}

			events := claimEvents(t, conn, lastEvent)
			assert.Assert(t, is.Len(events, len(twins)), "%+v", events)
			assert.Check(t, is.Equal(events[viaUpdate].Type, "status_changed"))
			if tc.claimFlag {
				assert.Check(t, is.Equal(events[viaClaim].Type, tc.claimEvent))
			}
			assert.Check(t, is.Equal(events[viaBdClaim].Type, tc.claimEvent))
			for _, id := range byBd {
				e, mine := events[id], events[viaBdClaim]
				e.Type, mine.Type = "", ""
				assert.Check(t, is.DeepEqual(mine, e), "event of bd-claim vs %s", id)
			}

			dirty := dirtyIssues(t, conn)
			for _, id := range twins {
				d, ok := dirty[id]
				assert.Check(t, ok, "%s is not in dirty_issues", id)
				assert.Check(t, is.DeepEqual(d, dirty[viaUpdate]), "dirty_issues of %s", id)
			}
		})
	}
}

// issueColumns is an issue's row but for its id and timestamps.
func issueColumns(t *testing.T, conn *sql.DB, id string) map[string]sql.NullString {
	t.Helper()
	rows, err := conn.Query("SELECT * FROM issues WHERE id = ?", id)
	assert.NilError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	assert.NilError(t, err)
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	assert.Assert(t, rows.Next(), "no issue %s", id)
	assert.NilError(t, rows.Scan(ptrs...))
	m := map[string]sql.NullString{}
	for i, c := range cols {
		if c != "id" && c != "created_at" && c != "updated_at" {
			m[c] = vals[i]
		}
	}
	return m
}

// claimEvent is an events row as twins can share it: old_value without the
// id and timestamps (checked against the issue), and only the form of
// created_at.
type claimEvent struct {
	Type, Actor, NewValue string
	OldValue              map[string]any
	Comment               sql.NullString
	CreatedAt             string // "datetime" for SQLite's CURRENT_TIMESTAMP form, else the text
}

// claimEvents are the events after id, by issue; each issue must have one.
// The issues must not have been changed between creation and the event.
func claimEvents(t *testing.T, conn *sql.DB, after int64) map[string]claimEvent {
	t.Helper()
	rows, err := conn.Query(`SELECT e.issue_id, e.event_type, e.actor, COALESCE(e.old_value, ''), COALESCE(e.new_value, ''),
			e.comment, CAST(e.created_at AS TEXT), CAST(i.created_at AS TEXT)
		FROM events e JOIN issues i ON i.id = e.issue_id WHERE e.id > ? ORDER BY e.id`, after)
	assert.NilError(t, err)
	defer rows.Close()
	events := map[string]claimEvent{}
	for rows.Next() {
		var id, old, created string
		var e claimEvent
		assert.NilError(t, rows.Scan(&id, &e.Type, &e.Actor, &old, &e.NewValue, &e.Comment, &e.CreatedAt, &created))
		assert.NilError(t, json.Unmarshal([]byte(old), &e.OldValue), "old_value %q", old)
		want := map[string]any{"id": id, "created_at": created, "updated_at": created}
		for k, v := range want {
			assert.Check(t, is.Equal(e.OldValue[k], v), "old_value.%s of %s", k, id)
			delete(e.OldValue, k)
		}
		if _, err := time.Parse(time.DateTime, e.CreatedAt); err == nil {
			e.CreatedAt = "datetime"
		}
		_, dup := events[id]
		assert.Assert(t, !dup, "two events for %s", id)
		events[id] = e
	}
	assert.NilError(t, rows.Err())
	return events
}

// dirtyMark is a dirty_issues row as twins can share it.
type dirtyMark struct {
	ContentHash sql.NullString
	MarkedAtOK  bool // RFC3339 text, no earlier than the issue's updated_at
}

// dirtyIssues are dirty_issues' rows by issue.
func dirtyIssues(t *testing.T, conn *sql.DB) map[string]dirtyMark {
	t.Helper()
	rows, err := conn.Query(`SELECT d.issue_id, d.content_hash, CAST(d.marked_at AS TEXT), CAST(i.updated_at AS TEXT)
		FROM dirty_issues d JOIN issues i ON i.id = d.issue_id`)
	assert.NilError(t, err)
	defer rows.Close()
	dirty := map[string]dirtyMark{}
	for rows.Next() {
		var id, marked, updated string
		var d dirtyMark
		assert.NilError(t, rows.Scan(&id, &d.ContentHash, &marked, &updated))
		m, errM := time.Parse(time.RFC3339Nano, marked)
		u, errU := time.Parse(time.RFC3339Nano, updated)
		d.MarkedAtOK = errM == nil && errU == nil && !m.Before(u)
		dirty[id] = d
	}
	assert.NilError(t, rows.Err())
	return dirty
}

func TestBdAndBdClaimConcurrently(t *testing.T) {
	const (
		seeds     = 6  // open issues there before
		held      = 3  // issues of a human that bd keeps updating
		newIssues = 20 // issues bd creates while agents claim
		agents    = 8  // bd-claim loops
	)
	for _, rel := range bdReleases {
		t.Run(rel.version, func(t *testing.T) {
			bd := bdWorkspace(t, rel)
			var claimable, humans []string
			for i := range seeds {
				claimable = append(claimable, bd.create(fmt.Sprintf("seed %d", i), "-d", "seed", "-p", strconv.Itoa(i%5)))
			}
			for i := range held {
				humans = append(humans, bd.create(fmt.Sprintf("held %d", i), "-d", "held", "-a", "human"))
			}

			// bd, sequentially: create an issue (waking the agents), update a human's.
			bdDone := make(chan struct{})
			created := newBell()
			var creates, updates []*icmd.Result
			go func() {
				defer close(bdDone)
				for i := range newIssues {
					creates = append(creates, bd.run("create", fmt.Sprintf("new %d", i), "-d", "new", "-p", strconv.Itoa(i%5), "--json"))
					created.ring()
					updates = append(updates, bd.run("update", humans[i%held], "--notes", fmt.Sprintf("note %d", i), "--json"))
				}
			}()

			// Agents: claim until nothing is left once bd has finished. An agent
			// finding nothing waits for bd's next issue instead of spinning.
			attempts := make([][]*icmd.Result, agents)
			var wg sync.WaitGroup
			for a := range agents {
				wg.Go(func() {
					for {
						finished := isClosed(bdDone)
						next := created.wait()
						r := run(t, bd.Dir, nil, "--agent", agentName(a), "--json", "--quiet", "--timeout-ms", "10000")
						attempts[a] = append(attempts[a], r)
						switch r.ExitCode {
						case 0, 4:
						case 3:
							if finished {
								return
							}
							select {
							case <-next:
							case <-bdDone:
							}
						default:
							return
						}
					}
				})
			}
			wg.Wait()
			<-bdDone

			// Everything bd did worked, and every issue it created exists.
			conn := bd.db()
			for i, r := range creates {
				r.Assert(t, icmd.Success)
				var iss bdIssue
				assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &iss), r.Combined())
				assert.Equal(t, iss.Title, fmt.Sprintf("new %d", i))
				readDBIssue(t, conn, iss.ID)
				claimable = append(claimable, iss.ID)
			}
			lastNote := map[string]string{}
			for i, r := range updates {
				r.Assert(t, icmd.Success)
				var list []bdIssue
				assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &list), r.Combined())
				id, note := humans[i%held], fmt.Sprintf("note %d", i)
				assert.Assert(t, len(list) == 1 && list[0].ID == id && list[0].Notes == note, r.Combined())
				lastNote[id] = note
			}

			// Every claim is in the database, once, for its agent.
			claimedBy := map[string]string{}
			codes := map[int]int{}
			for a, runs := range attempts {
				for _, r := range runs {
					codes[r.ExitCode]++
					assert.Check(t, r.ExitCode == 0 || r.ExitCode == 3 || r.ExitCode == 4, r.Combined())
					if r.ExitCode != 0 {
						continue
					}
					var out result
					assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &out), r.Combined())
					assert.Assert(t, out.Issue != nil, r.Combined())
					id := out.Issue.ID
					if prev, twice := claimedBy[id]; twice {
						t.Errorf("%s claimed twice: by %s and %s", id, prev, agentName(a))
					}
					claimedBy[id] = agentName(a)
					row := readDBIssue(t, conn, id)
					assert.Check(t, is.DeepEqual(row, dbIssue{Status: "in_progress", Assignee: agentName(a),
						ContentHash: out.Issue.ContentHash, UpdatedAt: out.Issue.UpdatedAt}), id)
				}
			}
			t.Logf("bd-claim exit statuses: %v (0 claimed, 3 none, 4 busy)", codes)
			assert.Check(t, is.Equal(codes[4], 0), "busy despite --timeout-ms 10000")
			slices.Sort(claimable)
			assert.Check(t, is.DeepEqual(slices.Sorted(maps.Keys(claimedBy)), claimable))
			assert.Check(t, is.DeepEqual(claimEventActors(t, conn), claimedBy))

			// bd's own writes survived, and bd sees nothing left to claim.
			for _, id := range humans {
				var notes, status, assignee string
				assert.NilError(t, conn.QueryRow("SELECT notes, status, assignee FROM issues WHERE id = ?", id).Scan(&notes, &status, &assignee))
				assert.Check(t, is.Equal(notes+"/"+status+"/"+assignee, lastNote[id]+"/open/human"), id)
			}
			for _, iss := range bd.ready() {
				assert.Check(t, iss.Status != "open" || iss.Assignee != "", "bd ready still offers %s", iss.ID)
			}
			var integrity string
			assert.NilError(t, conn.QueryRow("PRAGMA integrity_check").Scan(&integrity))
			assert.Equal(t, integrity, "ok")
		})
	}
}

func agentName(i int) string { return fmt.Sprintf("agent-%d", i) }

// claimEventActors maps each issue with a claim event (claimed or
// status_changed) to its actor; an issue with two fails the test.
func claimEventActors(t *testing.T, conn *sql.DB) map[string]string {
	t.Helper()
	rows, err := conn.Query("SELECT issue_id, actor FROM events WHERE event_type IN ('claimed', 'status_changed')")
	assert.NilError(t, err)
	defer rows.Close()
	actors := map[string]string{}
	for rows.Next() {
		var id, actor string
		assert.NilError(t, rows.Scan(&id, &actor))
		_, twice := actors[id]
		assert.Check(t, !twice, "two claim events for %s", id)
		actors[id] = actor
	}
	assert.NilError(t, rows.Err())
	return actors
}

// bell wakes everyone waiting at each ring.
type bell struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBell() *bell { return &bell{ch: make(chan struct{})} }

// wait returns a channel closed at the next ring.
func (b *bell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *bell) ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = make(chan struct{})
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
