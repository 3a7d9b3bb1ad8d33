package claim

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// types.custom of a workspace's config.yaml, as bd reads it: nested or
// written types.custom, a list or a comma-separated string (or a JSON array
// in a string, as the database's value may be); nothing from a file that is
// missing, not YAML, or has another shape, nor without a workspace
// directory (a database named directly: no config.yaml of the working
// directory is read).
func TestYAMLCustomTypes(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		content string
		want    []string
	}{
		{"types:\n  custom: [a, 'b, c']\n", []string{"a", "b", "c"}},
		{"types.custom: \"x, y,\"\n", []string{"x", "y"}},
		{"types.custom: '[\"j\", \" k \"]'\n", []string{"j", "k"}},
		{"types: {custom: 3}\n", nil},
		{"types: 3\n", nil},
		{"::: not yaml", nil},
	} {
		beads := filepath.Join(dir, "c"+string(rune('0'+i)))
		assert.NilError(t, os.Mkdir(beads, 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(beads, "config.yaml"), []byte(tc.content), 0o644))
		assert.DeepEqual(t, yamlCustomTypes(beads), tc.want)
	}
	assert.Assert(t, yamlCustomTypes(dir) == nil, "no config.yaml")
	t.Chdir(filepath.Join(dir, "c0")) // a config.yaml in the working directory
	assert.Assert(t, yamlCustomTypes("") == nil, "no workspace directory")
}
