//go:build embedded

package claim_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/dolt"
)

// embeddedShow is bd show ID on an embedded workspace: status/assignee.
func embeddedShow(t *testing.T, w *claimtest.BdWorkspace, id string) string {
	t.Helper()
	return (&confWorkspace{&w.BdRunner}).show(t, id)
}

// A maintenance command holding one of bd's gates exclusively (here the
// embedded database's, with the holder file bd writes) stops every claim at
// once, DB_UNAVAILABLE, naming it; nothing changes. Let go, claims work.
func TestEmbeddedMaintenanceGate(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "gt")
	id := (&confWorkspace{&w.BdRunner}).create(t, "one")
	s := openAt(t, w.Dir, w.Getenv, claim.Options{})
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
// timeout, then fails SQLITE_BUSY (exit 4) with nothing written; once the
// engine is closed, the claim goes through.
func TestEmbeddedEngineHeld(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "hd")
	id := (&confWorkspace{&w.BdRunner}).create(t, "one")
	s := openAt(t, w.Dir, w.Getenv, claim.Options{BusyTimeout: 300 * time.Millisecond})
	ws := s.Workspace.Embedded
	_, end, err := dolt.OpenEmbedded(context.Background(), ws.Dir, ws.Database, time.Second, nil)
	assert.NilError(t, err)
	start := time.Now()
	_, err = s.Claim(context.Background(), claim.Request{Agent: "a"})
	waited := time.Since(start)
	assert.Equal(t, claim.ErrorCode(err), claim.EBusy, "%v", err)
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
	ws, err := claim.FindWorkspace(claim.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	other := ws
	other.Embedded = &claim.EmbeddedDolt{Dir: ws.Embedded.Dir, Database: "nosuch"}
	claimIn := func(ws claim.Workspace) error {
		s, err := claim.Open(context.Background(), ws, claim.Options{})
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
	ws, err := claim.FindWorkspace(claim.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	conn, end, err := dolt.OpenEmbedded(context.Background(), ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
	assert.NilError(t, err)
	defer end()
	fn(conn)
}

// Embedded twins: one issue claimed by `bd update --claim`, its twin by
// bd-claim --id, as the same agent. The same cells change, with the same
// values where they do not depend on the time; the leases rows are bd's
// 5 minutes; the claimed events have the same shape; each claim is one
// Dolt commit of the issues table, by bd's author with bd's message, of
// one row and five cells.
func TestEmbeddedTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "tw")
	cw := &confWorkspace{&w.BdRunner}
	a := cw.create(t, "twin", "-p", "1", "-l", "backend", "-d", "the same description")
	b := cw.create(t, "twin", "-p", "1", "-l", "backend", "-d", "the same description")
	cells := func(id string) map[string]string {
		var out map[string]string
		inspect(t, w, func(q claimtest.Querier) {
			cols := claimtest.Strings(t, q, "SELECT column_name FROM information_schema.columns WHERE table_name = 'issues' AND table_schema = DATABASE() ORDER BY ordinal_position")
			out = map[string]string{}
			for _, c := range cols {
				v := claimtest.Strings(t, q, "SELECT COALESCE(CAST(`"+c+"` AS CHAR), 'NULL') FROM issues WHERE id = ?", id)
				out[c] = v[0]
			}
		})
		return out
	}
	beforeA, beforeB := cells(a), cells(b)
	time.Sleep(1100 * time.Millisecond) // a later second: updated_at changes
	w.As("agent-1").OK("update", a, "--claim", "--json")
	time.Sleep(1100 * time.Millisecond)
	s := openAt(t, w.Dir, w.Getenv, claim.Options{})
	_, err := s.Claim(context.Background(), claim.Request{Agent: "agent-1", ID: b})
	assert.NilError(t, err)
	afterA, afterB := cells(a), cells(b)
	assert.DeepEqual(t, claimtest.Changed(beforeA, afterA), []string{"assignee", "row_lock", "started_at", "status", "updated_at"})
	assert.DeepEqual(t, claimtest.Changed(beforeB, afterB), claimtest.Changed(beforeA, afterA))
	for _, c := range []string{"assignee", "status", "content_hash", "is_blocked"} {
		assert.Equal(t, afterB[c], afterA[c], c)
	}
	inspect(t, w, func(q claimtest.Querier) {
		// bd's lease is 300 s to the second; bd-claim's expiry is rounded
		// to the second as the DATETIME(0) column stores it, as on a server.
		for id, ttl := range map[string][]string{a: {"300"}, b: {"300", "301"}} {
			lease := claimtest.Strings(t, q, "SELECT CONCAT_WS('/', holder, granted_node, TIMESTAMPDIFF(SECOND, granted_at, lease_expires_at)) FROM leases WHERE issue_id = ?", id)
			assert.Assert(t, len(lease) == 1 && slices.Contains(ttl, strings.TrimPrefix(lease[0], "agent-1//")), "%s: %v", id, lease)
			assert.DeepEqual(t, claimtest.Strings(t, q, "SELECT CONCAT_WS('/', event_type, actor, new_value, COALESCE(comment, 'NULL')) FROM events WHERE issue_id = ? AND event_type = 'claimed'", id),
				[]string{`claimed/agent-1/{"assignee":"agent-1","status":"in_progress"}/NULL`})
		}
		assert.DeepEqual(t, claimtest.Strings(t, q, "SELECT CONCAT_WS('/', message, committer, email) FROM dolt_log LIMIT 2"),
			[]string{"bd: update " + b + "/beads/beads@local", "bd: update " + a + "/beads/beads@local"})
		for _, r := range []string{"HEAD~1", "HEAD"} {
			assert.DeepEqual(t, claimtest.Strings(t, q, "SELECT CONCAT_WS(' ', table_name, rows_modified, cells_modified) FROM dolt_diff_stat('"+r+"~1', '"+r+"')"),
				[]string{"issues 1 5"})
		}
	})
}

// Embedded close twins (bd v1.3.0, embedded Dolt): as on a server
// (doltCloseTwins), each close one Dolt commit "bd: close ID" by beads
// <beads@local> with bd's diff stat, the same cells, events and
// is_blocked as bd's close of the twin.
func TestEmbeddedCloseTwins(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "ct")
	doltCloseTwins(t, &confWorkspace{&w.BdRunner}, &w.As("a").BdRunner, func(fn func(claimtest.Querier)) { inspect(t, w, fn) })
}
