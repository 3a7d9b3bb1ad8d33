package claimtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// Env is a fake environment: a map lookup standing in for os.Getenv.
func Env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Tree builds files and directories under a fresh temp dir: a key ending in
// "/" is a directory, any other key a file with the given content, in which
// $DIR stands for the temp dir. It returns the temp dir with symlinks
// resolved, so expected paths compare equal to what Find reports
// after its own EvalSymlinks.
func Tree(t testing.TB, entries map[string]string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	for name, content := range entries {
		p := filepath.Join(root, filepath.FromSlash(name))
		if name[len(name)-1] == '/' {
			assert.NilError(t, os.MkdirAll(p, 0o755))
			continue
		}
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(strings.ReplaceAll(content, "$DIR", root)), 0o644))
	}
	return root
}
