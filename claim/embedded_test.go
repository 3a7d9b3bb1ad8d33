//go:build embedded

package claim_test

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

// The driver's daily usage event is off: the variable it reads is set
// before its init, and after opens it has left no trace of a send (the
// file whose time it stamps when it sends one).
func TestEmbeddedNoMetrics(t *testing.T) {
	assert.Equal(t, os.Getenv("DOLT_METRICS_DISABLED"), "1")
	w := claimtest.EmbeddedWorkspace(t, "nm")
	s := openAt(t, w.Dir, w.Getenv, claim.Options{})
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", DryRun: true})
	assert.NilError(t, err)
	time.Sleep(200 * time.Millisecond) // the driver sends from a goroutine
	found := false
	filepath.WalkDir(w.Dir, func(p string, d os.DirEntry, err error) error {
		found = found || (err == nil && d.Name() == "dolt_embedded_metrics")
		return nil
	})
	assert.Assert(t, !found, "the driver stamped dolt_embedded_metrics: it tried to send a usage event")
}

// An embedded workspace whose database is gone: DB_NOT_FOUND, whether the
// database's directory or all of .beads/embeddeddolt is missing.
func TestEmbeddedNoDatabase(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "nd")
	ws, err := claim.FindWorkspace(claim.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	other := ws
	other.Embedded = &claim.EmbeddedDolt{Dir: ws.Embedded.Dir, Database: "nosuch"}
	_, err = claim.Open(context.Background(), other, claim.Options{})
	assert.Equal(t, claim.ErrorCode(err), claim.EDBNotFound, "%v", err)
	assert.NilError(t, os.RemoveAll(ws.Embedded.Dir))
	_, err = claim.Open(context.Background(), ws, claim.Options{})
	assert.Equal(t, claim.ErrorCode(err), claim.EDBNotFound, "%v", err)
}
