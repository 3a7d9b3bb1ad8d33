package claimtest

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"
)

// OwnedWorkspace makes a new workspace in server mode whose Dolt server bd
// itself starts and owns, as a plain `bd init --server` (no port) makes
// one in bd v1.3.0: `git init`, then bd init --server, which starts `dolt
// sql-server` (the pinned dolt, on bd's PATH) on a port the system picks
// and writes that port to .beads/dolt-server.port. bd runs as actor
// bd-test. The server is bd's: `bd dolt stop` stops it (and is run at the
// end of t). Under -short, it skips.
func OwnedWorkspace(t testing.TB, prefix string) *BdWorkspace {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real bd v1.3.0 and dolt (skipped under -short)")
	}
	for _, bin := range []string{DoltBin(), BdDoltBin()} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: the Dolt tests need bd v1.3.0 and dolt 2.2.0: run `make dolt`", err)
		}
	}
	w := &BdWorkspace{v13Repo(t, true)}
	t.Cleanup(func() { w.Bd("dolt", "stop") })
	w.OK("init", "--server", "--prefix", prefix, "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet")
	return w
}

// v13Repo is bd v1.3.0 in a new git repository, with a private environment
// (a throwaway HOME with a git identity, UTC, actor bd-test, no metrics,
// pager or colour) and, with dolt, the pinned dolt first on its PATH, for
// the modes in which bd starts a dolt sql-server itself.
func v13Repo(t testing.TB, dolt bool) BdRunner {
	t.Helper()
	home := t.TempDir()
	gitconfig := "[user]\n\tname = bd-test\n\temail = bd-test@example.invalid\n[init]\n\tdefaultBranch = main\n"
	assert.NilError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644))
	path := os.Getenv("PATH") // for git
	if dolt {
		bin := t.TempDir()
		assert.NilError(t, os.Symlink(DoltBin(), filepath.Join(bin, "dolt")))
		path = bin + string(os.PathListSeparator) + path
	}
	r := BdRunner{t: t, bin: BdDoltBin(), actorVar: "BEADS_ACTOR", Dir: t.TempDir(), Env: []string{
		"HOME=" + home,
		"PATH=" + path,
		"TZ=UTC",
		"BEADS_ACTOR=bd-test",
		"BD_DISABLE_METRICS=1", "DO_NOT_TRACK=1", "DOLT_METRICS_DISABLED=1",
		"BD_NO_PAGER=1", "NO_COLOR=1",
		"GIT_CONFIG_NOSYSTEM=1",
	}}
	icmd.RunCmd(icmd.Command("git", "init", "-q"), icmd.Dir(r.Dir), icmd.WithEnv(r.Env...)).Assert(t, icmd.Success)
	return r
}
