package dolt_test

import (
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// The conformance suite on workspaces of bd v1.3.0 in each Dolt mode: on a
// dolt sql-server, embedded (in the embedded build: embeddedSetup), and
// through bd's proxy.
func TestConformance(t *testing.T) {
	conformance.Run(t,
		conformance.Setup{Name: "dolt-server", New: func(t *testing.T) *claimtest.BdRunner {
			return &claimtest.NeedDolt(t).Workspace(t, "cf").BdRunner
		}},
		conformance.Setup{Name: "dolt-embedded", New: embeddedSetup},
		conformance.Setup{Name: "dolt-proxied", New: func(t *testing.T) *claimtest.BdRunner {
			return &claimtest.ProxiedWorkspace(t, "px").BdRunner
		}, ExactIDs: true},
	)
}
