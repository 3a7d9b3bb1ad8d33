package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/sqlite"
)

func cases(t *testing.T, version string) map[string]claimtest.Case {
	return claimtest.Cases(t, version)
}

func snapshot(t *testing.T, root string) map[string][]string {
	return claimtest.Snapshot(t, claimtest.DBPath(root))
}

// A claim writes what bd writes and nothing else: the issue row (status,
// assignee, a later updated_at, a recomputed hash), one event and one dirty
// mark.
func TestClaimFootprint(t *testing.T) {
	t.Parallel()
	for v, eventType := range map[string]string{"0.27.2": "status_changed", "0.47.1": "status_changed", "0.49.6": "claimed"} {
		t.Run(v, func(t *testing.T) {
			root := fixture(t, v)
			conn := claimtest.Open(t, claimtest.DBPath(root))
			before := snapshot(t, root)
			var oldUpdated, oldHash string
			id := expectedClaims(t, v, claim.SortPriority)[0]
			assert.NilError(t, conn.QueryRow("SELECT CAST(updated_at AS TEXT), content_hash FROM issues WHERE id = ?", id).Scan(&oldUpdated, &oldHash))

			s := openStore(t, root, claim.Options{})
			iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "footprint-agent"}))
			assert.NilError(t, err)
			assert.Equal(t, iss.ID, id)
			after := snapshot(t, root)

			d := claimtest.Diff(before, after)
			assert.DeepEqual(t, slices.Sorted(func(yield func(string) bool) {
				for k := range d {
					yield(k)
				}
			}), []string{"dirty_issues", "events", "issues", "sqlite_sequence"})
			assert.Equal(t, len(d["issues"][0]), 1)
			assert.Equal(t, len(d["issues"][1]), 1)
			assert.Equal(t, len(d["events"][0]), 0)
			assert.Equal(t, len(d["events"][1]), 1)
			assert.Equal(t, len(d["dirty_issues"][1]), 1)

			var status, assignee, updated, hash string
			assert.NilError(t, conn.QueryRow("SELECT status, assignee, CAST(updated_at AS TEXT), content_hash FROM issues WHERE id = ?", id).
				Scan(&status, &assignee, &updated, &hash))
			assert.Equal(t, status, "in_progress")
			assert.Equal(t, assignee, "footprint-agent")
			assert.Equal(t, updated, iss.UpdatedAt)
			assert.Equal(t, hash, iss.ContentHash)
			assert.Assert(t, hash != oldHash && len(hash) == 64)
			u1, err := time.Parse(time.RFC3339Nano, oldUpdated)
			assert.NilError(t, err)
			u2, err := time.Parse(time.RFC3339Nano, updated)
			assert.NilError(t, err)
			assert.Assert(t, u2.After(u1), "%s is not after %s", updated, oldUpdated)

			var evType, actor, newValue, created string
			var comment sql.NullString
			assert.NilError(t, conn.QueryRow(`SELECT event_type, actor, new_value, comment, CAST(created_at AS TEXT) FROM events
				WHERE issue_id = ? ORDER BY id DESC LIMIT 1`, id).Scan(&evType, &actor, &newValue, &comment, &created))
			assert.Equal(t, evType, eventType)
			assert.Equal(t, actor, "footprint-agent")
			assert.Equal(t, newValue, `{"assignee":"footprint-agent","status":"in_progress"}`)
			assert.Assert(t, !comment.Valid)
			_, err = time.Parse("2006-01-02 15:04:05", created)
			assert.NilError(t, err, "events.created_at keeps SQLite's CURRENT_TIMESTAMP form")

			var marked string
			assert.NilError(t, conn.QueryRow("SELECT CAST(marked_at AS TEXT) FROM dirty_issues WHERE issue_id = ?", id).Scan(&marked))
			assert.Equal(t, marked, updated)
		})
	}
}

// When the clock is behind the stored updated_at, the claim still writes a
// strictly later one, so bd's import keeps the claim.
func TestClaimUpdatedAtAlwaysIncreases(t *testing.T) {
	t.Parallel()
	root := fixture(t, "0.49.6")
	past := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openStore(t, root, claim.Options{Now: func() time.Time { return past }})
	iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "a"}))
	assert.NilError(t, err)
	var created string
	assert.NilError(t, claimtest.Open(t, claimtest.DBPath(root)).QueryRow("SELECT CAST(created_at AS TEXT) FROM issues WHERE id = ?", iss.ID).Scan(&created))
	c, _ := time.Parse(time.RFC3339Nano, created)
	u, err := time.Parse(time.RFC3339Nano, iss.UpdatedAt)
	assert.NilError(t, err)
	assert.Assert(t, u.After(c) && u.Sub(c) < time.Millisecond, "updated_at %s, created_at %s", iss.UpdatedAt, created)
}

// --id gives every non-claimable case of the real bd workspaces its refusal,
// and every claimable case succeeds: the same specification as claim-next.
func TestClaimByIDAgreesWithBdReady(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			s := openStore(t, fixture(t, v), claim.Options{})
			ready := expectedClaims(t, v, claim.SortPriority)
			for key, c := range cases(t, v) {
				req := claim.Request{Agent: "id-agent", ID: c.ID, DryRun: true}
				iss, err := issueOf(s.Claim(context.Background(), req))
				switch {
				case slices.Contains(ready, c.ID):
					assert.NilError(t, err, key)
					assert.Equal(t, iss.ID, c.ID, key)
				case key == "S_PREASSIGNED" || (c.Status == "in_progress" && key != "S_INPROG_NOASSIGNEE"):
					assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "%s: %v", key, err)
				default:
					assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "%s: %v", key, err)
				}
			}
		})
	}
}

func TestClaimByIDReasons(t *testing.T) {
	t.Parallel()
	s := openStore(t, fixture(t, "0.49.6"), claim.Options{})
	c := cases(t, "0.49.6")
	ctx := context.Background()
	for key, want := range map[string]string{
		"S_CLOSED":            "its status is closed",
		"B_BY_OPEN":           "blocked by an open dependency",
		"D_FUTURE":            "deferred",
		"T_GATE":              "its type (merge-request, gate, molecule, message, agent, role, rig) is never ready",
		"E_EPHEMERAL":         "ephemeral",
		"E_WISP_ID":           `excluded pattern "-wisp-"`,
		"I_PINNED":            "it is pinned",
		"S_INPROG_NOASSIGNEE": "its status is in_progress",
	} {
		_, err := s.Claim(ctx, claim.Request{Agent: "why", ID: c[key].ID})
		assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, key)
		assert.ErrorContains(t, err, want, key)
	}
	_, err := s.Claim(ctx, claim.Request{Agent: "why", ID: c["S_INPROG"].ID})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready)
	assert.ErrorContains(t, err, "held by bob")
	var ce *claim.Error
	assert.Assert(t, errors.As(err, &ce) && ce.Holder == "bob")

	_, err = s.Claim(ctx, claim.Request{Agent: "why", ID: "fx-nope"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound)
	// An id with a character bd's ids never have is not read as the start
	// of one: not found, whatever ids contain its parts.
	_, err = s.Claim(ctx, claim.Request{Agent: "why", ID: c["A01"].ID + "_"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound)
	assert.ErrorContains(t, err, "no issue "+c["A01"].ID+"_")

	_, err = s.Claim(ctx, claim.Request{Agent: "why", ID: c["A01"].ID, Filters: claim.Filters{IncludeLabels: []string{"frontend"}}})
	assert.ErrorContains(t, err, `it lacks the label "frontend"`)
}

// Re-claiming an issue one holds succeeds and writes nothing; anyone else is
// refused with the holder's name.
func TestClaimByIDIdempotent(t *testing.T) {
	t.Parallel()
	root := fixture(t, "0.49.6")
	s := openStore(t, root, claim.Options{})
	ctx := context.Background()
	id := cases(t, "0.49.6")["A01"].ID
	first, err := issueOf(s.Claim(ctx, claim.Request{Agent: "agent-a", ID: id}))
	assert.NilError(t, err)
	assert.Equal(t, first.Status, "in_progress")
	before := snapshot(t, root)
	again, err := issueOf(s.Claim(ctx, claim.Request{Agent: "agent-a", ID: id}))
	assert.NilError(t, err)
	assert.DeepEqual(t, again, first)
	assert.DeepEqual(t, snapshot(t, root), before)
	_, err = s.Claim(ctx, claim.Request{Agent: "agent-b", ID: id})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready)
	assert.ErrorContains(t, err, "held by agent-a")
}

type listed = claimtest.Listed

// Each filter claims exactly the issues of bd's own ready list that pass it,
// in bd's order.
func TestFiltersAgainstBdReady(t *testing.T) {
	t.Parallel()
	ready := claimtest.BdReady(t, "0.49.6", "priority")
	c := cases(t, "0.49.6")
	high := 1
	children := map[string]bool{c["P_EPIC_OPEN_C1"].ID: true, c["P_EPIC_OPEN_C2"].ID: true}
	for name, tc := range map[string]struct {
		agent string
		f     claim.Filters
		keep  func(listed) bool
	}{
		"label backend": {"x", claim.Filters{IncludeLabels: []string{"backend"}}, func(l listed) bool { return slices.Contains(l.Labels, "backend") }},
		"labels backend and urgent": {"x", claim.Filters{IncludeLabels: []string{"backend", "urgent"}}, func(l listed) bool {
			return slices.Contains(l.Labels, "backend") && slices.Contains(l.Labels, "urgent")
		}},
		"exclude frontend, docs": {"x", claim.Filters{ExcludeLabels: []string{"frontend", "docs"}}, func(l listed) bool {
			return !slices.Contains(l.Labels, "frontend") && !slices.Contains(l.Labels, "docs")
		}},
		"min priority high":     {"x", claim.Filters{MinPriority: &high}, func(l listed) bool { return l.Priority <= 1 }},
		"type bug or chore":     {"x", claim.Filters{Types: []string{"bug", "chore"}}, func(l listed) bool { return l.IssueType == "bug" || l.IssueType == "chore" }},
		"parent epic":           {"x", claim.Filters{Parent: c["P_EPIC_OPEN"].ID}, func(l listed) bool { return children[l.ID] }},
		"alice gets hers":       {"alice", claim.Filters{}, func(l listed) bool { return true }},
		"alice only unassigned": {"alice", claim.Filters{OnlyUnassigned: true}, func(l listed) bool { return l.Assignee == "" }},
		"hostile label":         {"x", claim.Filters{IncludeLabels: []string{"x' OR 1=1 --"}}, func(l listed) bool { return false }},
	} {
		t.Run(name, func(t *testing.T) {
			s := openStore(t, fixture(t, "0.49.6"), claim.Options{})
			var want, got []string
			for _, l := range ready {
				if l.Status == "open" && (l.Assignee == "" || l.Assignee == tc.agent) && tc.keep(l) {
					want = append(want, l.ID)
				}
			}
			for {
				iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: tc.agent, Filters: tc.f}))
				assert.NilError(t, err)
				if iss == nil {
					break
				}
				got = append(got, iss.ID)
			}
			assert.DeepEqual(t, got, want)
			if name == "alice gets hers" {
				assert.Check(t, is.Contains(got, c["S_PREASSIGNED"].ID))
			}
		})
	}
}

// issueOf returns the claimed issue of a Claim call.
func issueOf(res claim.Result, err error) (*claim.Issue, error) { return res.Issue, err }

// Several Stores of one process, each claiming from its own goroutine,
// drain a workspace: every ready issue once, none busy. They queue on one
// lock file of the database, outside the workspace (under
// $XDG_RUNTIME_DIR), which gains no file. Reads make no lock file.
func TestStoresShareOneQueue(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := t.TempDir()
	d, err := sqlite.CreateDemo(context.Background(), dir, 60, 3)
	assert.NilError(t, err)
	reader, err := engines.Open(context.Background(), claim.Workspace{DBPath: d.Path}, claim.Options{})
	assert.NilError(t, err)
	_, err = reader.Claim(context.Background(), claim.Request{Agent: "reader", DryRun: true})
	assert.NilError(t, err)
	_, err = reader.Stats(context.Background())
	assert.NilError(t, err)
	assert.NilError(t, reader.Close())
	assert.Assert(t, len(claimtest.Names(t, xdg)) == 0, "a dry run and stats make no lock file: %v", claimtest.Names(t, xdg))
	const stores = 6
	got := make([][]string, stores)
	errs := make([]error, stores)
	done := make(chan int)
	for i := range stores {
		s, err := engines.Open(context.Background(), claim.Workspace{DBPath: d.Path}, claim.Options{})
		assert.NilError(t, err)
		defer s.Close()
		go func() {
			defer func() { done <- i }()
			for {
				r, err := s.Claim(context.Background(), claim.Request{Agent: "store-" + string(rune('a'+i))})
				if err != nil || r.Issue == nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], r.Issue.ID)
			}
		}()
	}
	for range stores {
		<-done
	}
	assert.DeepEqual(t, errs, make([]error, stores))
	all := slices.Concat(got...)
	slices.Sort(all)
	assert.DeepEqual(t, all, slices.Sorted(slices.Values(d.Ready)))
	assert.DeepEqual(t, claimtest.Names(t, dir), []string{".beads"})
	for _, f := range claimtest.Names(t, filepath.Dir(d.Path)) {
		assert.Check(t, slices.Contains([]string{"beads.db", "beads.db-shm", "beads.db-wal"}, f), f)
	}
	assert.Equal(t, len(claimtest.Names(t, filepath.Join(xdg, "bd-claim"))), 1)
}
