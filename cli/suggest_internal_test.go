package cli

import (
	"testing"

	"gotest.tools/v3/assert"
)

// The edit distance counts the typist's four slips, a swap of neighbours
// as one.
func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"label", "label", 0},
		{"lable", "label", 1},  // a swap
		{"labl", "label", 1},   // a letter left out
		{"labels", "label", 1}, // one too many
		{"lebel", "label", 1},  // a wrong one
		{"relaese", "release", 1},
		{"", "mcp", 3},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // a swapped pair is not edited again
		{"ünï", "uni", 2},
	} {
		assert.Equal(t, editDistance(tc.a, tc.b), tc.want, "%q %q", tc.a, tc.b)
		assert.Equal(t, editDistance(tc.b, tc.a), tc.want, "%q %q", tc.b, tc.a)
	}
}

// Only a near word is suggested: one edit for a short word, two for a
// longer one; in any case; the first of equals.
func TestClosest(t *testing.T) {
	t.Parallel()
	flags := []string{"agent", "unique", "workspace", "db", "dsn", "timeout-ms", "dry-run"}
	for word, want := range map[string]string{
		"agnet":      "agent",
		"AGENT":      "agent",
		"uniqe":      "unique",
		"workspce":   "workspace",
		"wrkspce":    "workspace",
		"dryrun":     "dry-run",
		"json":       "", // two edits from dsn: too far for a short word
		"timeout":    "",
		"wrkspc":     "",
		"completely": "",
	} {
		assert.Equal(t, closest(word, flags), want, word)
	}
	assert.Equal(t, closest("rea", []string{"reap", "read"}), "reap")
}
