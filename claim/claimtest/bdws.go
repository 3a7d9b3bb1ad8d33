package claimtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"
)

// BdRunner is a real bd release run in one workspace, with its whole
// environment. Safe from any goroutine.
type BdRunner struct {
	Dir      string   // the workspace root (a git repository)
	Env      []string // bd's whole environment (HOME, the actor, ...)
	bin      string
	pre      []string // arguments before every command's
	actorVar string   // the variable bd reads its actor from
	t        testing.TB
}

// as is b with bd acting as actor.
func (b BdRunner) as(actor string) BdRunner {
	b.Env = slices.Clone(b.Env)
	for i, kv := range b.Env {
		if strings.HasPrefix(kv, b.actorVar+"=") {
			b.Env[i] = b.actorVar + "=" + actor
		}
	}
	return b
}

// Bd runs bd ARGS in the workspace, whatever its exit status.
func (b *BdRunner) Bd(args ...string) *icmd.Result {
	cmd := icmd.Command(b.bin, append(slices.Clone(b.pre), args...)...)
	return icmd.RunCmd(cmd, icmd.Dir(b.Dir), icmd.WithEnv(b.Env...))
}

// OK runs bd and requires exit status 0. bd also exits 0 on many per-issue
// errors, so callers check what it printed or wrote too.
func (b *BdRunner) OK(args ...string) *icmd.Result {
	b.t.Helper()
	return b.Bd(args...).Assert(b.t, icmd.Success)
}

// JSON runs bd ARGS --json, requires exit status 0 and decodes its stdout
// into v.
func (b *BdRunner) JSON(v any, args ...string) {
	b.t.Helper()
	r := b.OK(append(args, "--json")...)
	assert.NilError(b.t, json.Unmarshal([]byte(r.Stdout()), v), "bd %s printed:\n%s", strings.Join(args, " "), r.Combined())
}

// Getenv looks a variable up in the environment bd runs with in the
// workspace, so that bd-claim's discovery sees what bd sees.
func (b *BdRunner) Getenv(key string) string {
	for _, kv := range b.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// BdWorkspace is a new SQLite workspace made by one real bd release
// (v0.47.1, v0.49.6...), and that bd, with a private environment
// equivalent to scripts/bd-env.sh: a throwaway HOME with a git identity
// and beads.role, no daemon, no pager or colour, UTC, a fixed actor.
type BdWorkspace struct{ BdRunner }

// SQLiteWorkspace makes a new workspace with bd version ("v0.49.6"): `git
// init`, then `bd init --prefix bt`. bd runs as actor bd-test unless told
// otherwise (As). Under -short, a missing bd skips the test.
func SQLiteWorkspace(t testing.TB, version string) *BdWorkspace {
	t.Helper()
	w := sqliteBd(t, version)
	w.OK("init", "--prefix", "bt", "--quiet", "--skip-hooks", "--skip-merge-driver")
	return w
}

// FixtureWorkspace is a copy of the fixture of bd version ("0.27.2") in a
// new git repository, and the real bd of that version (as
// SQLiteWorkspace's).
func FixtureWorkspace(t testing.TB, version string) *BdWorkspace {
	t.Helper()
	w := sqliteBd(t, "v"+version)
	copyFixture(t, version, w.Dir)
	return w
}

// sqliteBd is bd version in a new git repository with no workspace yet.
func sqliteBd(t testing.TB, version string) *BdWorkspace {
	t.Helper()
	bin := filepath.Join(Root(), ".bin", "bd-"+version)
	if _, err := os.Stat(bin); err != nil {
		if testing.Short() {
			t.Skipf("needs the real bd %s: run `make bd` (skipped under -short)", version)
		}
		t.Fatalf("the real bd %s is missing (%v): run `make bd` (scripts/build-bd.sh %s) first", version, err, version)
	}
	home := t.TempDir()
	gitconfig := "[user]\n\tname = bd-test\n\temail = bd-test@example.invalid\n" +
		"[beads]\n\trole = maintainer\n[init]\n\tdefaultBranch = main\n"
	assert.NilError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644))
	w := &BdWorkspace{BdRunner{t: t, bin: bin, pre: []string{"--no-daemon"}, actorVar: "BD_ACTOR", Dir: t.TempDir(), Env: []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"), // for git
		"TZ=UTC",
		// bd compiles its WASM SQLite into $XDG_CACHE_HOME/beads; share it between tests.
		"XDG_CACHE_HOME=" + filepath.Join(Root(), ".bin", "cache"),
		"BEADS_NO_DAEMON=1", "BEADS_AUTO_START_DAEMON=false",
		"BD_ACTOR=bd-test", "BD_NO_PAGER=1", "NO_COLOR=1",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bd-test", "GIT_AUTHOR_EMAIL=bd-test@example.invalid",
		"GIT_COMMITTER_NAME=bd-test", "GIT_COMMITTER_EMAIL=bd-test@example.invalid",
	}}}
	icmd.RunCmd(icmd.Command("git", "init", "-q"), icmd.Dir(w.Dir), icmd.WithEnv(w.Env...)).Assert(t, icmd.Success)
	return w
}

// As is the same workspace with bd acting as another actor (BD_ACTOR).
func (w *BdWorkspace) As(actor string) *BdWorkspace { return &BdWorkspace{w.as(actor)} }

// EmbeddedWorkspace makes a new workspace in bd v1.3.0's default mode,
// embedded Dolt: `git init`, then a plain `bd init --prefix prefix`, which
// puts the database in .beads/embeddeddolt/<prefix>. bd runs as actor
// bd-test unless told otherwise (As). Under -short, it skips.
func EmbeddedWorkspace(t testing.TB, prefix string) *BdWorkspace {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real bd v1.3.0 (skipped under -short)")
	}
	if _, err := os.Stat(BdDoltBin()); err != nil {
		t.Fatalf("%v: the embedded Dolt tests need bd v1.3.0: run `make dolt`", err)
	}
	w := &BdWorkspace{v13Repo(t, false)}
	w.OK("init", "--prefix", prefix, "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet")
	return w
}
