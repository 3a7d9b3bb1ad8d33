package sqlite

import (
	"os"
	"testing"
)

// TestMain gives the package's writers' queues a directory of the run's
// own (their lock files, which bd-claim never removes, go with it).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bd-claim-test-run-")
	if err == nil {
		os.Setenv("XDG_RUNTIME_DIR", dir)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
