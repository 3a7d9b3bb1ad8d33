package cli_test

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/claim/writers"
)

// result is the JSON envelope of every bd-claim command: claim, release,
// heartbeat, reset and reap.
type result struct {
	Status         string        `json:"status"`
	Agent          string        `json:"agent"`
	DryRun         bool          `json:"dry_run"`
	Issue          *claim.Issue  `json:"issue"`
	ClaimID        int64         `json:"claim_id"`
	LeaseExpiresAt *time.Time    `json:"lease_expires_at"`
	TookOver       *claim.Holder `json:"took_over"`
	Resumed        bool          `json:"resumed"`
	Reason         string        `json:"reason"`
	AlreadyClosed  bool          `json:"already_closed"`
	Attempt        *struct {
		Failures  int        `json:"failures"`
		RetryAt   *time.Time `json:"retry_at"`
		Abandoned bool       `json:"abandoned"`
	} `json:"attempt"`
	Reset *struct {
		Cleared      int  `json:"cleared_failures"`
		LabelRemoved bool `json:"label_removed"`
	} `json:"reset"`
	Explain *claim.Explanation `json:"explain"`
	Filters claim.Filters      `json:"filters"`
	Reaped  []claim.Expired    `json:"reaped"`
	Error   *struct {
		Code          claim.Code `json:"code"`
		Message       string     `json:"message"`
		Holder        string     `json:"holder"`
		HolderClaimID int64      `json:"holder_claim_id"`
	} `json:"error"`
}

func decode(t *testing.T, r *icmd.Result) result {
	t.Helper()
	var out result
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &out), "stdout: %q stderr: %q", r.Stdout(), r.Stderr())
	return out
}

func TestHelp(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), nil, "--help")
	r.Assert(t, icmd.Success)
	golden.Assert(t, r.Stdout(), "help.golden")
	assert.Equal(t, r.Stderr(), "")
	d := run(t, t.TempDir(), nil, "demo", "--help")
	d.Assert(t, icmd.Success)
	golden.Assert(t, d.Stdout(), "demo-help.golden")
}

// bd-claim version prints what Go stamped into the built binary, never a
// placeholder: its module version ((devel) or a pseudo-version here) and,
// in a build from a git checkout, HEAD's revision (Go stamps no revision
// in a linked worktree, whose .git is a file, nor with -buildvcs=false),
// then which build it is, from the tags it was built with.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), nil, "version")
	r.Assert(t, icmd.Success)
	build := " (default build: SQLite and Dolt server/proxied; no embedded Dolt)"
	if slices.Contains(strings.Split(buildSetting("-tags"), ","), "embedded") {
		build = " (embedded build)"
	}
	got, ok := strings.CutSuffix(r.Stdout(), build+"\n")
	assert.Assert(t, ok, "%q does not end with %q", r.Stdout(), build)
	info, err := buildinfo.ReadFile(binary)
	assert.NilError(t, err)
	assert.Assert(t, info.Main.Version != "", "the built binary has no module version")
	assert.Assert(t, strings.HasPrefix(got, "bd-claim "+info.Main.Version), "got %q, built as %s", got, info.Main.Version)
	// The MCP server introduces itself with the same version.
	s := serve(t, claimtest.Fixture(t, "0.49.6"), "a", "--quiet")
	assert.Equal(t, "bd-claim "+s.InitializeResult().ServerInfo.Version, got+build)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		assert.Equal(t, got, "bd-claim "+info.Main.Version)
		t.Logf("%q: the binary carries no VCS revision (a linked worktree, or -buildvcs=false)", got)
		return
	}
	head, err := exec.Command("git", "-C", claimtest.Root(), "rev-parse", "HEAD").Output()
	assert.NilError(t, err)
	assert.Equal(t, rev, strings.TrimSpace(string(head)))
	want := "bd-claim " + info.Main.Version + " " + rev[:12]
	if settings["vcs.modified"] == "true" {
		want += " (modified)"
	}
	assert.Equal(t, got, want)
}

// The JSON contract, byte for byte: a dry run on a real bd workspace, and a
// claim (with its fresh updated_at masked).
func TestJSONOutput(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	dry := run(t, root, nil, "--agent", "backend-1", "--label", "backend", "--min-priority", "high", "--dry-run", "--pretty", "--quiet")
	dry.Assert(t, icmd.Success)
	golden.Assert(t, dry.Stdout(), "dry-run.golden")

	got := run(t, root, nil, "--agent", "backend-1", "--label", "backend", "--quiet")
	got.Assert(t, icmd.Success)
	masked := regexp.MustCompile(`"updated_at":"[^"]+"`).ReplaceAllString(got.Stdout(), `"updated_at":"<now>"`)
	golden.Assert(t, masked, "claim.golden")

	none := run(t, root, nil, "--agent", "backend-1", "--label", "no-such-label", "--quiet")
	none.Assert(t, icmd.Expected{ExitCode: 3})
	golden.Assert(t, none.Stdout(), "none.golden")
}

func TestHumanOutput(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	run(t, root, nil, "--agent", "h", "--human", "--dry-run", "--quiet").Assert(t, icmd.Expected{
		Out: `would claim fx-old3 for h: "Old, 73h ago, P0" (P0 bug, labels backend,urgent)`})
	run(t, root, nil, "--agent", "h", "--human", "--type", "epic", "--min-priority", "4", "--quiet").Assert(t, icmd.Expected{
		Out: "claimed "})
	run(t, root, nil, "--agent", "h", "--human", "--label", "nope", "--quiet").Assert(t, icmd.Expected{
		ExitCode: 3, Out: "no ready issue for h matches these filters"})
	r := run(t, root, nil, "--agent", "h", "--human", "--id", "fx-none", "--quiet")
	r.Assert(t, icmd.Expected{ExitCode: 7, Err: "bd-claim: ISSUE_NOT_FOUND: no issue fx-none"})
	assert.Equal(t, r.Stdout(), "")
}

// Logs are JSON lines on stderr, never on stdout; --quiet silences them.
func TestLogs(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	r := run(t, root, []string{"TRACE_ID=trace-123"}, "--agent", "logger", "--log-level", "debug")
	r.Assert(t, icmd.Success)
	claimed := decode(t, r)
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stderr()), "\n") {
		var rec map[string]any
		assert.NilError(t, json.Unmarshal([]byte(line), &rec), line)
		assert.Equal(t, rec["trace_id"], "trace-123")
		events = append(events, rec["msg"].(string))
		if rec["msg"] == "issue_claim_success" {
			assert.Equal(t, rec["agent"], "logger")
			assert.Assert(t, rec["duration_ms"].(float64) > 0)
			assert.Assert(t, rec["filters"] != nil && rec["issue_id"] != "")
			assert.Assert(t, !strings.Contains(line, "description") && !strings.Contains(line, "title"))
		}
	}
	assert.DeepEqual(t, events, []string{"workspace_discovery", "issue_claim_success"})

	// A dry run is logged as one: it claimed, closed or reaped nothing.
	for _, c := range []struct {
		args  []string
		event string
	}{
		{[]string{"--agent", "logger", "--dry-run"}, "issue_claim_dry_run"},
		{[]string{"close", "--agent", "logger", "--id", claimed.Issue.ID, "--dry-run"}, "issue_close_dry_run"},
		{[]string{"reap", "--dry-run"}, "reap_dry_run"},
		{[]string{"reap"}, "reap_success"},
	} {
		r := run(t, root, nil, c.args...)
		r.Assert(t, icmd.Success)
		var rec struct{ Msg string }
		assert.NilError(t, json.Unmarshal([]byte(r.Stderr()), &rec), r.Stderr())
		assert.Equal(t, rec.Msg, c.event, "%q", c.args)
	}

	r = run(t, root, []string{"OTEL_TRACE_ID=otel-1"}, "--agent", "logger", "--label", "none")
	assert.Assert(t, is.Contains(r.Stderr(), `"msg":"issue_claim_no_issue"`))
	assert.Assert(t, is.Contains(r.Stderr(), `"trace_id":"otel-1"`))
	r = run(t, root, []string{"TRACE_ID=env"}, "--agent", "logger", "--id", "nope", "--trace-id", "flag")
	assert.Assert(t, is.Contains(r.Stderr(), `"msg":"issue_claim_error"`))
	assert.Assert(t, is.Contains(r.Stderr(), `"trace_id":"flag"`))
	assert.Assert(t, is.Contains(r.Stderr(), `"code":"ISSUE_NOT_FOUND"`))

	run(t, root, nil, "--agent", "logger", "--quiet").Assert(t, icmd.Expected{Err: icmd.None})
	run(t, root, nil, "--agent", "logger", "--log-level", "error").Assert(t, icmd.Expected{Err: icmd.None})
}

func TestAgentFromBDActor(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	r := run(t, root, []string{"BD_ACTOR=from-env"}, "--dry-run", "--quiet")
	r.Assert(t, icmd.Success)
	assert.Equal(t, decode(t, r).Agent, "from-env")
	r = run(t, root, []string{"BD_ACTOR=from-env"}, "--agent", "from-flag", "--dry-run", "--quiet")
	assert.Equal(t, decode(t, r).Agent, "from-flag")
	r = run(t, root, []string{"BD_ACTOR=   "}, "--dry-run", "--quiet")
	assert.Equal(t, r.ExitCode, 2, r.Combined())
	assert.Equal(t, decode(t, r).Error.Message, `agent name "   " is blank: pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)`)
}

// The actor is found as bd v1.3 finds it (--actor, then $BEADS_ACTOR, then
// the deprecated $BD_ACTOR), for every command: --agent outranks both
// variables, BEADS_ACTOR outranks BD_ACTOR, and an empty BEADS_ACTOR counts
// as unset. Nothing else (git's user.name, $USER) names an agent.
func TestAgentFromBeadsActor(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	both := []string{"BEADS_ACTOR=from-beads", "BD_ACTOR=from-bd"}
	for _, args := range [][]string{
		{"--dry-run"},
		{"claim", "--dry-run"},
		{"release", "--id", "nope"},
		{"close", "--id", "nope"},
		{"heartbeat", "--id", "nope"},
		{"reset", "--id", "nope"},
		{"reap", "--dry-run"},
	} { // stats names no agent
		r := run(t, root, both, append(args, "--quiet")...)
		assert.Equal(t, decode(t, r).Agent, "from-beads", "%q: %s", args, r.Combined())
		r = run(t, root, []string{"BEADS_ACTOR=", "BD_ACTOR=from-bd"}, append(args, "--quiet")...)
		assert.Equal(t, decode(t, r).Agent, "from-bd", "%q: %s", args, r.Combined())
		r = run(t, root, both, append(args, "--agent", "from-flag", "--quiet")...)
		assert.Equal(t, decode(t, r).Agent, "from-flag", "%q: %s", args, r.Combined())
	}
	r := run(t, root, []string{"BEADS_ACTOR=   ", "BD_ACTOR=from-bd"}, "--dry-run", "--quiet")
	assert.Equal(t, r.ExitCode, 2, r.Combined())
	assert.Equal(t, decode(t, r).Error.Message, `agent name "   " is blank: pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)`)
	r = run(t, root, []string{"USER=from-user", "GIT_AUTHOR_NAME=from-git"}, "--dry-run", "--quiet")
	assert.Equal(t, r.ExitCode, 2, r.Combined())
	assert.Equal(t, decode(t, r).Error.Message, "agent name is empty: pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)")
	r = run(t, root, []string{"BEADS_ACTOR=from-beads"}, "--agent=", "--dry-run", "--quiet")
	assert.Equal(t, r.ExitCode, 2, "an explicit empty --agent is not replaced: %s", r.Combined())
}

// An agent name with a space around it is refused, not taken for another
// agent: " backend-1" would be refused backend-1's issue as held by
// backend-1 (ALREADY_CLAIMED), and "   " would get issues of its own.
func TestAgentWithWhitespace(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	claimed := decode(t, run(t, root, nil, "--agent", "backend-1", "--quiet"))
	assert.Assert(t, claimed.Issue != nil)
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	for _, args := range [][]string{
		{"--agent", " backend-1", "--id", claimed.Issue.ID},
		{"release", "--agent", "backend-1 ", "--id", claimed.Issue.ID},
		{"--agent", "   "},
	} {
		r := run(t, root, nil, append(args, "--quiet")...)
		assert.Equal(t, r.ExitCode, 2, "%q: %s", args, r.Combined())
		out := decode(t, r)
		assert.Equal(t, out.Error.Code, claim.EInvalid)
		assert.Assert(t, is.Contains(out.Error.Message, "pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)"), "%q", args)
	}
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
}

// Every bad input gets its exit status and error code, and changes nothing:
// the database keeps its bytes and no file appears.
func TestBadInput(t *testing.T) {
	type setup func(t *testing.T) (dir string, args []string)
	fixtureWith := func(args ...string) setup {
		return func(t *testing.T) (string, []string) { return claimtest.Fixture(t, "0.49.6"), args }
	}
	c := claimtest.Cases(t, "0.49.6")
	for _, tc := range []struct {
		name string
		exit int
		code claim.Code
		msg  string
		setup
	}{
		{"no agent", 2, claim.EInvalid, "agent name is empty", fixtureWith()},
		{"control char in agent", 2, claim.EInvalid, "control character", fixtureWith("--agent", "a\tb")},
		{"blank agent", 2, claim.EInvalid, `agent name "   " is blank: pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)`, fixtureWith("--agent", "   ")},
		{"agent with a leading space", 2, claim.EInvalid, `agent name " backend-1" has leading or trailing whitespace`, fixtureWith("--agent", " backend-1")},
		{"agent too long", 2, claim.EInvalid, "the limit is 64", fixtureWith("--agent", strings.Repeat("x", 65))},
		{"unknown priority", 2, claim.EInvalid, `unknown priority "urgent"`, fixtureWith("--agent", "a", "--min-priority", "urgent")},
		{"unknown flag", 2, claim.EInvalid, "unknown flag: --color (see bd-claim --help)", fixtureWith("--agent", "a", "--color")},
		{"mistyped flag", 2, claim.EInvalid, "unknown flag: --lable; did you mean --label? (see bd-claim --help)", fixtureWith("--agent", "a", "--lable", "x")},
		{"mistyped flag of a command", 2, claim.EInvalid, "unknown flag: --faild; did you mean --failed? (see bd-claim release --help)", fixtureWith("release", "--agent", "a", "--id", "x", "--faild")},
		{"a long flag with one dash", 2, claim.EInvalid, "unknown shorthand flag: 'a' in -agent; did you mean --agent?", fixtureWith("-agent", "a")},
		{"mistyped command", 2, claim.EInvalid, `unknown command "relase": did you mean "release"? (see bd-claim release --help)`, fixtureWith("relase", "--id", "x")},
		{"mistyped command with its own flags", 2, claim.EInvalid, `unknown command "relase": did you mean "release"?`, fixtureWith("relase", "--agent", "a", "--id", "x", "--failed")},
		{"unknown command", 2, claim.EInvalid, `unknown command "frobnicate": the commands are claim, close, demo, heartbeat, help, mcp, reap, release, reset, stats, version`, fixtureWith("frobnicate")},
		{"mistyped command after the flags", 2, claim.EInvalid, `unexpected argument "stat": did you mean the command "stats"? A command comes first`, fixtureWith("--agent", "a", "stat")},
		{"json and human", 2, claim.EInvalid, "--json and --human exclude each other", fixtureWith("--agent", "a", "--json", "--human")},
		{"bad sort", 2, claim.EInvalid, `unknown sort "random"`, fixtureWith("--agent", "a", "--sort", "random")},
		{"bad log level", 2, claim.EInvalid, "unknown --log-level", fixtureWith("--agent", "a", "--log-level", "trace")},
		{"negative timeout", 2, claim.EInvalid, "--timeout-ms must be 0 or more", fixtureWith("--agent", "a", "--timeout-ms", "-1")},
		{"stray argument", 2, claim.EInvalid, `unexpected argument "claim": a command comes first, before its flags (see bd-claim claim --help)`, fixtureWith("--agent", "a", "claim")},
		{"stray argument of a command", 2, claim.EInvalid, `unexpected argument "stats" (see bd-claim release --help)`, fixtureWith("release", "--agent", "a", "--id", "x", "stats")},
		{"empty label", 2, claim.EInvalid, "empty value", fixtureWith("--agent", "a", "--label", "")},
		{"metadata-field without =", 2, claim.EInvalid, `invalid --metadata-field "gc.routed_to": expected key=value`, fixtureWith("--agent", "a", "--metadata-field", "gc.routed_to")},
		{"bad metadata key", 2, claim.EInvalid, `invalid --has-metadata-key "a b"`, fixtureWith("--agent", "a", "--has-metadata-key", "a b")},
		{"unknown exact priority", 2, claim.EInvalid, `unknown priority "9"`, fixtureWith("--agent", "a", "--priority", "9")},
		{"invalid regex", 2, claim.EInvalid, `invalid --label-regex "tech-("`, fixtureWith("--agent", "a", "--label-regex", "tech-(")},
		{"regex on SQLite", 2, claim.EInvalid, "the workspace's bd 0.49.6 (SQLite) has no such filter: --label-regex", fixtureWith("--agent", "a", "--label-regex", "tech-.*")},
		{"unknown exclude-type", 2, claim.EInvalid, `unknown --exclude-type "bogus"`, fixtureWith("--agent", "a", "--exclude-type", "bug,bogus")},
		{"--mol", 2, claim.EInvalid, "--mol: bd ready --claim refuses it too", fixtureWith("--agent", "a", "--mol", "fx-mol")},
		{"--assignee", 2, claim.EInvalid, "--assignee: bd ready --claim refuses it too", fixtureWith("--agent", "a", "--assignee", "a")},
		{"-C", 0, "", "", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"--agent", "a", "-C", claimtest.Fixture(t, "0.49.6"), "--dry-run"}
		}},
		{"-C with a relative --db", 0, "", "", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"--agent", "a", "-C", claimtest.Fixture(t, "0.49.6"), "--db", ".beads/beads.db", "--dry-run"}
		}},
		{"-C with a relative --workspace", 0, "", "", func(t *testing.T) (string, []string) {
			root := claimtest.Fixture(t, "0.49.6")
			return t.TempDir(), []string{"--agent", "a", "-C", filepath.Dir(root), "--workspace", filepath.Base(root), "--dry-run"}
		}},
		{"-C elsewhere", 5, claim.EWorkspace, "no .beads directory", func(t *testing.T) (string, []string) {
			dir := t.TempDir()
			assert.NilError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
			return claimtest.Fixture(t, "0.49.6"), []string{"--agent", "a", "-C", dir}
		}},
		// A script whose variable is empty: --id "" is a mistake, not "claim the next one".
		{"empty id", 2, claim.EInvalid, "--id is empty: give an issue id, or omit --id to claim the next ready issue", fixtureWith("--agent", "a", "--id", "")},
		{"blank id", 2, claim.EInvalid, "--id is empty", fixtureWith("--agent", "a", "--id", " ")},
		{"empty id, human", 2, claim.EInvalid, "--id is empty", fixtureWith("--agent", "a", "--id=", "--human")},
		{"empty id on a dry run", 2, claim.EInvalid, "--id is empty", fixtureWith("--agent", "a", "--id", "", "--dry-run")},
		{"hostile label", 3, "", "", fixtureWith("--agent", "a", "--label", "x'); DROP TABLE issues; --")},
		{"hostile agent", 0, "", "", fixtureWith("--agent", "a'); DROP TABLE issues; --", "--dry-run")},
		{"unknown id", 7, claim.ENotFound, "no issue fx-none", fixtureWith("--agent", "a", "--id", "fx-none")},
		{"id held by bob", 7, claim.EAlready, "held by bob", fixtureWith("--agent", "a", "--id", c["S_INPROG"].ID)},
		{"id blocked", 7, claim.ENotClaimable, "blocked", fixtureWith("--agent", "a", "--id", c["B_BY_OPEN"].ID)},
		{"no workspace", 5, claim.EWorkspace, "no .beads directory", func(t *testing.T) (string, []string) {
			dir := t.TempDir()
			assert.NilError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
			return dir, []string{"--agent", "a"}
		}},
		{"workspace dir missing", 5, claim.EWorkspace, "does not exist", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"--agent", "a", "--workspace", "nowhere"}
		}},
		{"no database", 5, claim.EDBNotFound, "no database in", func(t *testing.T) (string, []string) {
			dir := t.TempDir()
			assert.NilError(t, os.Mkdir(filepath.Join(dir, ".beads"), 0o755))
			return dir, []string{"--agent", "a"}
		}},
		{"--db missing", 5, claim.EDBNotFound, "does not exist", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"--agent", "a", "--db", "missing.db"}
		}},
		{"not sqlite", 6, claim.ESchema, "not a SQLite database", func(t *testing.T) (string, []string) {
			dir := t.TempDir()
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "x.db"), []byte(strings.Repeat("not a database\n", 100)), 0o644))
			return dir, []string{"--agent", "a", "--db", "x.db"}
		}},
		{"truncated", 6, claim.ESchema, "", func(t *testing.T) (string, []string) {
			root := claimtest.Fixture(t, "0.49.6")
			assert.NilError(t, os.Truncate(claimtest.DBPath(root), 16384))
			return root, []string{"--agent", "a"}
		}},
		{"missing column", 6, claim.ESchema, "has no column design", func(t *testing.T) (string, []string) {
			root := claimtest.Fixture(t, "0.49.6")
			_, err := claimtest.Open(t, claimtest.DBPath(root)).Exec("ALTER TABLE issues DROP COLUMN design")
			assert.NilError(t, err)
			return root, []string{"--agent", "a"}
		}},
		{"dolt", 6, claim.ESchema, "Dolt workspace", func(t *testing.T) (string, []string) {
			root := claimtest.Fixture(t, "0.49.6")
			assert.NilError(t, os.WriteFile(filepath.Join(root, ".beads", "metadata.json"), []byte(`{"backend":"dolt","database":"beads.db"}`), 0o644))
			return root, []string{"--agent", "a"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, args := tc.setup(t)
			before := listFiles(t, dir)
			var sums map[string]string
			if db := filepath.Join(dir, ".beads", "beads.db"); fileExists(db) {
				sums = map[string]string{db: claimtest.FileSum(t, db)}
			}
			r := run(t, dir, nil, append(args, "--quiet")...)
			r.Assert(t, icmd.Expected{ExitCode: tc.exit})
			if slices.Contains(args, "--human") {
				assert.Assert(t, is.Contains(r.Stderr(), fmt.Sprintf("bd-claim: %s: %s", tc.code, tc.msg)))
				assert.Equal(t, r.Stdout(), "")
				return
			}
			out := decode(t, r)
			if tc.code != "" {
				assert.Equal(t, out.Status, "error")
				assert.Equal(t, out.Error.Code, tc.code)
				assert.Assert(t, is.Contains(out.Error.Message, tc.msg))
			}
			for path, sum := range sums {
				assert.Equal(t, claimtest.FileSum(t, path), sum, "database changed")
			}
			assert.DeepEqual(t, listFiles(t, dir), before)
		})
	}
}

// listFiles lists the files under dir, SQLite's -wal/-shm side files aside.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	assert.NilError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if !strings.HasSuffix(p, "-wal") && !strings.HasSuffix(p, "-shm") {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return err
	}))
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A database locked by another writer past --timeout-ms is SQLITE_BUSY (4),
// after the retries, with nothing written.
func TestBusy(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	before := claimtest.Snapshot(t, claimtest.DBPath(root))
	conn := claimtest.Open(t, claimtest.DBPath(root))
	tx, err := conn.BeginTx(context.Background(), nil)
	assert.NilError(t, err)
	_, err = tx.Exec("UPDATE config SET value = value WHERE key = 'issue_prefix'") // take the write lock
	assert.NilError(t, err)
	r := run(t, root, nil, "--agent", "a", "--timeout-ms", "100", "--quiet")
	r.Assert(t, icmd.Expected{ExitCode: 4})
	out := decode(t, r)
	assert.Equal(t, out.Error.Code, claim.EBusy)
	assert.Assert(t, is.Contains(out.Error.Message, "raise --timeout-ms"))
	run(t, root, nil, "--agent", "a", "--timeout-ms", "0", "--quiet").Assert(t, icmd.Expected{ExitCode: 4, Out: `"code":"SQLITE_BUSY"`})
	assert.NilError(t, tx.Rollback())
	assert.DeepEqual(t, claimtest.Snapshot(t, claimtest.DBPath(root)), before)
}

// --timeout-ms bounds the wait in the writers' queue too. While another
// writer holds its turn and SQLite's write lock, a claim is SQLITE_BUSY
// after its tries (its wait in the queue standing for all but the last),
// instead of
// waiting for a turn that does not come; while it holds only its turn (a
// writer stuck outside SQLite), a claim goes on without the queue and
// succeeds.
func TestBusyInQueue(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	path := claimtest.DBPath(root)
	xdg := t.TempDir()
	env := []string{"XDG_RUNTIME_DIR=" + xdg}
	q := writers.Open(filepath.Join(xdg, "bd-claim"), path)
	defer q.Close()
	leave, missed := q.Enter(0)
	assert.Assert(t, !missed)
	defer leave()

	before := claimtest.Snapshot(t, path)
	conn := claimtest.Open(t, path)
	tx, err := conn.BeginTx(context.Background(), nil)
	assert.NilError(t, err)
	_, err = tx.Exec("UPDATE config SET value = value WHERE key = 'issue_prefix'") // take the write lock
	assert.NilError(t, err)
	start := time.Now()
	r := run(t, root, env, "--agent", "a", "--timeout-ms", "300", "--quiet")
	took := time.Since(start)
	r.Assert(t, icmd.Expected{ExitCode: 4, Out: `"code":"SQLITE_BUSY"`})
	// At least the queue's wait and one busy try; far less than forever.
	assert.Assert(t, took >= 600*time.Millisecond && took < 10*time.Second, "took %s", took)
	assert.NilError(t, tx.Rollback())
	assert.DeepEqual(t, claimtest.Snapshot(t, path), before)

	r = run(t, root, env, "--agent", "a", "--timeout-ms", "100", "--quiet")
	r.Assert(t, icmd.Success)
	assert.Equal(t, decode(t, r).Issue.Assignee, "a")
}

// keptDemo is the workspace that demo --keep says it kept, after running
// the commands it suggests there: each bd-claim command works (exit 0, or
// 3 for the dry run that finds nothing left), and the sqlite3 command's
// query reads the database.
func keptDemo(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`workspace kept: (\S+)\n.*\n    cd (\S+)\n    (bd-claim .*)\n    (bd-claim .*)\n    sqlite3 (\S+) '(.*)'\n$`).FindStringSubmatch(stdout)
	assert.Assert(t, m != nil, stdout)
	dir := m[1]
	assert.Equal(t, m[2], dir)
	for _, c := range m[3:5] {
		r := run(t, dir, nil, strings.Fields(c)[1:]...)
		assert.Assert(t, r.ExitCode == 0 || r.ExitCode == 3, "%s: %s", c, r.Combined())
		assert.Assert(t, r.Stdout() != "" && r.Stderr() == "", "%s: %s", c, r.Combined())
	}
	rows, err := claimtest.Open(t, filepath.Join(dir, m[5])).Query(m[6])
	assert.NilError(t, err)
	assert.Assert(t, rows.Next())
	assert.NilError(t, rows.Close())
	return dir
}

func TestDemo(t *testing.T) {
	r := run(t, t.TempDir(), []string{"TMPDIR=" + t.TempDir()}, "demo", "--agents", "4", "--issues", "80", "--keep")
	r.Assert(t, icmd.Success)
	assert.Assert(t, is.Contains(r.Stdout(), "verdict: PASS"))
	keptDemo(t, r.Stdout())
	assert.Assert(t, is.Contains(r.Stdout(), "a SQLite workspace with bd v0.49.6's schema (bd v0.49.6, v0.47.1 and v0.27.2 open it; bd v1.3 does not)"))
	tmp := t.TempDir()
	run(t, t.TempDir(), []string{"TMPDIR=" + tmp, "XDG_RUNTIME_DIR="}, "demo", "--agents", "3", "--issues", "30").Assert(t, icmd.Expected{Out: "verdict: PASS"})
	// The workspace is removed; the writers' queue directory (no
	// $XDG_RUNTIME_DIR here) stays, as its lock files are never removed.
	assert.DeepEqual(t, claimtest.Names(t, tmp), []string{fmt.Sprintf("bd-claim-%d", os.Getuid())})
	run(t, t.TempDir(), nil, "demo", "--agents", "0").Assert(t, icmd.Expected{ExitCode: 2, Err: "INVALID_ARGUMENT"})
	run(t, t.TempDir(), nil, "demo", "--bogus").Assert(t, icmd.Expected{ExitCode: 2, Err: "unknown flag: --bogus (see bd-claim demo --help)"})
	run(t, t.TempDir(), nil, "demo", "--agnets", "3").Assert(t, icmd.Expected{ExitCode: 2, Err: "bd-claim demo: INVALID_ARGUMENT: unknown flag: --agnets; did you mean --agents?"})
	run(t, t.TempDir(), nil, "demo", "8").Assert(t, icmd.Expected{ExitCode: 2, Err: `unexpected argument "8" (see bd-claim demo --help)`})
	run(t, t.TempDir(), []string{"TMPDIR=/nonexistent"}, "demo").Assert(t, icmd.Expected{ExitCode: 1, Err: "bd-claim demo:"})
}

// 32 OS processes race to drain one workspace: every ready issue is claimed
// exactly once, no blocked one is touched, every exit is 0 or 3.
func TestRacingProcesses(t *testing.T) {
	dir := t.TempDir()
	d, err := sqlite.CreateDemo(context.Background(), dir, 120, 7)
	assert.NilError(t, err)
	var mu sync.Mutex
	owner := map[string][]string{}
	exits := map[int]int{}
	var wg sync.WaitGroup
	for p := range 32 {
		wg.Go(func() {
			agent := fmt.Sprintf("racer-%d", p)
			for {
				r := run(t, dir, nil, "--agent", agent, "--only-unassigned", "--quiet", "--timeout-ms", "20000")
				mu.Lock()
				exits[r.ExitCode]++
				if r.ExitCode == 0 {
					id := decode(t, r).Issue.ID
					owner[id] = append(owner[id], agent)
				}
				mu.Unlock()
				if r.ExitCode != 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	assert.DeepEqual(t, exits, map[int]int{0: len(d.Ready), 3: 32})
	for _, id := range d.Ready {
		assert.Equal(t, len(owner[id]), 1, "%s: %v", id, owner[id])
	}
	for _, id := range d.Blocked {
		assert.Equal(t, len(owner[id]), 0, id)
	}
}

// Claim processes killed with SIGKILL at random points, while they wait
// for the writers' queue (on its deck or for the turn), hold it or write:
// the others go on (a killed writer's seat on the deck and its turn die
// with it; with --timeout-ms 60000 a queue left held would stall the drain
// for minutes), every ready issue is claimed exactly
// once, and each claim is whole: the issue row, its one event and its
// dirty mark, or nothing.
func TestKilledWriters(t *testing.T) {
	dir := t.TempDir()
	d, err := sqlite.CreateDemo(context.Background(), dir, 80, 11)
	assert.NilError(t, err)
	path := d.Path
	before := claimtest.Snapshot(t, path)
	xdg := t.TempDir()
	env := append(baseEnv(), "XDG_RUNTIME_DIR="+xdg)
	var mu sync.Mutex
	printed := map[string][]string{} // issue -> agents whose process printed it
	exits := map[string]int{}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Go(func() {
			agent := fmt.Sprintf("killer-%d", w)
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				cmd := exec.Command(binary, "--agent", agent, "--quiet", "--timeout-ms", "60000")
				cmd.Dir, cmd.Env = dir, env
				var stdout strings.Builder
				cmd.Stdout = &stdout
				assert.NilError(t, cmd.Start())
				if rnd.IntN(2) == 0 {
					time.AfterFunc(time.Duration(rnd.IntN(150))*time.Millisecond, func() { _ = cmd.Process.Kill() })
				}
				_ = cmd.Wait() // the exit status says it
				mu.Lock()
				code := cmd.ProcessState.ExitCode()
				if !cmd.ProcessState.Exited() {
					exits["killed"]++
				} else {
					exits[fmt.Sprint(code)]++
				}
				if code == 0 {
					var out result
					assert.Check(t, json.Unmarshal([]byte(stdout.String()), &out), stdout.String())
					printed[out.Issue.ID] = append(printed[out.Issue.ID], agent)
				}
				mu.Unlock()
				if cmd.ProcessState.Exited() && code != 0 {
					assert.Check(t, code == 3, "exit %d: %s", code, stdout.String())
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("exits: %v", exits)
	assert.Assert(t, exits["killed"] > 0)
	assert.Equal(t, exits["3"], 12)

	conn := claimtest.Open(t, path)
	claimed := map[string]string{}
	rows, err := conn.Query("SELECT id, assignee FROM issues WHERE status = 'in_progress' AND assignee LIKE 'killer-%'")
	assert.NilError(t, err)
	for rows.Next() {
		var id, agent string
		assert.NilError(t, rows.Scan(&id, &agent))
		claimed[id] = agent
	}
	assert.NilError(t, rows.Err())
	assert.DeepEqual(t, slices.Sorted(maps.Keys(claimed)), slices.Sorted(slices.Values(d.Ready)))
	for id, agents := range printed {
		assert.Check(t, is.DeepEqual(agents, []string{claimed[id]}), id)
	}
	// Killed after its commit, a process printed nothing: its claim is
	// there all the same, whole.
	events := map[string]string{}
	rows, err = conn.Query("SELECT issue_id, actor FROM events WHERE actor LIKE 'killer-%'")
	assert.NilError(t, err)
	for rows.Next() {
		var id, actor string
		assert.NilError(t, rows.Scan(&id, &actor))
		_, twice := events[id]
		assert.Check(t, !twice, "two events for %s", id)
		events[id] = actor
	}
	assert.NilError(t, rows.Err())
	assert.DeepEqual(t, events, claimed)
	diff := claimtest.Diff(before, claimtest.Snapshot(t, path))
	assert.DeepEqual(t, slices.Sorted(maps.Keys(diff)), []string{"dirty_issues", "events", "issues", "sqlite_sequence"}) // the events id counter
	for _, table := range []string{"issues", "dirty_issues"} {
		var changed []string
		for _, r := range diff[table][1] {
			id, _, _ := strings.Cut(r, ",")
			changed = append(changed, strings.Trim(id, "'"))
		}
		slices.Sort(changed)
		assert.Check(t, is.DeepEqual(changed, slices.Sorted(maps.Keys(claimed))), table)
	}
	assert.DeepEqual(t, claimtest.Strings(t, conn, "PRAGMA integrity_check"), []string{"ok"})

	q := writers.Open(filepath.Join(xdg, "bd-claim"), path)
	defer q.Close()
	leave, missed := q.Enter(0)
	assert.Assert(t, !missed, "the queue is free")
	leave()
}

// 16 processes race --id on one issue: exactly one wins, the others are
// told who holds it.
func TestRacingByID(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	id := claimtest.Cases(t, "0.49.6")["A01"].ID
	results := make([]*icmd.Result, 16)
	var wg sync.WaitGroup
	for p := range results {
		wg.Go(func() {
			results[p] = run(t, root, nil, "--agent", fmt.Sprintf("racer-%d", p), "--id", id, "--quiet", "--timeout-ms", "20000")
		})
	}
	wg.Wait()
	var winner string
	for p, r := range results {
		out := decode(t, r)
		if r.ExitCode == 0 {
			assert.Equal(t, winner, "", "two winners")
			winner = fmt.Sprintf("racer-%d", p)
			continue
		}
		assert.Equal(t, r.ExitCode, 7)
		assert.Equal(t, out.Error.Code, claim.EAlready)
	}
	assert.Assert(t, winner != "")
	for _, r := range results {
		if r.ExitCode == 7 {
			assert.Equal(t, decode(t, r).Error.Holder, winner)
		}
	}
}

// The filters as the flags give them, echoed in the JSON: --metadata-field
// is repeatable (a key given again keeps its last value, as bd ready),
// --exclude-type is split at commas with bd's aliases expanded, --priority
// is spelled as --min-priority is.
func TestFilterFlags(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	r := run(t, root, nil, "--agent", "a", "--dry-run", "--quiet", "--label-any", "backend", "--label-any", "ops",
		"--label-pattern", "back*", "--priority", "high", "--exclude-type", "feat,chore", "--has-metadata-key", "gc.routed_to",
		"--metadata-field", "gc.routed_to=pool-a", "--metadata-field", "n=1", "--metadata-field", "n=2=3", "--include-deferred")
	out := decode(t, r)
	one := 1
	assert.DeepEqual(t, out.Filters, claim.Filters{IncludeLabels: []string{}, LabelsAny: []string{"backend", "ops"}, ExcludeLabels: []string{},
		LabelPattern: "back*", Priority: &one, Types: []string{}, ExcludeTypes: []string{"feature", "chore"}, HasMetadataKey: "gc.routed_to",
		MetadataFields: map[string]string{"gc.routed_to": "pool-a", "n": "2=3"}, IncludeDeferred: true, Sort: claim.SortPriority})
	assert.Equal(t, r.ExitCode, 3, "no issue of the fixture has metadata: %s", r.Combined())
}
