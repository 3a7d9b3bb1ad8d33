package claim_test

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// doltStore opens a Store on a Dolt workspace as the CLI would: discovery
// from the workspace directory with bd's environment.
func doltStore(t *testing.T, w *claimtest.DoltWorkspace, o claim.Options) *claim.Store {
	t.Helper()
	ws, err := claim.FindWorkspace(claim.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	s, err := claim.Open(context.Background(), ws, o)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// bdCreate creates an issue with the real bd and returns its id.
func bdCreate(t *testing.T, w *claimtest.DoltWorkspace, title string, flags ...string) string {
	t.Helper()
	var out struct{ ID string }
	w.JSON(&out, append([]string{"create", title}, flags...)...)
	return out.ID
}

func TestDoltClaimSmoke(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "sm")
	low := bdCreate(t, w, "low", "-p", "3")
	high := bdCreate(t, w, "high", "-p", "1")
	s := doltStore(t, w, claim.Options{})
	res, err := s.Claim(context.Background(), claim.Request{Agent: "agent-1"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, high)
	conn := w.DB(t)
	var status, assignee, holder, msg, author string
	assert.NilError(t, conn.QueryRow("SELECT status, assignee FROM issues WHERE id = ?", high).Scan(&status, &assignee))
	assert.Equal(t, status+"/"+assignee, "in_progress/agent-1")
	assert.NilError(t, conn.QueryRow("SELECT holder FROM leases WHERE issue_id = ?", high).Scan(&holder))
	assert.Equal(t, holder, "agent-1")
	assert.NilError(t, conn.QueryRow("SELECT message, committer FROM dolt_log LIMIT 1").Scan(&msg, &author))
	assert.Equal(t, msg, "bd: claim ready "+high)
	var shown []struct{ Status, Assignee string }
	w.JSON(&shown, "show", high)
	assert.Equal(t, shown[0].Status, "in_progress")
	_ = low
	_ = strings.Contains
}
