package claim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// Filters.Validate accepts every documented value and refuses, with
// INVALID_ARGUMENT, what the command line would refuse.
func TestFiltersValidateCases(t *testing.T) {
	t.Parallel()
	p := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		f    claim.Filters
		msg  string // "" when valid
	}{
		{"hybrid", claim.Filters{Sort: claim.SortHybrid}, ""},
		{"oldest", claim.Filters{Sort: claim.SortOldest}, ""},
		{"P0", claim.Filters{MinPriority: p(0)}, ""},
		{"P4", claim.Filters{MinPriority: p(4)}, ""},
		{"label with inner space", claim.Filters{IncludeLabels: []string{"a b"}, ExcludeLabels: []string{"x"}, Types: []string{"bug"}}, ""},
		{"sort in any case", claim.Filters{Sort: " Oldest"}, ""},
		{"unknown sort", claim.Filters{Sort: "Random"}, `unknown sort "random"`},
		{"long label", claim.Filters{IncludeLabels: []string{strings.Repeat("é", claim.MaxValueLen+1)}}, "a value of --label, --label-any, --exclude-label, --type or --exclude-type is 256 characters long; the limit is 255"},
		{"long label pattern", claim.Filters{LabelPattern: strings.Repeat("*", claim.MaxValueLen+1)}, "--label-pattern is 256 characters long; the limit is 255"},
		{"long metadata key", claim.Filters{MetadataFields: map[string]string{strings.Repeat("k", claim.MaxValueLen+1): "v"}}, "a key of --metadata-field is 256 characters long"},
		{"long metadata value", claim.Filters{MetadataFields: map[string]string{"k": strings.Repeat("v", 4*claim.MaxValueLen)}}, ""},
		{"long type", claim.Filters{Types: []string{strings.Repeat("t", claim.MaxValueLen+1)}}, "is 256 characters long"},
		{"label at the limit", claim.Filters{ExcludeLabels: []string{strings.Repeat("é", claim.MaxValueLen)}}, ""},
		{"long parent", claim.Filters{Parent: strings.Repeat("p", claim.MaxValueLen+1)}, "the parent is 256 characters long; the limit is 255"},
		{"empty exclude-label", claim.Filters{ExcludeLabels: []string{"ok", ""}}, "empty value"},
		{"blank type", claim.Filters{Types: []string{"\t"}}, "empty value"},
		{"priority -1", claim.Filters{MinPriority: p(-1)}, "min priority -1 is outside 0-4"},
		{"priority 5", claim.Filters{MinPriority: p(5)}, "min priority 5 is outside 0-4"},
		{"exact priority 5", claim.Filters{Priority: p(5)}, "priority 5 is outside 0-4"},
		{"exact priority 0", claim.Filters{Priority: p(0)}, ""},
		{"blank label-any", claim.Filters{LabelsAny: []string{"a", " "}}, "empty value"},
		{"regex", claim.Filters{LabelRegex: `^tech-(debt|legacy)$`}, ""},
		{"invalid regex", claim.Filters{LabelRegex: "tech-("}, `invalid --label-regex "tech-("`},
		{"dotted and slashed keys", claim.Filters{HasMetadataKey: "gc.routed_to", MetadataFields: map[string]string{"jira/sprint": "", "_x": "a=b"}}, ""},
		{"bad has-metadata-key", claim.Filters{HasMetadataKey: "9lives"}, `invalid --has-metadata-key "9lives"`},
		{"bad metadata-field key", claim.Filters{MetadataFields: map[string]string{"ok": "1", "a-b": "1"}}, `invalid --metadata-field key "a-b"`},
		{"empty exclude-type", claim.Filters{ExcludeTypes: []string{"bug,,task"}}, `empty type in --exclude-type "bug,,task"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if tc.msg == "" {
				assert.NilError(t, err)
				return
			}
			assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%v", err)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// Validate reads the enumerated values in any case: the sort and the types
// lower-cased (the caller's list left as given).
func TestFiltersValidateNormalises(t *testing.T) {
	t.Parallel()
	types := []string{"Bug", " TASK "}
	f := claim.Filters{Sort: "Hybrid", Types: types}
	assert.NilError(t, f.Validate())
	assert.Equal(t, f.Sort, claim.SortHybrid)
	assert.DeepEqual(t, f.Types, []string{"bug", "task"})
	assert.DeepEqual(t, types, []string{"Bug", " TASK "})
}

// Settings.Set takes each setting's value as a flag gives it: the bounds
// are inclusive, and an error names its source.
func TestSettingsSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value string
		msg         string                   // "" when valid
		got         func(claim.Settings) any // the value set, when valid
		want        any
	}{
		{"lease", "1s", "", func(s claim.Settings) any { return s.Lease }, time.Second},
		{"lease", "720h", "", func(s claim.Settings) any { return s.Lease }, claim.MaxLease},
		{"lease", " 0 ", "", func(s claim.Settings) any { return s.Lease }, time.Duration(0)},
		{"lease", "721h", "longer than the limit of 720h0m0s", nil, nil},
		{"lease", "999ms", "shorter than 1s", nil, nil},
		{"max-held", "10000", "", func(s claim.Settings) any { return s.MaxHeld }, 10000},
		{"max-held", "10001", "not a whole number from 0 to 10000", nil, nil},
		{"max-held", "1.5", "not a whole number", nil, nil},
		{"backoff-initial", "0", "", func(s claim.Settings) any { return s.BackoffInitial }, time.Duration(0)},
		{"backoff-initial", "-1s", "is negative", nil, nil},
		{"backoff-multiplier", "1", "", func(s claim.Settings) any { return s.BackoffMultiplier }, 1.0},
		{"backoff-multiplier", "100", "", func(s claim.Settings) any { return s.BackoffMultiplier }, 100.0},
		{"backoff-multiplier", "100.5", "not a number from 1 to 100", nil, nil},
		{"backoff-multiplier", "Inf", "not a number from 1 to 100", nil, nil},
		{"backoff-max", "721h", "longer than the limit", nil, nil},
		{"max-failures", "0", "", func(s claim.Settings) any { return s.MaxFailures }, 0},
		{"max-failures", "1000", "", func(s claim.Settings) any { return s.MaxFailures }, 1000},
		{"max-failures", "1001", "not a whole number from 0 to 1000", nil, nil},
		{"abandoned-label", " parked ", "", func(s claim.Settings) any { return s.AbandonedLabel }, "parked"},
		{"abandoned-label", strings.Repeat("l", 100), "", func(s claim.Settings) any { return len(s.AbandonedLabel) }, 100},
		{"abandoned-label", strings.Repeat("l", 101), "is not a label", nil, nil},
		{"abandoned-label", "a\x00b", "is not a label", nil, nil},
		{"Lease", "5m", `unknown setting "Lease"`, nil, nil},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			s := claim.DefaultSettings()
			err := s.Set(tc.name, tc.value, "--"+tc.name)
			if tc.msg == "" {
				assert.NilError(t, err)
				assert.Equal(t, tc.got(s), tc.want)
				return
			}
			assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%v", err)
			assert.ErrorContains(t, err, "--"+tc.name+": ")
			assert.ErrorContains(t, err, tc.msg)
			assert.DeepEqual(t, s, claim.DefaultSettings())
		})
	}
}

// ParseDuration (--wait, a heartbeat's --lease) takes milliseconds, and
// bounds from 0 to its limit inclusive.
func TestParseDurationCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  time.Duration
		msg   string
	}{
		{"0", 0, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"24h", claim.MaxWait, ""},
		{"-1s", 0, "--wait: -1s is negative"},
		{"24h0m1s", 0, "--wait: 24h0m1s is longer than the limit of 24h0m0s"},
		{"soon", 0, `--wait: "soon" is not a duration`},
	} {
		d, err := claim.ParseDuration("wait", tc.value, claim.MaxWait)
		if tc.msg == "" {
			assert.NilError(t, err, tc.value)
			assert.Equal(t, d, tc.want, tc.value)
			continue
		}
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%s: %v", tc.value, err)
		assert.ErrorContains(t, err, tc.msg)
	}
}

// Each bad request of the Store gets a message that says what is wrong,
// and none of them reads or writes the database.
func TestStoreBadRequestMessages(t *testing.T) {
	t.Parallel()
	root := fixture(t, "0.49.6")
	s := openStore(t, root, claim.Options{})
	before := claimtest.Snapshot(t, claimtest.DBPath(root))
	ctx := context.Background()
	id := claimtest.Claimable(t, "0.49.6", "priority")[0]
	for _, tc := range []struct {
		name string
		call func() error
		msg  string
	}{
		{"claim id without id", func() error { _, err := s.Claim(ctx, claim.Request{Agent: "x", ClaimID: 5}); return err },
			"a claim id fences a re-claim of one issue"},
		{"negative claim id", func() error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", ID: id, ClaimID: -1})
			return err
		}, "claim id -1 is not a claim id"},
		{"dry run with a lease", func() error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", DryRun: true, Lease: time.Minute})
			return err
		}, "a dry run claims nothing"},
		{"lease too long", func() error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", Lease: claim.MaxLease + time.Second})
			return err
		}, "--lease: 720h0m1s is longer than the limit of 720h0m0s"},
		{"lease under a second", func() error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", Lease: 999 * time.Millisecond})
			return err
		}, "--lease: 999ms is shorter than 1s"},
		{"negative max held", func() error { _, err := s.Claim(ctx, claim.Request{Agent: "x", MaxHeld: -1}); return err },
			"max held -1 is negative"},
		{"wait too long", func() error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", Wait: claim.MaxWait + time.Second})
			return err
		}, "--wait: 24h0m1s is longer than the limit of 24h0m0s"},
		{"bad filters", func() error {
			_, err := s.Explain(ctx, claim.Request{Agent: "x", Filters: claim.Filters{Types: []string{" "}}})
			return err
		}, "empty value"},
		{"claim id too long", func() error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", ID: strings.Repeat("i", 1<<20)})
			return err
		}, "the issue id is 1048576 characters long; the limit is 255"},
		{"close id too long", func() error {
			_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "x", ID: strings.Repeat("i", 256)})
			return err
		}, "the issue id is 256 characters long"},
		{"release without id", func() error { _, err := s.Release(ctx, claim.ReleaseRequest{Agent: "x", ID: " "}); return err },
			"no issue id"},
		{"reason too long", func() error {
			_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "x", ID: id, Reason: strings.Repeat("é", claim.MaxReasonLen+1)})
			return err
		}, "characters long; the limit is"},
		{"reason with a control character", func() error {
			_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "x", ID: id, Reason: "bell\a"})
			return err
		}, "the reason contains a control character"},
		{"reason not UTF-8", func() error {
			_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "x", ID: id, Reason: "\xff"})
			return err
		}, "the reason is not valid UTF-8"},
		{"heartbeat lease under a second", func() error {
			_, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "x", ID: id, Lease: time.Millisecond})
			return err
		}, "shorter than 1s"},
		{"heartbeat bad agent", func() error {
			_, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "a\nb", ID: id})
			return err
		}, "control character U+000A"},
		{"reset without id", func() error { _, err := s.Reset(ctx, claim.ResetRequest{Actor: "x", ID: ""}); return err }, "no issue id"},
		{"reap with a negative grace window", func() error {
			negative := -time.Minute
			_, err := s.Reap(ctx, claim.ReapRequest{Actor: "x", OlderThan: &negative})
			return err
		}, "--older-than: -1m0s is negative"},
	} {
		err := tc.call()
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%s: %v", tc.name, err)
		assert.ErrorContains(t, err, tc.msg, tc.name)
	}
	assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, claimtest.DBPath(root))), map[string][2][]string{})
}

// Types match an issue's type in any case, on the database; an unknown
// type is refused with its name (INVALID_ARGUMENT), and a claim-next that
// finds nothing says why.
func TestClaimTypesAnyCase(t *testing.T) {
	t.Parallel()
	root := fixture(t, "0.49.6")
	s := openStore(t, root, claim.Options{})
	ctx := context.Background()
	var first claimtest.Listed // bd ready's first claimable issue of its type
	for _, r := range claimtest.BdReady(t, "0.49.6", "priority") {
		if r.Status == "open" && r.Assignee == "" {
			first = r
			break
		}
	}
	res, err := s.Claim(ctx, claim.Request{Agent: "x", DryRun: true, Filters: claim.Filters{Types: []string{strings.ToUpper(first.IssueType)}}})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue != nil)
	assert.Equal(t, res.Issue.ID, first.ID)
	for _, dry := range []bool{true, false} {
		_, err = s.Claim(ctx, claim.Request{Agent: "x", DryRun: dry, Filters: claim.Filters{Types: []string{"nonsense"}}})
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
		assert.ErrorContains(t, err, `unknown --type "nonsense"`)
		res, err = s.Claim(ctx, claim.Request{Agent: "x", DryRun: dry, Filters: claim.Filters{IncludeLabels: []string{"nothing-has-it"}}})
		assert.NilError(t, err)
		assert.Assert(t, res.Issue == nil)
		assert.Equal(t, res.Reason, claim.NoReadyIssue)
	}
}

// --exclude-type is split at commas, trimmed, lower-cased, deduplicated,
// with bd's aliases expanded, as bd ready normalises it (but for the case);
// --type the same, but for the commas.
func TestFiltersExcludeTypesNormalised(t *testing.T) {
	t.Parallel()
	f := claim.Filters{ExcludeTypes: []string{"bug, FEAT", "mr,epic", "bug", "Chore"}}
	assert.NilError(t, f.Validate())
	assert.DeepEqual(t, f.ExcludeTypes, []string{"bug", "feature", "merge-request", "epic", "chore"})
	f = claim.Filters{Types: []string{" MR", "Bug", "bug"}}
	assert.NilError(t, f.Validate())
	assert.DeepEqual(t, f.Types, []string{"merge-request", "bug"})
}

// A --metadata-field splits at its first =: the value may be empty or
// hold more =; no = or no key is refused with the value given.
func TestParseMetadataField(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{"gc.routed_to=pool-a": {"gc.routed_to", "pool-a"}, "k=": {"k", ""}, "k=a=b": {"k", "a=b"}} {
		k, v, err := claim.ParseMetadataField(in)
		assert.NilError(t, err)
		assert.DeepEqual(t, [2]string{k, v}, want)
	}
	for _, in := range []string{"novalue", "=v", ""} {
		_, _, err := claim.ParseMetadataField(in)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
		assert.ErrorContains(t, err, fmt.Sprintf("invalid --metadata-field %q: expected key=value", in))
	}
}
