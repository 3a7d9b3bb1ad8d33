package cli_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// testdata/mcp-ts/package-lock.json and installed with npm ci) drives the
// server as a client application would (testdata/mcp-ts/interop.mjs):
// tools/list with titles, output schemas and hints, every result checked
// by the client against its tool's output schema, arrays, bad arguments,
// renewal over three lease lengths, a wait that outlasts the request
// timeout thanks to progress, cancellation, and two servers with one agent
// name.
func TestMCPTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: installs the TypeScript SDK (npm ci) and runs for about 40s")
	}
	t.Parallel()
	dir := tsClient(t)
	root := claimtest.Fixture(t, "0.49.6")
	node := exec.Command("node", "interop.mjs", binary, root, claimtest.Cases(t, "0.49.6")["A01"].ID)
	node.Dir = dir
	node.Env = append(baseEnv(), "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"))
	out, err := node.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	assert.Equal(t, strings.TrimSpace(string(out)), "ok")
}
