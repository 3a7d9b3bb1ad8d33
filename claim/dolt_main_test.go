package claim

import (
	"os"
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// TestMain stops the package's dolt sql-server (claimtest.NeedDolt) after
// the tests.
func TestMain(m *testing.M) { os.Exit(claimtest.DoltMain(m)) }
