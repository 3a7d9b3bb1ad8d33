//go:build embedded

package dolt_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// embeddedShow is bd show ID on an embedded workspace: status/assignee.
func embeddedShow(t *testing.T, w *claimtest.BdWorkspace, id string) string {
	t.Helper()
	return (&conformance.Workspace{BdRunner: &w.BdRunner}).Show(t, id)
}

// A maintenance command holding one of bd's gates exclusively (here the
// embedded database's, with the holder file bd writes) stops every claim at
// once, DB_UNAVAILABLE, naming it; nothing changes. Let go, claims work.
func TestEmbeddedMaintenanceGate(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "gt")
	id := (&conformance.Workspace{BdRunner: &w.BdRunner}).Create(t, "one")
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})
	gate := filepath.Join(w.Dir, ".beads", "embeddeddolt.gate.lock")
	f, err := os.OpenFile(gate, os.O_CREATE|os.O_RDWR, 0o600)
	assert.NilError(t, err)
	assert.NilError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	assert.NilError(t, os.WriteFile(gate+".info", []byte(`{"pid":4242,"reason":"bd backup restore","started_at":"2026-11-25T10:00:00Z"}`), 0o600))
	_, err = s.Claim(context.Background(), claim.Request{Agent: "a"})
	assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
	assert.ErrorContains(t, err, "a maintenance operation is running on this workspace (pid 4242 (bd backup restore) since 2026-11-25T10:00:00Z holds "+gate+")")
	f.Close()
	assert.Equal(t, embeddedShow(t, w, id), "open/")
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
}

// While another process has the engine open, a claim waits up to its busy
// timeout, then fails BUSY (exit 4) with nothing written; once the
// engine is closed, the claim goes through.
func TestEmbeddedEngineHeld(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "hd")
	id := (&conformance.Workspace{BdRunner: &w.BdRunner}).Create(t, "one")
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{BusyTimeout: 300 * time.Millisecond})
	ws := s.Workspace.Embedded
	_, end, err := dolt.OpenEmbeddedConn(context.Background(), ws.Dir, ws.Database, time.Second, nil)
	assert.NilError(t, err)
	start := time.Now()
	_, err = s.Claim(context.Background(), claim.Request{Agent: "a"})
	waited := time.Since(start)
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "kept the embedded Dolt database open past the timeout")
	assert.Assert(t, waited >= 300*time.Millisecond && waited < 5*time.Second, "waited %s", waited)
	end()
	assert.Equal(t, embeddedShow(t, w, id), "open/")
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
	assert.Equal(t, embeddedShow(t, w, id), "in_progress/a")
}

// An embedded workspace whose database is gone: the first operation (the
// open check runs in its session) fails DB_NOT_FOUND, whether the
// database's directory or all of .beads/embeddeddolt is missing.
func TestEmbeddedNoDatabase(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "nd")
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	other := ws
	other.Embedded = &claim.EmbeddedDolt{Dir: ws.Embedded.Dir, Database: "nosuch"}
	claimIn := func(ws claim.Workspace) error {
		s, err := engines.Open(context.Background(), ws, claim.Options{})
		assert.NilError(t, err)
		defer s.Close()
		_, err = s.Claim(context.Background(), claim.Request{Agent: "a"})
		return err
	}
	err = claimIn(other)
	assert.Equal(t, claim.ErrorCode(err), claim.EDBNotFound, "%v", err)
	assert.NilError(t, os.RemoveAll(ws.Embedded.Dir))
	err = claimIn(ws)
	assert.Equal(t, claim.ErrorCode(err), claim.EDBNotFound, "%v", err)
}

// inspect runs fn on the embedded database of w, opened in this process
// and closed before fn returns, so that bd and bd-claim can open it again.
func inspect(t *testing.T, w *claimtest.BdWorkspace, fn func(q claimtest.Querier)) {
	t.Helper()
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	conn, end, err := dolt.OpenEmbeddedConn(context.Background(), ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
	assert.NilError(t, err)
	defer end()
	fn(conn)
}

// embeddedView is w's embedded database, opened for each look (inspect).
func embeddedView(t *testing.T, w *claimtest.BdWorkspace) claimtest.View {
	return func(fn func(claimtest.Querier)) { inspect(t, w, fn) }
}

// twinPair makes two identical issues (title, priority, label,
// description) and has bd claim both as holder (`bd update --claim`),
// unless holder is "".
func twinPair(t *testing.T, w *claimtest.BdWorkspace, holder string) (a, b string) {
	t.Helper()
	cw := &conformance.Workspace{BdRunner: &w.BdRunner}
	a = cw.Create(t, "twin", "-p", "1", "-l", "backend", "-d", "the same description")
	b = cw.Create(t, "twin", "-p", "1", "-l", "backend", "-d", "the same description")
	if holder != "" {
		w.As(holder).OK("update", a, b, "--claim", "--json")
	}
	return a, b
}

// Embedded twins: one issue claimed by `bd update --claim`, its twin by
// bd-claim --id, as the same agent (claimtest.Footprint.Twin). The same
// five cells change, with the same values where they do not depend on
// the time; the leases rows are bd's 5 minutes; the claimed events have
// the same shape; each claim is one Dolt commit of the issues table, by
// bd's author with bd's message, of one row and five cells.
func TestEmbeddedTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "tw")
	view := embeddedView(t, w)
	a, b := twinPair(t, w, "")
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})
	fa, fb := claimtest.Moves(t, view, a, b, func() { w.As("agent-1").OK("update", a, "--claim", "--json") }, func() {
		_, err := s.Claim(context.Background(), claim.Request{Agent: "agent-1", ID: b})
		assert.NilError(t, err)
	})
	assert.DeepEqual(t, fa.Changed(), []string{"assignee", "row_lock", "started_at", "status", "updated_at"})
	assert.Equal(t, fa.LeaseAfter["ttl"], "300")
	assert.DeepEqual(t, fa.Events, []claimtest.TwinEvent{{Type: "claimed", Actor: "agent-1", Comment: "NULL",
		NewValue: `{"assignee":"agent-1","status":"in_progress"}`, OldKeys: fa.Events[0].OldKeys}})
	assert.DeepEqual(t, fa.Commits, []claimtest.TwinCommit{{Message: "bd: update ID", Author: "beads <beads@local>", Stat: []string{"issues 0 0 1 5"}}})
	fa.Twin(t, fb, twinSame...)
}

// Embedded release twins: two issues claimed by bd as the same agent, one
// released by `bd unclaim`, its twin by bd-claim release. The same cells
// change to the same values, both leases rows go, the unclaimed events
// have the same shape, and each release is bd unclaim's Dolt commit in
// embedded mode: the auto-commit bd makes after the command,
// DOLT_COMMIT('-Am') by the engine's session user (root <root@%>), "bd:
// unclaim (auto-commit) by AGENT", of one issues row and five cells (not
// server mode's "bd: unclaim ID" by beads <beads@local>). Then a label
// removal's commit (a reset's).
func TestEmbeddedReleaseTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "rt")
	a, b := twinPair(t, w, "agent-1")
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})
	fa, fb := claimtest.Moves(t, embeddedView(t, w), a, b, func() { w.As("agent-1").OK("unclaim", a) }, func() {
		_, err := s.Release(context.Background(), claim.ReleaseRequest{Agent: "agent-1", ID: b})
		assert.NilError(t, err)
	})
	assert.DeepEqual(t, fa.Changed(), []string{"assignee", "row_lock", "started_at", "status", "updated_at"})
	assert.DeepEqual(t, fa.LeaseChanged(), []string{"deleted"})
	assert.Equal(t, len(fa.Events), 1)
	assert.Equal(t, fa.Events[0].Type+" "+fa.Events[0].NewValue, `unclaimed {"assignee":"","status":"open"}`)
	assert.DeepEqual(t, fa.Commits, []claimtest.TwinCommit{{Message: "bd: unclaim (auto-commit) by agent-1", Author: "root <root@%>", Stat: []string{"issues 0 0 1 5"}}})
	fa.Twin(t, fb, twinSame...)

	// The abandoned label removed by `bd label remove` and by bd-claim
	// reset: bd's commit of a label change in embedded mode is an issue
	// update's, "bd: update ID" (server mode's is "bd: label remove ID").
	// The reset's commit also adds its note, a bd comment.
	for _, id := range []string{a, b} {
		w.OK("label", "add", id, "claim:abandoned")
	}
	fa, fb = claimtest.Moves(t, embeddedView(t, w), a, b, func() { w.OK("label", "remove", a, "claim:abandoned") }, func() {
		_, err := s.Reset(context.Background(), claim.ResetRequest{Actor: "bd-test", ID: b})
		assert.NilError(t, err)
	})
	assert.DeepEqual(t, fa.Commits, []claimtest.TwinCommit{{Message: "bd: update ID", Author: "beads <beads@local>", Stat: []string{"labels 0 1 0 0"}}})
	assert.DeepEqual(t, fb.Commits, []claimtest.TwinCommit{{Message: "bd: update ID", Author: "beads <beads@local>", Stat: []string{"comments 1 0 0 0", "labels 0 1 0 0"}}})
}

// Embedded heartbeat twins: two issues claimed by bd as the same agent,
// one renewed by `bd heartbeat`, its twin by bd-claim heartbeat. Only the
// leases rows change, both the same columns (heartbeat_at and
// lease_expires_at, to bd's 5 minutes from now); no issues cell, no
// event, no Dolt commit (the leases table is dolt_ignored: bd's
// auto-commit after the command finds nothing to commit).
func TestEmbeddedHeartbeatTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "hb")
	a, b := twinPair(t, w, "agent-1")
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})
	fa, fb := claimtest.Moves(t, embeddedView(t, w), a, b, func() { w.As("agent-1").OK("heartbeat", a) }, func() {
		_, err := s.Heartbeat(context.Background(), claim.HeartbeatRequest{Agent: "agent-1", ID: b})
		assert.NilError(t, err)
	})
	assert.Assert(t, fa.Changed() == nil && fa.Events == nil && fa.Commits == nil, "%+v", fa)
	assert.DeepEqual(t, fa.LeaseChanged(), []string{"heartbeat_at", "lease_expires_at"})
	assert.Equal(t, fa.LeaseAfter["ttl"], "300")
	fa.Twin(t, fb)
}

// Embedded takeover twins. bd has no one-step takeover: `bd update
// --claim` refuses an issue whose holder's lease has expired (it is
// "already assigned"), so bd's way is `bd reclaim` then `bd update
// --claim`, two Dolt commits; bd-claim --id takes the issue over in one
// transaction and one commit, the claim's ("bd: update ID", by beads
// <beads@local>), whose change is the net change of bd's two (one issues
// row, four cells: status stays in_progress). The issues cells, the new
// holder's lease and the events (lease_reclaimed, then claimed) are bd's,
// but for the lease_reclaimed comment: bd's is NULL, bd-claim's says
// whose lease ended and who took over. Then reap against bd reclaim: the
// same footprint, and bd reclaim's commit in embedded mode, its
// auto-commit by root <root@%> naming the issue ("bd: reclaim
// (auto-commit) by AGENT [ID]"; server mode's is "bd: reclaim 1 expired
// lease(s)" by beads).
func TestEmbeddedTakeoverTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "to")
	a, b := twinPair(t, w, "agent-old")
	c, d := twinPair(t, w, "agent-old")
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})
	ctx := context.Background()
	for _, id := range []string{a, b, c, d} { // bd's leases end in a second
		_, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "agent-old", ID: id, Lease: time.Second})
		assert.NilError(t, err)
	}
	time.Sleep(1500 * time.Millisecond)
	view := embeddedView(t, w)
	fa, fb := claimtest.Moves(t, view, a, b, func() {
		w.As("agent-new").OK("reclaim", "--older-than", "0s", "--id", a)
		w.As("agent-new").OK("update", a, "--claim", "--json")
	}, func() {
		res, err := s.Claim(ctx, claim.Request{Agent: "agent-new", ID: b})
		assert.NilError(t, err)
		assert.Assert(t, res.TookOver != nil && res.TookOver.Agent == "agent-old", "%+v", res.TookOver)
	})
	assert.DeepEqual(t, fa.Changed(), []string{"assignee", "row_lock", "started_at", "updated_at"})
	// bd's claim changes 4 or 5 cells: updated_at stays when the reclaim
	// came in the same second.
	assert.Assert(t, len(fa.Commits) == 2, "%+v", fa.Commits)
	assert.DeepEqual(t, fa.Commits[0], claimtest.TwinCommit{Message: "bd: reclaim (auto-commit) by agent-new [ID]", Author: "root <root@%>", Stat: []string{"issues 0 0 1 5"}})
	assert.Equal(t, fa.Commits[1].Message+"/"+fa.Commits[1].Author, "bd: update ID/beads <beads@local>")
	assert.DeepEqual(t, fb.Commits, []claimtest.TwinCommit{{Message: "bd: update ID", Author: "beads <beads@local>", Stat: fb.Net}})
	assert.DeepEqual(t, fb.Net, fa.Net)
	assert.DeepEqual(t, fa.Net, []string{"issues 0 0 1 4"})
	fa.Commits, fb.Commits = nil, nil
	claimtest.ReclaimNote(t, &fa, &fb, "agent-old", "taken over by agent-new")
	assert.Equal(t, len(fa.Events), 2)
	assert.Equal(t, fa.Events[0].Type, "claimed")
	fa.Twin(t, fb, twinSame...)

	fc, fd := claimtest.Moves(t, view, c, d, func() { w.As("reaper").OK("reclaim", "--older-than", "0s", "--id", c) }, func() {
		reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper"})
		assert.NilError(t, err)
		assert.Equal(t, len(reaped), 1)
	})
	assert.DeepEqual(t, fc.Changed(), []string{"assignee", "row_lock", "started_at", "status", "updated_at"})
	assert.DeepEqual(t, fc.LeaseChanged(), []string{"deleted"})
	assert.DeepEqual(t, fc.Commits, []claimtest.TwinCommit{{Message: "bd: reclaim (auto-commit) by reaper [ID]", Author: "root <root@%>", Stat: []string{"issues 0 0 1 5"}}})
	claimtest.ReclaimNote(t, &fc, &fd, "agent-old", "reaped by reaper")
	fc.Twin(t, fd, twinSame...)
}

// Embedded close twins (bd v1.3.0, embedded Dolt): as on a server
// (doltCloseTwins), each close one Dolt commit "bd: close ID" by beads
// <beads@local> with bd's diff stat, the same cells, events and
// is_blocked as bd's close of the twin.
func TestEmbeddedCloseTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "ct")
	doltCloseTwins(t, &conformance.Workspace{BdRunner: &w.BdRunner}, &w.As("a").BdRunner, func(fn func(claimtest.Querier)) { inspect(t, w, fn) })
}
