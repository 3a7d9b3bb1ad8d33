package claim_test

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

var versions = claimtest.Versions

func fixture(t *testing.T, version string) string { return claimtest.Fixture(t, version) }

func fixtureDir(version string) string { return claimtest.FixtureDir(version) }

func openStore(t *testing.T, root string, o claim.Options) *claim.Store {
	t.Helper()
	return conformance.OpenAt(t, root, noEnv, o)
}

func noEnv(string) string { return "" }

func expectedClaims(t *testing.T, version string, sort claim.Sort) []string {
	return claimtest.Claimable(t, version, string(sort))
}

// Draining a real bd workspace claims exactly bd ready's issues, in bd
// ready's order, for every fixture and sort policy.
func TestClaimOrderMatchesBdReady(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest, claim.SortHybrid} {
			t.Run(v+"/"+string(sort), func(t *testing.T) {
				at := claimtest.ReadyTime(t, v)
				s := openStore(t, fixture(t, v), claim.Options{Now: func() time.Time { return at }})
				var got []string
				for {
					iss, err := issueOf(s.Claim(context.Background(), claim.Request{Agent: "order-check", Filters: claim.Filters{Sort: sort}}))
					assert.NilError(t, err)
					if iss == nil {
						break
					}
					assert.Equal(t, iss.Status, "in_progress")
					got = append(got, iss.ID)
				}
				want := expectedClaims(t, v, sort)
				assert.Assert(t, len(want) > 20)
				assert.DeepEqual(t, got, want)
			})
		}
	}
}
