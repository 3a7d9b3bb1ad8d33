package dolt_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
	"gotest.tools/v3/assert"
)

// Close twins on a Dolt server (bd v1.3.0): see doltCloseTwins.
func TestCloseTwinsDolt(t *testing.T) {
	dw := claimtest.NeedDolt(t).Workspace(t, "ct")
	conn := dw.DB(t)
	doltCloseTwins(t, &conformance.Workspace{BdRunner: &dw.BdRunner}, &dw.As("a").BdRunner, func(fn func(claimtest.Querier)) { fn(conn) })
}

// doltCloseTwins closes twins on a bd v1.3.0 workspace (a server's, or an
// embedded one, whose database look opens for fn and closes again): the
// same cells change when bd (bdA, acting as a) closes an issue and
// bd-claim its twin (the issue closed with a fresh row_lock), the closed
// events are alike, the lease rows are gone, both coordination cells of
// the issue's shard are rewritten (and no other local_metadata row), the unblocked issue's is_blocked is
// cleared alike, and each close is one Dolt commit "bd: close ID" by
// beads <beads@local> with the same diff stat as bd's (the unblocked
// issue's is_blocked included).
func doltCloseTwins(t *testing.T, cw *conformance.Workspace, bdA *claimtest.BdRunner, look func(fn func(claimtest.Querier))) {
	t.Helper()
	viaBd, viaUs := conformance.NewCloseTwins(t, cw, "twin"), conformance.NewCloseTwins(t, cw, "twin")
	s := cw.Store(t, claim.Options{})
	ctx := context.Background()
	commit := func() (log, stat []string) {
		look(func(q claimtest.Querier) {
			log = claimtest.Strings(t, q, "SELECT CONCAT(message, '|', committer, '|', email) FROM dolt_log LIMIT 1")
			stat = claimtest.Strings(t, q, "SELECT CONCAT(table_name, ' ', rows_modified, ' ', cells_modified) FROM dolt_diff_stat('HEAD~1', 'HEAD')")
		})
		return log, stat
	}
	metadata := func() (kv map[string]string) {
		look(func(q claimtest.Querier) {
			kv = map[string]string{}
			for _, row := range claimtest.Strings(t, q, "SELECT CONCAT(`key`, '\x1f', `value`) FROM local_metadata") {
				k, v, _ := strings.Cut(row, "\x1f")
				kv[k] = v
			}
		})
		return kv
	}
	rows := func(ids ...string) (out []map[string]string) {
		look(func(q claimtest.Querier) {
			for _, id := range ids {
				out = append(out, claimtest.RowOf(t, q, "issues", "id", id))
			}
		})
		return out
	}
	for _, pair := range [][2]string{{viaBd.Head, viaUs.Head}, {viaBd.Child, viaUs.Child}} {
		for _, id := range pair {
			_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: id})
			assert.NilError(t, err)
		}
		before := rows(pair[0], pair[1])
		cells := metadata()
		time.Sleep(1100 * time.Millisecond)
		bdA.OK("close", pair[0], "--reason", "done")
		bdCommit, bdStat := commit()
		bdCells := metadata()
		time.Sleep(1100 * time.Millisecond)
		_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: pair[1], Reason: "done"})
		assert.NilError(t, err)
		ourCommit, ourStat := commit()
		// bd's close rewrites its issue's two coordination cells and no
		// other local_metadata row; bd-claim's close does the same.
		assert.DeepEqual(t, rewritten(cells, bdCells), coordinationCells(pair[0]))
		assert.DeepEqual(t, rewritten(bdCells, metadata()), coordinationCells(pair[1]))
		assert.DeepEqual(t, bdCommit, []string{"bd: close " + pair[0] + "|beads|beads@local"})
		assert.DeepEqual(t, ourCommit, []string{"bd: close " + pair[1] + "|beads|beads@local"})
		assert.DeepEqual(t, ourStat, bdStat)
		after := rows(pair[0], pair[1])
		assert.DeepEqual(t, claimtest.Changed(before[1], after[1]), claimtest.Changed(before[0], after[0]))
		for _, c := range []string{"status", "close_reason", "closed_by_session", "content_hash", "assignee", "is_blocked"} {
			assert.Equal(t, after[1][c], after[0][c], c)
		}
		look(func(q claimtest.Querier) {
			assert.DeepEqual(t, claimtest.CloseEvents(t, q, pair[1]), claimtest.CloseEvents(t, q, pair[0]))
			assert.DeepEqual(t, claimtest.CloseEvents(t, q, pair[1]), []string{"closed|a||done|<null>"})
			for _, id := range pair {
				assert.Equal(t, claimtest.Count(t, q, "SELECT count(*) FROM leases WHERE issue_id = ?", id), 0)
			}
		})
	}
	for _, pair := range [][2]string{{viaBd.Mid, viaUs.Mid}, {viaBd.Tail, viaUs.Tail}, {viaBd.Epic, viaUs.Epic}} {
		r := rows(pair[0], pair[1])
		for _, c := range []string{"status", "is_blocked"} {
			assert.Equal(t, r[1][c], r[0][c], "%s of %s and its twin %s", c, pair[1], pair[0])
		}
	}
}

// rewritten is the keys whose value differs from before to after, or that
// are new, sorted.
func rewritten(before, after map[string]string) []string {
	var keys []string
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// coordinationCells are the keys of issue id's dependency coordination
// cells, as bd v1.3.0 names them (issueops.dependencyCoordinationKey): the
// shard of the first 12 bits of the id's SHA-256, in both tiers. bd
// rewrites them with a fresh random value at every close.
func coordinationCells(id string) []string {
	sum := sha256.Sum256([]byte(id))
	shard := uint16(sum[0])<<4 | uint16(sum[1])>>4
	return []string{
		fmt.Sprintf("dependency-coordination/v1/dependencies/%03x", shard),
		fmt.Sprintf("dependency-coordination/v1/wisp_dependencies/%03x", shard),
	}
}
