//go:build !embedded

package claim_test

import "testing"

// embeddedSetup skips: the embedded engine is in the embedded build only,
// whose tests `make test` runs too (`make embedded-test`).
func embeddedSetup(t *testing.T) *confWorkspace {
	t.Skip("the embedded Dolt engine is in the embedded build only: `make embedded-test` (part of `make test`) runs this setup")
	return nil
}
