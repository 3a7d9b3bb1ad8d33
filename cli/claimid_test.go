package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// tsClient installs the official TypeScript MCP SDK (pinned in
// testdata/mcp-ts/package-lock.json, npm ci) with the scripts that drive
// bd-claim through it, in a new directory.
func tsClient(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "interop.mjs", "claimid.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "mcp-ts", f))
		assert.NilError(t, err)
		assert.NilError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	npm.Dir = dir
	out, err := npm.CombinedOutput()
	assert.NilError(t, err, "npm ci: %s", out)
	return dir
}

// bigRowLock makes issue id's row_lock one that no float64 holds, as bd's
// random row_locks mostly are, and commits it.
func bigRowLock(t *testing.T, w *claimtest.DoltWorkspace, id string) {
	t.Helper()
	conn := w.DB(t)
	_, err := conn.Exec("UPDATE issues SET row_lock = -8070450532247928831 WHERE id = ?", id)
	assert.NilError(t, err)
	_, err = conn.Exec("CALL DOLT_COMMIT('-Am', 'test: a 64-bit row_lock')")
	assert.NilError(t, err)
}

// Claim ids survive JavaScript: a JS MCP client (numbers are float64) gets
// safe integers on a Dolt workspace, bd's own claims included, and every
// id it sends back, as a number or as a string, fences what it named.
func TestClaimIDsInJavaScript(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "js")
	t.Parallel()
	dir := tsClient(t)
	for _, title := range []string{"one", "two", "three"} {
		w.OK("create", title, "-p", "1")
	}
	var iss struct{ ID string }
	w.JSON(&iss, "create", "bd's", "-p", "2")
	bds := iss.ID
	w.As("js-agent").OK("update", bds, "--claim")
	bigRowLock(t, w, bds)
	node := exec.Command("node", "claimid.mjs", binary, w.Dir, bds, "js-agent")
	node.Dir = dir
	node.Env = append(append(baseEnv(), w.Env...), "PATH="+os.Getenv("PATH"))
	out, err := node.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	assert.Assert(t, strings.HasSuffix(strings.TrimSpace(string(out)), "ok"), "%s", out)
}

// Claim ids survive jq 1.6, which reads numbers as doubles: the shell loop
// of docs/lifecycle.md (jq -r .claim_id, then --claim-id) heartbeats and
// closes a claim on a Dolt workspace, and bd's own claim of a 64-bit
// row_lock, read back through jq, releases it.
func TestClaimIDsThroughJq(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "jq")
	t.Parallel()
	jq, err := exec.LookPath("jq")
	assert.NilError(t, err, "the test needs jq (Debian's jq 1.6)")
	version, _ := exec.Command(jq, "--version").Output()
	t.Logf("%s", version)
	var a, b struct{ ID string }
	w.JSON(&a, "create", "mine", "-p", "1")
	w.JSON(&b, "create", "bd's", "-p", "2")
	w.As("jq-agent").OK("update", b.ID, "--claim")
	bigRowLock(t, w, b.ID)
	script := `set -e
out=$("$BDCLAIM" --agent jq-agent --lease 10m --quiet)
id=$(jq -r .issue.id <<<"$out"); cid=$(jq -r .claim_id <<<"$out")
"$BDCLAIM" heartbeat --agent jq-agent --id "$id" --claim-id "$cid" --quiet >/dev/null
"$BDCLAIM" close --agent jq-agent --id "$id" --claim-id "$cid" --reason done --quiet | jq -r .issue.status
cid=$("$BDCLAIM" --agent jq-agent --id "$BDS" --quiet | jq -r .claim_id)
"$BDCLAIM" release --agent jq-agent --id "$BDS" --claim-id "$cid" --quiet | jq -r .issue.status`
	r := icmd.RunCmd(icmd.Command("bash", "-c", script), icmd.Dir(w.Dir),
		icmd.WithEnv(append(append(baseEnv(), w.Env...), "BDCLAIM="+binary, "BDS="+b.ID)...))
	r.Assert(t, icmd.Success)
	assert.Equal(t, r.Stdout(), "closed\nopen\n")
	var shown []struct{ Status string }
	assert.NilError(t, json.Unmarshal([]byte(w.OK("show", a.ID, "--json").Stdout()), &shown))
	assert.Equal(t, shown[0].Status, "closed")
}
