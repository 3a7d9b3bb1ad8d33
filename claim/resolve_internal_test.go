package claim

import (
	"testing"

	"gotest.tools/v3/assert"
)

// resolvePartialID picks what bd v1.3.0's ResolvePartialID picks among the
// ids that contain the searched part.
func TestResolvePartialID(t *testing.T) {
	ids := []string{"fx-a3f8e9", "fx-a3f8e9.1", "fx-b12", "fx-b13", "fx-wisp-t3st", "aap-4ar", "fx-c9"}
	for _, tc := range []struct {
		input, want string
		matches     []string
	}{
		{"a3f8e9", "fx-a3f8e9", nil},     // the prefix added
		{"fx-a3f8e9", "fx-a3f8e9", nil},  // exact
		{"a3f8e9.1", "fx-a3f8e9.1", nil}, // hierarchical
		{"a3f8", "", []string{"fx-a3f8e9", "fx-a3f8e9.1"}},
		{"b1", "", []string{"fx-b12", "fx-b13"}},
		{"b12", "fx-b12", nil},
		{"t3st", "fx-wisp-t3st", nil}, // a wisp by its hash
		{"t3", "fx-wisp-t3st", []string{"fx-wisp-t3st"}},
		{"aap-4ar", "aap-4ar", nil}, // another prefix, as given
		{"4a", "aap-4ar", []string{"aap-4ar"}},
		{"9", "", nil},                       // inside a hash, not at its start
		{"fx-c", "fx-c9", []string{"fx-c9"}}, // the prefix given, the hash short
	} {
		id, matches := resolvePartialID(tc.input, "fx", ids)
		assert.Equal(t, id, tc.want, tc.input)
		assert.DeepEqual(t, matches, tc.matches)
	}
	id, _ := resolvePartialID("b12", "fx-", ids) // a prefix configured with its hyphen
	assert.Equal(t, id, "fx-b12")
}

// The part of an input that bd searches ids for, and what it does not
// search at all.
func TestPartialIDPart(t *testing.T) {
	for input, want := range map[string]string{"a3f": "a3f", "fx-a3f": "a3f", "a3f8e9.1": "a3f8e9.1", "fx-": "fx-", "-x": "x"} {
		part, ok := partialIDPart(input)
		assert.Assert(t, ok, input)
		assert.Equal(t, part, want, input)
	}
	for _, input := range []string{"", "a b", "fx_1", "x%"} {
		_, ok := partialIDPart(input)
		assert.Assert(t, !ok, input)
	}
}

// looksPrefixed reads a prefix as bd's looksLikePrefixedID does.
func TestLooksPrefixed(t *testing.T) {
	for id, want := range map[string]bool{"fx-1": true, "aap-4ar": true, "Fx-1": false, "fx-": false, "-x": false,
		"toolongpre-1": false, "fx-A": false, "a3f8e9": false} {
		assert.Equal(t, looksPrefixed(id), want, id)
	}
}
