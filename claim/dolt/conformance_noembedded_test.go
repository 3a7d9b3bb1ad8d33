//go:build !embedded

package dolt_test

import (
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// embeddedSetup skips: the embedded engine is in the embedded build only,
// whose tests `make test` runs too (`make embedded-test`).
func embeddedSetup(t *testing.T) *claimtest.BdRunner {
	t.Skip("the embedded Dolt engine is in the embedded build only: `make embedded-test` (part of `make test`) runs this setup")
	return nil
}
