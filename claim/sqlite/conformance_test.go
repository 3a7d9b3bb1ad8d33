package sqlite_test

import (
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// The conformance suite on SQLite workspaces made by the real bd releases
// pinned in tools/. bd-claim writes the close of bd v0.47.0 and later
// only: on v0.27.2 the suite asserts the refusal (NoClose).
func TestConformance(t *testing.T) {
	var setups []conformance.Setup
	for _, v := range []string{"v0.27.2", "v0.47.1", "v0.49.6"} {
		setup := conformance.Setup{Name: "sqlite-" + v, New: func(t *testing.T) *claimtest.BdRunner {
			return &claimtest.SQLiteWorkspace(t, v).BdRunner
		}}
		if v == "v0.27.2" {
			setup.NoClose = rows
		}
		setups = append(setups, setup)
	}
	conformance.Run(t, setups...)
}

// rows renders every row of a SQLite workspace.
func rows(t *testing.T, w *claimtest.BdRunner) any {
	return claimtest.Snapshot(t, claimtest.DBPath(w.Dir))
}
