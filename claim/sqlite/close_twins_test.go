package sqlite_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
	"gotest.tools/v3/assert"
)

// Close twins on SQLite: two issues made alike and claimed alike by agent
// a; bd (`bd close X --reason`, actor a) closes one, bd-claim its twin.
// The same cells change, to the same values but the times (closed_at and
// updated_at equal to each other, as bd writes them); the closed events
// are alike, and bd-claim's close leaves the dirty mark for bd's export;
// blocked_issues_cache is the same after each close of a blocker of a
// chain; a convoy whose tracked issues are all closed is closed alike.
// Not on bd v0.27.2: bd-claim writes no close there, it refuses it (the
// conformance suite's sqlite-v0.27.2 setup).
func TestCloseTwinsSQLite(t *testing.T) {
	for _, version := range []string{"v0.47.1", "v0.49.6"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			w := claimtest.SQLiteWorkspace(t, version)
			conn := claimtest.Open(t, claimtest.DBPath(w.Dir))
			cw := &conformance.Workspace{BdRunner: &w.BdRunner}
			viaBd, viaUs := conformance.NewCloseTwins(t, cw, "twin"), conformance.NewCloseTwins(t, cw, "twin")
			s := cw.Store(t, claim.Options{})
			ctx := context.Background()
			cache := func() []string {
				ids := claimtest.Strings(t, conn, "SELECT issue_id FROM blocked_issues_cache")
				twin := viaUs.TwinOf(viaBd)
				for i, id := range ids {
					if b, ok := twin[id]; ok {
						ids[i] = b
					}
				}
				slices.Sort(ids)
				return slices.Compact(ids)
			}
			// closeTwins claims pair as a, closes pair[0] with bd and
			// pair[1] with bd-claim, and compares watch[0] (pair[0] or
			// what its close closed too) with its twin watch[1]: the same
			// four cells change, to the same values but the times, the
			// closed event is event, and bd-claim's close leaves the dirty
			// mark (bd flushes its own close to issues.jsonl at exit,
			// which clears its mark).
			closeTwins := func(pair, watch [2]string, event string) {
				t.Helper()
				for _, id := range pair {
					_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: id})
					assert.NilError(t, err)
				}
				beforeBd, beforeUs := claimtest.RowOf(t, conn, "issues", "id", watch[0]), claimtest.RowOf(t, conn, "issues", "id", watch[1])
				time.Sleep(1100 * time.Millisecond)
				w.As("a").OK("close", pair[0], "--reason", "done")
				_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: pair[1], Reason: "done"})
				assert.NilError(t, err)
				afterBd, afterUs := claimtest.RowOf(t, conn, "issues", "id", watch[0]), claimtest.RowOf(t, conn, "issues", "id", watch[1])
				assert.DeepEqual(t, claimtest.Changed(beforeUs, afterUs), claimtest.Changed(beforeBd, afterBd))
				assert.DeepEqual(t, claimtest.Changed(beforeBd, afterBd), []string{"close_reason", "closed_at", "status", "updated_at"})
				for _, c := range []string{"status", "close_reason", "closed_by_session", "content_hash", "assignee"} {
					assert.Equal(t, afterUs[c], afterBd[c], c)
				}
				assert.Equal(t, afterUs["closed_at"], afterUs["updated_at"])
				assert.Equal(t, afterBd["closed_at"], afterBd["updated_at"])
				assert.DeepEqual(t, claimtest.CloseEvents(t, conn, watch[1]), claimtest.CloseEvents(t, conn, watch[0]))
				assert.DeepEqual(t, claimtest.CloseEvents(t, conn, watch[1]), []string{event})
				assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dirty_issues WHERE issue_id = ?", watch[1]), 1)
			}
			for _, pair := range [][2]string{{viaBd.Head, viaUs.Head}, {viaBd.Child, viaUs.Child}} {
				closeTwins(pair, pair, "closed|a|<null>|<null>|done")
			}
			assert.DeepEqual(t, cache(), []string{viaBd.Tail})

			// Convoy completion: a convoy (an issue labelled gt:convoy)
			// whose tracked issues are all closed is closed with the last
			// of them, by system:convoy-completion, as bd closes its twin;
			// one that still tracks an open issue stays open.
			convoy := func(tracks ...string) string {
				id := cw.Create(t, "convoy", "-l", "gt:convoy")
				for _, x := range tracks {
					w.OK("dep", "add", id, x, "--type", "tracks")
				}
				return id
			}
			open := cw.Create(t, "still open")
			tracked := [2]string{cw.Create(t, "tracked"), cw.Create(t, "tracked")}
			done := [2]string{convoy(tracked[0]), convoy(tracked[1])}
			partial := [2]string{convoy(tracked[0], open), convoy(tracked[1], open)}
			closeTwins(tracked, done, "closed|system:convoy-completion|<null>|<null>|All tracked issues completed")
			assert.Equal(t, claimtest.RowOf(t, conn, "issues", "id", done[1])["closed_at"], claimtest.RowOf(t, conn, "issues", "id", tracked[1])["closed_at"], "closed with the issue, at its time")
			for _, id := range partial {
				assert.Equal(t, claimtest.RowOf(t, conn, "issues", "id", id)["status"], "open", "%s still tracks %s", id, open)
			}
		})
	}
}
