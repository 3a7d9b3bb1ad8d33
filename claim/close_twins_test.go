package claim_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// rowOf reads every column of a row of table whose key column is value,
// as text by name.
func rowOf(t *testing.T, conn claimtest.Querier, table, key, value string) map[string]string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SELECT * FROM "+table+" WHERE "+key+" = ?", value)
	assert.NilError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	assert.NilError(t, err)
	out := map[string]string{}
	if !rows.Next() {
		return out
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	assert.NilError(t, rows.Scan(vals...))
	for i, c := range cols {
		v := *(vals[i].(*any))
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		out[c] = fmt.Sprint(v)
	}
	return out
}

// closeEvents is the events of an issue after its claim, as twins share
// them: type, actor, old_value, new_value and comment.
func closeEvents(t *testing.T, conn claimtest.Querier, id string) []string {
	t.Helper()
	return claimtest.Strings(t, conn, `SELECT CONCAT(event_type, '|', actor, '|', COALESCE(old_value, '<null>'), '|', COALESCE(new_value, '<null>'), '|', COALESCE(comment, '<null>'))
		FROM events WHERE issue_id = ? AND event_type = 'closed' ORDER BY created_at`, id)
}

// Close twins on SQLite: two issues made alike and claimed alike by agent
// a; bd (`bd close X --reason`, actor a) closes one, bd-claim its twin.
// The same cells change, to the same values but the times (closed_at and
// updated_at equal to each other, as bd writes them); the closed events
// are alike, and bd-claim's close leaves the dirty mark for bd's export;
// blocked_issues_cache is the same after each close of a blocker of a
// chain; a convoy whose tracked issues are all closed is closed alike.
func TestCloseTwinsSQLite(t *testing.T) {
	for _, version := range []string{"v0.47.1", "v0.49.6"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			w := claimtest.SQLiteWorkspace(t, version)
			conn := claimtest.Open(t, claimtest.DBPath(w.Dir))
			cw := &confWorkspace{&w.BdRunner}
			viaBd, viaUs := newCloseTwins(t, cw, "twin"), newCloseTwins(t, cw, "twin")
			s := cw.store(t, claim.Options{})
			ctx := context.Background()
			cache := func() []string {
				ids := claimtest.Strings(t, conn, "SELECT issue_id FROM blocked_issues_cache")
				twin := viaUs.twinOf(viaBd)
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
				beforeBd, beforeUs := rowOf(t, conn, "issues", "id", watch[0]), rowOf(t, conn, "issues", "id", watch[1])
				time.Sleep(1100 * time.Millisecond)
				w.As("a").OK("close", pair[0], "--reason", "done")
				_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: pair[1], Reason: "done"})
				assert.NilError(t, err)
				afterBd, afterUs := rowOf(t, conn, "issues", "id", watch[0]), rowOf(t, conn, "issues", "id", watch[1])
				assert.DeepEqual(t, claimtest.Changed(beforeUs, afterUs), claimtest.Changed(beforeBd, afterBd))
				assert.DeepEqual(t, claimtest.Changed(beforeBd, afterBd), []string{"close_reason", "closed_at", "status", "updated_at"})
				for _, c := range []string{"status", "close_reason", "closed_by_session", "content_hash", "assignee"} {
					assert.Equal(t, afterUs[c], afterBd[c], c)
				}
				assert.Equal(t, afterUs["closed_at"], afterUs["updated_at"])
				assert.Equal(t, afterBd["closed_at"], afterBd["updated_at"])
				assert.DeepEqual(t, closeEvents(t, conn, watch[1]), closeEvents(t, conn, watch[0]))
				assert.DeepEqual(t, closeEvents(t, conn, watch[1]), []string{event})
				assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dirty_issues WHERE issue_id = ?", watch[1]), 1)
			}
			for _, pair := range [][2]string{{viaBd.head, viaUs.head}, {viaBd.child, viaUs.child}} {
				closeTwins(pair, pair, "closed|a|<null>|<null>|done")
			}
			assert.DeepEqual(t, cache(), []string{viaBd.tail})

			// Convoy completion: a convoy (an issue labelled gt:convoy)
			// whose tracked issues are all closed is closed with the last
			// of them, by system:convoy-completion, as bd closes its twin;
			// one that still tracks an open issue stays open.
			convoy := func(tracks ...string) string {
				id := cw.create(t, "convoy", "-l", "gt:convoy")
				for _, x := range tracks {
					w.OK("dep", "add", id, x, "--type", "tracks")
				}
				return id
			}
			open := cw.create(t, "still open")
			tracked := [2]string{cw.create(t, "tracked"), cw.create(t, "tracked")}
			done := [2]string{convoy(tracked[0]), convoy(tracked[1])}
			partial := [2]string{convoy(tracked[0], open), convoy(tracked[1], open)}
			closeTwins(tracked, done, "closed|system:convoy-completion|<null>|<null>|All tracked issues completed")
			assert.Equal(t, rowOf(t, conn, "issues", "id", done[1])["closed_at"], rowOf(t, conn, "issues", "id", tracked[1])["closed_at"], "closed with the issue, at its time")
			for _, id := range partial {
				assert.Equal(t, rowOf(t, conn, "issues", "id", id)["status"], "open", "%s still tracks %s", id, open)
			}
		})
	}
}

// Close twins on a Dolt server (bd v1.3.0): see doltCloseTwins.
func TestCloseTwinsDolt(t *testing.T) {
	dw := claimtest.NeedDolt(t).Workspace(t, "ct")
	conn := dw.DB(t)
	doltCloseTwins(t, &confWorkspace{&dw.BdRunner}, &dw.As("a").BdRunner, func(fn func(claimtest.Querier)) { fn(conn) })
}

// doltCloseTwins closes twins on a bd v1.3.0 workspace (a server's, or an
// embedded one, whose database look opens for fn and closes again): the
// same cells change when bd (bdA, acting as a) closes an issue and
// bd-claim its twin (the issue closed with a fresh row_lock), the closed
// events are alike, the lease rows are gone, both coordination cells of
// the issue's shard are written, the unblocked issue's is_blocked is
// cleared alike, and each close is one Dolt commit "bd: close ID" by
// beads <beads@local> with the same diff stat as bd's (the unblocked
// issue's is_blocked included).
func doltCloseTwins(t *testing.T, cw *confWorkspace, bdA *claimtest.BdRunner, look func(fn func(claimtest.Querier))) {
	t.Helper()
	viaBd, viaUs := newCloseTwins(t, cw, "twin"), newCloseTwins(t, cw, "twin")
	s := cw.store(t, claim.Options{})
	ctx := context.Background()
	commit := func() (log, stat []string) {
		look(func(q claimtest.Querier) {
			log = claimtest.Strings(t, q, "SELECT CONCAT(message, '|', committer, '|', email) FROM dolt_log LIMIT 1")
			stat = claimtest.Strings(t, q, "SELECT CONCAT(table_name, ' ', rows_modified, ' ', cells_modified) FROM dolt_diff_stat('HEAD~1', 'HEAD')")
		})
		return log, stat
	}
	rows := func(ids ...string) (out []map[string]string) {
		look(func(q claimtest.Querier) {
			for _, id := range ids {
				out = append(out, rowOf(t, q, "issues", "id", id))
			}
		})
		return out
	}
	for _, pair := range [][2]string{{viaBd.head, viaUs.head}, {viaBd.child, viaUs.child}} {
		for _, id := range pair {
			_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: id})
			assert.NilError(t, err)
		}
		before := rows(pair[0], pair[1])
		time.Sleep(1100 * time.Millisecond)
		bdA.OK("close", pair[0], "--reason", "done")
		bdCommit, bdStat := commit()
		time.Sleep(1100 * time.Millisecond)
		_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: pair[1], Reason: "done"})
		assert.NilError(t, err)
		ourCommit, ourStat := commit()
		assert.DeepEqual(t, bdCommit, []string{"bd: close " + pair[0] + "|beads|beads@local"})
		assert.DeepEqual(t, ourCommit, []string{"bd: close " + pair[1] + "|beads|beads@local"})
		assert.DeepEqual(t, ourStat, bdStat)
		after := rows(pair[0], pair[1])
		assert.DeepEqual(t, claimtest.Changed(before[1], after[1]), claimtest.Changed(before[0], after[0]))
		for _, c := range []string{"status", "close_reason", "closed_by_session", "content_hash", "assignee", "is_blocked"} {
			assert.Equal(t, after[1][c], after[0][c], c)
		}
		look(func(q claimtest.Querier) {
			assert.DeepEqual(t, closeEvents(t, q, pair[1]), closeEvents(t, q, pair[0]))
			assert.DeepEqual(t, closeEvents(t, q, pair[1]), []string{"closed|a||done|<null>"})
			for _, id := range pair {
				assert.Equal(t, claimtest.Count(t, q, "SELECT count(*) FROM leases WHERE issue_id = ?", id), 0)
			}
		})
	}
	for _, pair := range [][2]string{{viaBd.mid, viaUs.mid}, {viaBd.tail, viaUs.tail}, {viaBd.epic, viaUs.epic}} {
		r := rows(pair[0], pair[1])
		for _, c := range []string{"status", "is_blocked"} {
			assert.Equal(t, r[1][c], r[0][c], "%s of %s and its twin %s", c, pair[1], pair[0])
		}
	}
	look(func(q claimtest.Querier) {
		cells := claimtest.Strings(t, q, "SELECT `key` FROM local_metadata WHERE `key` LIKE 'dependency-coordination/%' ORDER BY `key`")
		assert.Equal(t, len(cells)%2, 0, "both tiers: %v", cells)
	})
}
