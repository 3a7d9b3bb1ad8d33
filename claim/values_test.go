package claim_test

import (
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
)

func TestValidateAgent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, agent, err string
	}{
		{"plain", "backend-1", ""},
		{"unicode", "agent-ü-日本", ""},
		{"64 chars", strings.Repeat("a", 64), ""},
		{"inner space", "backend 1", ""},
		{"empty", "", "agent name is empty: pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)"},
		{"blank", "   ", `agent name "   " is blank: pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)`},
		{"leading space", " backend-1", `agent name " backend-1" has leading or trailing whitespace, which would become part of the name (another agent than "backend-1"): pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)`},
		{"trailing tab", "backend-1\t", `agent name "backend-1\t" has leading or trailing whitespace`},
		{"trailing no-break space", "backend-1\u00a0", "has leading or trailing whitespace"},
		{"65 spaces", strings.Repeat(" ", 65), "65 characters long"},
		{"65 chars", strings.Repeat("a", 65), "65 characters long"},
		{"newline", "a\nb", "control character U+000A"},
		{"escape", "a\x1b[31m", "control character U+001B"},
		{"invalid utf8", "a\xffb", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := claim.ValidateAgent(tc.agent)
			if tc.err == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
			assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
		})
	}
}

func TestParsePriority(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"0": 0, "4": 4, "P0": 0, "p3": 3, "critical": 0, "HIGH": 1, " medium ": 2, "low": 3, "backlog": 4,
	} {
		got, err := claim.ParsePriority(in)
		assert.NilError(t, err, in)
		assert.Equal(t, got, want, in)
	}
	for _, in := range []string{"", "5", "-1", "P5", "urgent", "00", "1.5"} {
		_, err := claim.ParsePriority(in)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, in)
		assert.ErrorContains(t, err, "use 0-4, P0-P4")
	}
}

func TestFiltersValidate(t *testing.T) {
	t.Parallel()
	f := claim.Filters{}
	assert.NilError(t, f.Validate())
	assert.DeepEqual(t, f, claim.Filters{Sort: claim.SortPriority, IncludeLabels: []string{}, LabelsAny: []string{}, ExcludeLabels: []string{},
		Types: []string{}, ExcludeTypes: []string{}, MetadataFields: map[string]string{}})

	bad := func(f claim.Filters, msg string) {
		t.Helper()
		err := f.Validate()
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
		assert.ErrorContains(t, err, msg)
	}
	p := 7
	bad(claim.Filters{Sort: "newest"}, `unknown sort "newest"`)
	bad(claim.Filters{IncludeLabels: []string{" "}}, "empty value")
	bad(claim.Filters{Types: []string{""}}, "empty value")
	bad(claim.Filters{MinPriority: &p}, "outside 0-4")
}

func TestErrorCode(t *testing.T) {
	t.Parallel()
	assert.Equal(t, claim.ErrorCode(nil), claim.Code(""))
	assert.Equal(t, claim.ErrorCode(errors.New("boom")), claim.EUnexpected)
	wrapped := errors.Join(errors.New("context"), claim.Errorf(claim.EBusy, "locked %d", 1))
	assert.Equal(t, claim.ErrorCode(wrapped), claim.EBusy)
	assert.Equal(t, claim.ErrorMessage(wrapped), "locked 1")
	assert.Equal(t, claim.ErrorMessage(errors.New("plain")), "plain")
	assert.Equal(t, claim.Errorf(claim.EInvalid, "x").Error(), "INVALID_ARGUMENT: x")
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]claim.Version{
		"0.49.6": {0, 49, 6}, "v0.27.2": {0, 27, 2}, "0.47.1-dev": {0, 47, 1}, "1.2.3 (dev)": {1, 2, 3},
	} {
		got, ok := claim.ParseVersion(in)
		assert.Assert(t, ok, in)
		assert.Equal(t, got, want)
	}
	for _, in := range []string{"", "0.49", "a.b.c", "0.-1.2"} {
		_, ok := claim.ParseVersion(in)
		assert.Assert(t, !ok, in)
	}
	v := claim.Version{0, 47, 1}
	assert.Equal(t, v.String(), "0.47.1")
	assert.Assert(t, v.AtLeast(0, 47, 1) && v.AtLeast(0, 30, 7) && !v.AtLeast(0, 47, 2) && !v.AtLeast(1, 0, 0))
}
