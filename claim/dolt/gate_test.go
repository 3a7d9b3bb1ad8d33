package dolt_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/dolt"
)

// bdLock opens path and locks it as bd does on this OS (bdTryLock); the
// lock is let go at the test's end, or by the returned function.
func bdLock(t *testing.T, path string, exclusive bool) (unlock func(), busy bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	assert.NilError(t, err)
	bdUnlock, busy, err := bdTryLock(f, exclusive)
	assert.NilError(t, err)
	unlock = func() {
		if bdUnlock != nil {
			assert.NilError(t, bdUnlock())
			bdUnlock = nil
		}
		f.Close()
	}
	t.Cleanup(unlock)
	return unlock, busy
}

// bd's gates: the file beside each guarded directory, in path order, those
// whose parent is missing left out; held shared beside other shared
// holders, bd's included; an exclusive holder is a maintenance operation,
// named from its holder file when there is one; a gate that cannot be
// opened is passed over, as bd passes over it.
func TestGates(t *testing.T) {
	dir := t.TempDir()
	beads := filepath.Join(dir, ".beads")
	assert.NilError(t, os.Mkdir(beads, 0o755))
	g := dolt.GatesFor(beads, filepath.Join(beads, "embeddeddolt"), filepath.Join(dir, "missing", "dolt"), beads)
	assert.DeepEqual(t, g, dolt.Gates{filepath.Join(dir, ".beads.gate.lock"), filepath.Join(beads, "embeddeddolt.gate.lock")})

	release, err := g.Hold()
	assert.NilError(t, err)
	again, err := g.Hold() // another shared holder
	assert.NilError(t, err)
	unlockBd, busy := bdLock(t, g[1], false) // and a bd command
	assert.Assert(t, !busy)
	release()
	again()
	unlockBd()

	unlockMaint, busy := bdLock(t, g[1], true) // bd migrate
	assert.Assert(t, !busy)
	_, err = g.Hold()
	var m *dolt.Maintenance
	assert.Assert(t, errors.As(err, &m))
	assert.Equal(t, err.Error(), "a maintenance operation is running on this workspace (another bd process holds "+g[1]+")")
	assert.Equal(t, dolt.KindOf(err), dolt.MaintenanceHeld)
	// The first gate was let go again: bd can hold it exclusively.
	unlockFirst, busy := bdLock(t, g[0], true)
	assert.Assert(t, !busy)
	unlockFirst()

	for _, info := range []string{`{"pid":7,"reason":"bd migrate","started_at":"2026-01-02T03:04:05Z"}`, `{broken`} {
		assert.NilError(t, os.WriteFile(g[1]+".info", []byte(info), 0o600))
		_, err = g.Hold()
		assert.Assert(t, errors.As(err, &m))
		want := map[string]string{`{broken`: ""}[info]
		if info[1] == '"' {
			want = "pid 7 (bd migrate) since 2026-01-02T03:04:05Z"
		}
		assert.Equal(t, m.Holder, want)
	}
	unlockMaint()

	// While bd-claim holds the gates, no maintenance command starts.
	release, err = g.Hold()
	assert.NilError(t, err)
	for _, gate := range g {
		_, busy = bdLock(t, gate, true)
		assert.Assert(t, busy, gate)
	}
	release()

	// A directory where a gate file would be: passed over.
	assert.NilError(t, os.Remove(g[1]))
	assert.NilError(t, os.Mkdir(g[1], 0o755))
	release, err = g.Hold()
	assert.NilError(t, err)
	release()
}
