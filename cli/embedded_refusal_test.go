//go:build !embedded

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim"
)

// The default build refuses an embedded Dolt workspace (a plain bd init of
// bd v1.3) with SCHEMA_INCOMPATIBLE, exit 6, before it touches the
// workspace, and says each thing once: what the workspace is, that this
// build lacks the engine, and the two ways to the embedded build (its
// release archive, go install with the tags).
func TestEmbeddedWorkspaceRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(dir, ".beads", "embeddeddolt", "em"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, ".beads", "metadata.json"),
		[]byte(`{"backend":"dolt","dolt_mode":"embedded","dolt_database":"em"}`), 0o600))
	r := run(t, dir, nil, "--agent", "a", "--quiet")
	r.Assert(t, icmd.Expected{ExitCode: 6})
	out := decode(t, r)
	assert.Equal(t, out.Error.Code, claim.ESchema)
	msg := out.Error.Message
	for _, once := range []string{
		"embedded Dolt workspace (bd v1.3's default)",
		"built without the embedded",
		"embedded build",
		"bd-claim_VERSION_OS_ARCH_embedded",
		"https://github.com/bdclaim/bd-claim/releases",
		"`CGO_ENABLED=1 go install -tags embedded,gms_pure_go github.com/bdclaim/bd-claim@latest`",
	} {
		assert.Equal(t, strings.Count(msg, once), 1, "%q in %q", once, msg)
	}
	entries, err := os.ReadDir(filepath.Join(dir, ".beads"))
	assert.NilError(t, err)
	assert.Equal(t, len(entries), 2, "the workspace was written to: %v", entries)
}
