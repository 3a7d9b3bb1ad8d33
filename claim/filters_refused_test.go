package claim_test

import (
	"context"
	"testing"

	"github.com/bdclaim/bd-claim/claim"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// A filter the workspace's bd has no concept of is refused, naming that
// bd, before anything is read: no REGEXP in SQLite; no issues.metadata
// before it came (v0.49.6 has it, v0.47.1 not); no defer_until in v0.27.2.
func TestFiltersRefusedWhereBdLacksThem(t *testing.T) {
	t.Parallel()
	regex := claim.Filters{LabelRegex: "x"}
	meta := claim.Filters{MetadataFields: map[string]string{"k": "v"}}
	key := claim.Filters{HasMetadataKey: "k"}
	deferred := claim.Filters{IncludeDeferred: true}
	for _, tc := range []struct {
		version string
		refused []claim.Filters
		ok      []claim.Filters
	}{
		{"0.27.2", []claim.Filters{regex, meta, key, deferred}, nil},
		{"0.47.1", []claim.Filters{regex, meta, key}, []claim.Filters{deferred}},
		{"0.49.6", []claim.Filters{regex}, []claim.Filters{meta, key, deferred}},
	} {
		s := openStore(t, fixture(t, tc.version), claim.Options{})
		ctx := context.Background()
		for _, f := range tc.refused {
			_, err := s.Claim(ctx, claim.Request{Agent: "a", Filters: f})
			assert.Check(t, is.Equal(claim.ErrorCode(err), claim.EInvalid), "%s %+v", tc.version, f)
			assert.Check(t, is.ErrorContains(err, "the workspace's bd "+tc.version+" (SQLite) has no such filter"))
			_, err = s.Explain(ctx, claim.Request{Agent: "a", Filters: f})
			assert.Check(t, is.Equal(claim.ErrorCode(err), claim.EInvalid))
		}
		for _, f := range tc.ok {
			_, err := s.Claim(ctx, claim.Request{Agent: "a", DryRun: true, Filters: f})
			assert.Check(t, err, "%s %+v", tc.version, f)
		}
	}
	s := openStore(t, fixture(t, "0.27.2"), claim.Options{})
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", Filters: claim.Filters{LabelRegex: "x", IncludeDeferred: true}})
	assert.Check(t, is.ErrorContains(err, "--label-regex (no REGEXP in its database); --include-deferred (no defer_until)"))
}
