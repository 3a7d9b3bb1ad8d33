package claim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// doltStore opens a Store on a Dolt workspace as the CLI would: discovery
// from the workspace directory with bd's environment.
func doltStore(t testing.TB, w *claimtest.DoltWorkspace, o claim.Options) *claim.Store {
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

// A waiting claim on a Dolt workspace is woken by another Store's commit
// (the working set's hash changes) and claims what was released, before
// the periodic look would have run; a dry run only finds it.
func TestDoltWaitWakesOnRelease(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "wk")
	id := bdCreate(t, w, "the only one")
	s, other := doltStore(t, w, claim.Options{}), doltStore(t, w, claim.Options{})
	ctx := context.Background()
	for _, dry := range []bool{false, true} {
		held, err := other.Claim(ctx, claim.Request{Agent: "holder"})
		assert.NilError(t, err)
		assert.Equal(t, held.Issue.ID, id)
		released := make(chan error, 1)
		time.AfterFunc(200*time.Millisecond, func() {
			_, err := other.Release(ctx, claim.ReleaseRequest{Agent: "holder", ID: id})
			released <- err
		})
		start := time.Now()
		res, err := s.Claim(ctx, claim.Request{Agent: "waiter", Wait: 10 * time.Second, DryRun: dry})
		took := time.Since(start)
		assert.NilError(t, <-released)
		assert.NilError(t, err)
		assert.Equal(t, res.Issue.ID, id)
		assert.Assert(t, took < 2*time.Second, "woken by the commit, not by the periodic look: %s", took)
		if !dry {
			assert.Equal(t, res.Issue.Assignee, "waiter")
			_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "waiter", ID: id})
			assert.NilError(t, err)
		}
	}
}
