package dolt

import (
	"os"
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// TestMain gives the package's writers' queues a directory of the run's
// own (their lock files, which bd-claim never removes, go with it), and
// stops the package's dolt sql-server (claimtest.NeedDolt) after the
// tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bd-claim-test-run-")
	if err == nil {
		os.Setenv("XDG_RUNTIME_DIR", dir)
	}
	code := claimtest.DoltMain(m)
	os.RemoveAll(dir)
	os.Exit(code)
}
