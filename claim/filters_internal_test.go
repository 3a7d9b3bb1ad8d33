package claim

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// types.custom of config.yaml, as bd reads it: nested or written
// types.custom, a list or a comma-separated string (or a JSON array in a
// string, as the database's value may be); nothing from a file that is
// missing, not YAML, or has another shape.
func TestYAMLCustomTypes(t *testing.T) {
	t.Parallel()
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
		path := filepath.Join(dir, "c"+string(rune('0'+i))+".yaml")
		assert.NilError(t, os.WriteFile(path, []byte(tc.content), 0o644))
		assert.DeepEqual(t, yamlCustomTypes(path), tc.want)
	}
	assert.Assert(t, yamlCustomTypes(filepath.Join(dir, "missing.yaml")) == nil)
}
