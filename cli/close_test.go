package cli_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/cli"
)

// closeRefused runs bd-claim close as agent a on issue id in dir and
// requires its refusal: code, exit status, a message saying why, and
// nothing written (snapshot is the workspace's rows, before and after).
func closeRefused(t *testing.T, dir string, env []string, snapshot func() any, id string, code claim.Code, exit int, why string) {
	t.Helper()
	before := snapshot()
	out, r := lc(t, dir, env, "close", "--agent", "a", "--id", id, "--reason", "done")
	assert.Equal(t, r.ExitCode, exit, "%s", r.Stdout())
	assert.Equal(t, out.Error.Code, code, "%s", r.Stdout())
	assert.Assert(t, strings.Contains(out.Error.Message, why), "%q lacks %q", out.Error.Message, why)
	assert.DeepEqual(t, snapshot(), before)
}

// bdRefusesClose runs the workspace's own `bd close` of id as agent a and
// requires it to refuse too (bd prints the refusal; some bd releases exit
// 0 all the same), the issue still in_progress and a's.
func bdRefusesClose(t *testing.T, bd *claimtest.BdRunner, id, why string) {
	t.Helper()
	r := bd.Bd("close", id, "--reason", "done")
	assert.Assert(t, strings.Contains(r.Combined(), why), "bd close %s: %s", id, r.Combined())
	var shown []struct{ Status, Assignee string }
	bd.JSON(&shown, "show", id)
	assert.Assert(t, len(shown) == 1 && shown[0].Status+"/"+shown[0].Assignee == "in_progress/a", "%+v", shown)
}

// On SQLite, bd-claim refuses to close a held issue that bd close (v0.47
// and later) refuses: one blocked by an open issue (NOT_CLAIMABLE, exit
// 7, naming the blocker); bd close refuses it alike. A workspace an older
// bd wrote, whose close bd-claim does not write, is refused
// SCHEMA_INCOMPATIBLE (exit 6). Nothing changes.
func TestCloseRefusedSQLite(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"v0.47.1", "v0.49.6"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			w := claimtest.SQLiteWorkspace(t, v)
			var blocker, held struct{ ID string }
			w.JSON(&blocker, "create", "blocker", "-p", "1")
			w.JSON(&held, "create", "held", "-p", "1")
			lcOK(t, w.Dir, nil, "--agent", "a", "--id", held.ID)
			w.OK("dep", "add", held.ID, blocker.ID)
			snapshot := func() any { return claimtest.Snapshot(t, claimtest.DBPath(w.Dir)) }
			closeRefused(t, w.Dir, nil, snapshot, held.ID, claim.ENotClaimable, cli.ExitRefused, "is blocked by open issues "+blocker.ID)
			bdRefusesClose(t, &w.As("a").BdRunner, held.ID, "blocked by open issues")
		})
	}
	t.Run("v0.27.2", func(t *testing.T) {
		t.Parallel()
		root := claimtest.Fixture(t, "0.27.2")
		held := lcOK(t, root, nil, "--agent", "a")
		snapshot := func() any { return claimtest.Snapshot(t, claimtest.DBPath(root)) }
		closeRefused(t, root, nil, snapshot, held.Issue.ID, claim.ESchema, cli.ExitSchema, "bd-claim writes the close of bd 0.47.0")
	})
}

// On a Dolt server (bd v1.3.0), bd-claim refuses to close a held issue
// that bd close refuses: one blocked by an open issue, one with an open
// child (NOT_CLAIMABLE, exit 7); bd close refuses them alike. A held wisp
// is refused INVALID_ARGUMENT (exit 2): bd-claim does not write a wisp's
// close. Nothing changes.
func TestCloseRefusedDolt(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "clr")
	conn := w.DB(t)
	create := func(title string, flags ...string) string {
		var iss struct{ ID string }
		w.JSON(&iss, append([]string{"create", title, "-p", "1"}, flags...)...)
		return iss.ID
	}
	blocker, blocked := create("blocker"), create("blocked")
	epic := create("epic", "-t", "epic")
	create("child", "--parent", epic)
	wisp := create("wisp", "--no-history")
	for _, id := range []string{blocked, epic, wisp} {
		lcOK(t, w.Dir, w.Env, "--agent", "a", "--id", id)
	}
	w.OK("dep", "add", blocked, blocker)
	snapshot := func() any { return claimtest.DoltRows(t, conn) }
	closeRefused(t, w.Dir, w.Env, snapshot, blocked, claim.ENotClaimable, cli.ExitRefused, "is blocked by "+blocker)
	closeRefused(t, w.Dir, w.Env, snapshot, epic, claim.ENotClaimable, cli.ExitRefused, "has 1 open child issue")
	closeRefused(t, w.Dir, w.Env, snapshot, wisp, claim.EInvalid, cli.ExitInvalid, "is a wisp")
	bd := &w.As("a").BdRunner
	bdRefusesClose(t, bd, blocked, "blocked")
	bdRefusesClose(t, bd, epic, "open child")
}
