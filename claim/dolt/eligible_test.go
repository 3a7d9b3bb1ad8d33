package dolt_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// The cells that a move by bd and its twin by bd-claim leave equal.
var twinSame = []string{"assignee", "status", "content_hash", "is_blocked"}

// eligibility is a bd v1.3.0 workspace for the claim-by-id twins: bd as
// an actor, the database, and a Store on it.
type eligibility struct {
	t    *testing.T
	as   func(actor string) *claimtest.BdRunner
	conn *sql.DB
	s    *claim.Store
	// oursFirst: bd-claim moves its issue before bd moves the twin, each
	// seeing the workspace as it was. bd first repairs an empty
	// custom_statuses table from config status.custom when it starts (its
	// migration's commit, which moves comes without).
	oursFirst bool
}

// moves has bd move a (bdMove) and bd-claim b (ours), in the order of
// e.oursFirst, and returns their footprints, bd's first.
func (e eligibility) moves(a, b string, bdMove, ours func()) (fa, fb claimtest.Footprint) {
	e.t.Helper()
	view := func(fn func(claimtest.Querier)) { fn(e.conn) }
	if !e.oursFirst {
		return claimtest.Moves(e.t, view, a, b, bdMove, ours)
	}
	fb, fa = claimtest.Moves(e.t, view, b, a, ours, bdMove)
	if len(fa.Commits) > 0 && fa.Commits[0].Message == "schema: apply migrations" {
		assert.DeepEqual(e.t, fa.Commits[0].Stat, []string{"custom_statuses 2 0 0 0"})
		fa.Commits = fa.Commits[1:]
	}
	return fa, fb
}

// pair makes two identical open issues and has bd set each one's fields
// (bd update FLAGS), as bd's own actor.
func (e eligibility) pair(flags ...string) (a, b string) {
	e.t.Helper()
	cw := &conformance.Workspace{BdRunner: e.as("bd-test")}
	a, b = cw.Create(e.t, "twin", "-p", "2", "-l", "x"), cw.Create(e.t, "twin", "-p", "2", "-l", "x")
	if len(flags) > 0 {
		e.as("bd-test").OK(append([]string{"update", a, b}, flags...)...)
	}
	return a, b
}

// claimed claims a with `bd update --claim` as actor and b with bd-claim
// --id as the same actor, and compares their footprints (Twin): the same
// cells change, to the same status and assignee, the same lease, events and
// Dolt commit.
func (e eligibility) claimed(actor, a, b string) claimtest.Footprint {
	e.t.Helper()
	fa, fb := e.moves(a, b, func() { e.as(actor).OK("update", a, "--claim", "--json") }, func() {
		res, err := e.s.Claim(context.Background(), claim.Request{Agent: actor, ID: b})
		assert.NilError(e.t, err)
		assert.Equal(e.t, res.Issue.ID, b)
	})
	fa.Twin(e.t, fb, twinSame...)
	return fa
}

// refused has bd claim a as actor, and bd-claim its twin b: both refuse,
// and neither writes anything (no cell, lease, event or Dolt commit).
// bd-claim's refusal has code and says why.
func (e eligibility) refused(actor, a, b string, code claim.Code, why string) {
	e.t.Helper()
	var bd string
	fa, fb := e.moves(a, b, func() {
		r := e.as(actor).Bd("update", a, "--claim", "--json")
		bd = r.Combined()
		assert.Assert(e.t, r.ExitCode != 0, "bd claimed %s: %s", a, bd)
	}, func() {
		_, err := e.s.Claim(context.Background(), claim.Request{Agent: actor, ID: b})
		assert.Equal(e.t, claim.ErrorCode(err), code, "%v (bd: %s)", err, bd)
		assert.ErrorContains(e.t, err, why)
	})
	for _, f := range []claimtest.Footprint{fa, fb} {
		assert.Assert(e.t, len(f.Changed())+len(f.LeaseChanged())+len(f.Events)+len(f.Commits) == 0, "%s: %+v", f.ID, f)
	}
}

// bd v1.3.0's claim by id (`bd update ID --claim`) takes more than an open
// issue assigned to nobody or to its actor (issueops.ClaimIssueInTx, and
// its dual in proxied-server mode; beads' claimer contract): an issue whose
// status is a custom status of category active, one assigned to a claim
// pool (config claim.pools, matched exactly), and one assigned to the
// actor under another spelling (actorMatches: runs of . _ - are one
// separator, "--" is "/"). bd-claim --id takes the twin of each alike, and
// refuses alike what bd refuses: a custom status of another category
// (wip), an issue pre-assigned to another actor. A re-claim under another
// spelling writes nothing, as bd's.
func TestDoltClaimEligibilityTwins(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		w := claimtest.NeedDolt(t).Workspace(t, "el")
		eligibilityTwins(t, eligibility{t: t, as: func(a string) *claimtest.BdRunner { return &w.As(a).BdRunner },
			conn: w.DB(t), s: doltStore(t, w, claim.Options{})})
	})
	t.Run("proxied", func(t *testing.T) {
		w := claimtest.ProxiedWorkspace(t, "ep")
		eligibilityTwins(t, eligibility{t: t, as: func(a string) *claimtest.BdRunner { return &w.As(a).BdRunner },
			conn: w.DB(t), s: conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})})
	})
}

func eligibilityTwins(t *testing.T, e eligibility) {
	bd := e.as("bd-test")
	bd.OK("config", "set", "status.custom", "triaged:active,reviewing:wip")
	bd.OK("config", "set", "claim.pools", "crew, night-crew")

	a, b := e.pair("--status", "triaged")
	f := e.claimed("agent-1", a, b)
	assert.Equal(t, f.Before["status"]+" > "+f.After["status"], "triaged > in_progress")
	a, b = e.pair("--status", "reviewing")
	e.refused("agent-1", a, b, claim.ENotClaimable, "its status is reviewing")

	a, b = e.pair("--assignee", "night-crew")
	f = e.claimed("agent-1", a, b)
	assert.Equal(t, f.Before["assignee"]+" > "+f.After["assignee"], "night-crew > agent-1")
	a, b = e.pair("--assignee", "night")
	e.refused("agent-1", a, b, claim.EAlready, "held by night")

	a, b = e.pair("--assignee", "gastown__mayor")
	f = e.claimed("gastown.mayor", a, b)
	assert.Equal(t, f.After["assignee"], "gastown.mayor", "the claim writes the actor's own spelling")
	a, b = e.pair()
	e.as("gastown--mayor").OK("update", a, b, "--claim")
	f = e.claimed("gastown/mayor", a, b)
	assert.Assert(t, len(f.Changed())+len(f.Events)+len(f.Commits) == 0, "a re-claim writes nothing: %+v", f)
	e.refused("gastown__mayor", a, b, claim.EAlready, "held by gastown--mayor")

	// Every other move of the holder takes the issue as the agent's under
	// either spelling too, as bd's heartbeat does (actorMatches): bd's
	// heartbeat of a, and bd-claim's resume, heartbeat, close and release.
	e.as("gastown/mayor").OK("heartbeat", a)
	ctx := context.Background()
	res, err := e.s.Claim(ctx, claim.Request{Agent: "gastown/mayor", Resume: true, DryRun: true})
	assert.NilError(t, err)
	assert.Assert(t, res.Resumed && (res.Issue.ID == a || res.Issue.ID == b), "%+v", res)
	_, err = e.s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "gastown/mayor", ID: b})
	assert.NilError(t, err)
	_, err = e.s.CloseIssue(ctx, claim.CloseRequest{Agent: "gastown/mayor", ID: b, Reason: "done"})
	assert.NilError(t, err)
	closed, err := e.s.CloseIssue(ctx, claim.CloseRequest{Agent: "gastown/mayor", ID: b, Reason: "done"})
	assert.NilError(t, err)
	assert.Assert(t, closed.Already)
	_, err = e.s.Release(ctx, claim.ReleaseRequest{Agent: "gastown/mayor", ID: a})
	assert.NilError(t, err)
}

// bd v1.3.0 reads its custom statuses from the custom_statuses table when
// it has rows, else from config status.custom, else from status.custom in
// .beads/config.yaml (ResolveCustomStatusesDetailedInTx); a value it cannot
// parse is no custom status at all. bd-claim --id follows each source as
// bd does, on twins, each claim made before bd's own (bd refills an empty
// table from config status.custom when it starts).
func TestDoltClaimEligibilityFallbacks(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "ef")
	e := eligibility{t: t, as: func(a string) *claimtest.BdRunner { return &w.As(a).BdRunner }, conn: w.DB(t), s: doltStore(t, w, claim.Options{}), oursFirst: true}
	exec := func(q ...string) {
		t.Helper()
		for _, s := range q {
			_, err := e.conn.Exec(s)
			assert.NilError(t, err, s)
		}
		_, err := e.conn.Exec("CALL DOLT_COMMIT('-Am', 'test')")
		assert.NilError(t, err)
	}
	triaged := func() (a, b string) {
		a, b = e.pair()
		exec("UPDATE issues SET status = 'triaged' WHERE id IN ('" + a + "', '" + b + "')")
		return a, b
	}
	w.OK("config", "set", "status.custom", "triaged:active,later")
	c, d := e.pair("--status", "later")

	// The config string, the table empty.
	a, b := triaged()
	exec("DELETE FROM custom_statuses")
	e.claimed("agent-1", a, b)
	exec("DELETE FROM custom_statuses")
	e.refused("agent-1", c, d, claim.ENotClaimable, "its status is later")

	// A config string bd cannot parse (a built-in name): no custom status.
	a, b = triaged()
	exec("DELETE FROM custom_statuses", "UPDATE config SET value = 'triaged:active,open:active' WHERE `key` = 'status.custom'")
	e.refused("agent-1", a, b, claim.ENotClaimable, "its status is triaged")

	// config.yaml, without the config key: a string of names, then a list.
	exec("DELETE FROM custom_statuses", "DELETE FROM config WHERE `key` = 'status.custom'")
	e.refused("agent-2", a, b, claim.ENotClaimable, "its status is triaged")
	cfg := filepath.Join(w.Dir, ".beads", "config.yaml")
	text, err := os.ReadFile(cfg)
	assert.NilError(t, err)
	assert.Assert(t, !strings.Contains(string(text), "status:"), "%s", text)
	assert.NilError(t, os.WriteFile(cfg, append(slices.Clone(text), "\nstatus:\n  custom: \"triaged:active later\"\n"...), 0o644))
	e.claimed("agent-2", a, b)
	a, b = triaged()
	assert.NilError(t, os.WriteFile(cfg, append(slices.Clone(text), "\nstatus.custom: [later, \"triaged:active\"]\n"...), 0o644))
	e.claimed("agent-2", a, b)
}
