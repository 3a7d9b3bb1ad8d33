//go:build embedded

package dolt_test

import (
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// embeddedSetup is a workspace in bd v1.3.0's default mode, embedded Dolt.
func embeddedSetup(t *testing.T) *claimtest.BdRunner {
	return &claimtest.EmbeddedWorkspace(t, "em").BdRunner
}
