package sqlite_test

import (
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// The conformance suite on SQLite workspaces made by the real bd releases
// pinned in tools/.
func TestConformance(t *testing.T) {
	var setups []conformance.Setup
	for _, v := range []string{"v0.47.1", "v0.49.6"} {
		setups = append(setups, conformance.Setup{Name: "sqlite-" + v, New: func(t *testing.T) *claimtest.BdRunner {
			return &claimtest.SQLiteWorkspace(t, v).BdRunner
		}})
	}
	conformance.Run(t, setups...)
}
