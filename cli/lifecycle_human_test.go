package cli_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// human runs bd-claim with --human and returns stdout, requiring exit
// status want and nothing on stderr: without --log-level, a person sees
// only the result.
func human(t *testing.T, root string, want int, args ...string) string {
	t.Helper()
	r := run(t, root, nil, append(args, "--human")...)
	assert.Equal(t, r.ExitCode, want, "bd-claim %q: stdout %q stderr %q", args, r.Stdout(), r.Stderr())
	assert.Equal(t, r.Stderr(), "", "bd-claim %q", args)
	return r.Stdout()
}

// counted is how the human output counts a regular noun: "1 claim",
// "0 claims".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// waitLease sleeps past a 1s lease (leases end on a whole second, so one
// lasts up to 2s).
func waitLease(t *testing.T) { t.Helper(); time.Sleep(2100 * time.Millisecond) }

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// Every lifecycle command has a one-line (or table) answer for a person,
// close's dry run, close and retried close included.
func TestLifecycleHuman(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	c := claimtest.Cases(t, "0.49.6")
	a01, a02 := c["A01"].ID, c["A02"].ID

	out := human(t, root, 0, "claim", "--agent", "h1", "--id", a01, "--lease", "1s")
	assert.Assert(t, is.Regexp(`^claimed `+a01+` for h1: ".*" \(P\d \w+.*\), claim \d+, leased until `+rfc3339.String()+"\n$", out))
	out = human(t, root, 0, "heartbeat", "--agent", "h1", "--id", a01, "--lease", "1s")
	assert.Assert(t, is.Regexp(`^h1 holds `+a01+` \(claim \d+\), leased until `+rfc3339.String()+"\n$", out))
	out = human(t, root, 3, "--agent", "h1", "--max-held", "1")
	assert.Equal(t, out, "no ready issue for h1 matches these filters: agent h1 already holds 1 in_progress issue (max held 1)\n")
	out = human(t, root, 3, "--agent", "h1", "--max-held", "1", "--dry-run", "--explain")
	assert.Assert(t, is.Contains(out, "held by the agent: 1 (max 1)\nopen issues excluded, by rule:\n"))
	assert.Assert(t, is.Regexp(`\n  capacity +\d+\n`, out))

	// The lease has passed (leases end on a whole second): a dry reap lists
	// it, claim-next would take it over.
	run(t, root, nil, "heartbeat", "--agent", "h1", "--id", a01, "--lease", "1s", "--quiet").Assert(t, icmd.Success)
	waitLease(t)
	out = human(t, root, 0, "reap", "--dry-run")
	assert.Assert(t, is.Regexp(`^would reap 1 stale claim\n  `+a01+`  held by h1 \(claim \d+\), lease ended `+rfc3339.String()+`, claimed `+rfc3339.String()+"\n$", out))
	out = human(t, root, 0, "--agent", "h2", "--id", a01, "--dry-run")
	assert.Assert(t, is.Regexp(`^would claim `+a01+` .*, taking over from h1 \(claim \d+, lease expired\)\n$`, out))
	out = human(t, root, 0, "reap")
	assert.Assert(t, strings.HasPrefix(out, "reaped 1 stale claim\n  "+a01), out)

	// Release, failures, abandonment, reset.
	human(t, root, 0, "--agent", "h1", "--id", a01)
	out = human(t, root, 0, "release", "--agent", "h1", "--id", a01)
	assert.Assert(t, is.Regexp(`^released `+a01+` \(claim \d+\)\n$`, out))
	human(t, root, 0, "--agent", "h1", "--id", a02)
	out = human(t, root, 0, "release", "--agent", "h1", "--id", a02, "--failed", "--reason", "flaky")
	assert.Assert(t, is.Regexp(`^released `+a02+` \(claim \d+\): failed attempt 1, claimable again from `+rfc3339.String()+"\n$", out))
	claimID := lcOK(t, root, nil, "--agent", "h1", "--id", a01).ClaimID
	out = human(t, root, 0, "release", "--agent", "h1", "--id", a01, "--failed", "--max-failures", "1")
	assert.Equal(t, out, fmt.Sprintf("released %s (claim %d): failed attempt 1, abandoned (bd-claim reset --id %s hands it out again)\n", a01, claimID, a01))

	out = human(t, root, 0, "stats")
	for _, want := range []string{"ready ", "open ", "blocked)", "in progress ", "backoff ", "abandoned ", "last hour ",
		"AGENT", "ISSUE", "FAILURES", "STATE", "(nobody)", a01 + "  1         abandoned (labelled claim:abandoned)", a02 + "  1         backoff until "} {
		assert.Assert(t, is.Contains(out, want))
	}

	out = human(t, root, 0, "reset", "--id", a01)
	assert.Equal(t, out, "reset "+a01+": 1 failed attempt cleared, abandoned label removed\n")
	out = human(t, root, 0, "reset", "--id", a01)
	assert.Equal(t, out, "reset "+a01+": 0 failed attempts cleared\n")

	// Close: a dry run, the close, a retried close.
	claimID = lcOK(t, root, nil, "--agent", "h1", "--id", a01).ClaimID
	out = human(t, root, 0, "close", "--agent", "h1", "--id", a01, "--dry-run")
	assert.Equal(t, out, fmt.Sprintf("would close %s (claim %d)\n", a01, claimID))
	out = human(t, root, 0, "close", "--agent", "h1", "--id", a01, "--reason", "done")
	assert.Equal(t, out, fmt.Sprintf("closed %s (claim %d)\n", a01, claimID))
	out = human(t, root, 0, "close", "--agent", "h1", "--id", a01)
	assert.Equal(t, out, a01+" is closed already\n")
}

// With --human the logs are text for a person too: nothing from a command
// that succeeds, one "bd-claim: CODE: message" line for one that fails,
// and text lines (never JSON) when --log-level asks for them.
func TestHumanLogs(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	r := run(t, root, []string{"TRACE_ID=t-1"}, "stats", "--human")
	r.Assert(t, icmd.Success)
	assert.Assert(t, is.Contains(r.Stdout(), "in progress "))
	assert.Equal(t, r.Stderr(), "")

	for _, c := range []struct {
		dir  string
		args []string
		exit int
		line string
	}{
		{root, []string{"--agent", "h", "--id", "fx-none"}, 7, "bd-claim: ISSUE_NOT_FOUND: no issue fx-none in "},
		{root, []string{"release", "--agent", "h", "--id", "fx-none"}, 7, "bd-claim: ISSUE_NOT_FOUND: "},
		{t.TempDir(), []string{"stats"}, 5, "bd-claim: WORKSPACE_NOT_FOUND: "},
		{root, []string{"stats", "--timeout-ms", "-1"}, 2, "bd-claim: INVALID_ARGUMENT: "},
	} {
		r := run(t, c.dir, nil, append(c.args, "--human")...)
		assert.Equal(t, r.ExitCode, c.exit, "%q: %s", c.args, r.Stderr())
		assert.Equal(t, r.Stdout(), "")
		assert.Assert(t, strings.HasPrefix(r.Stderr(), c.line), "%q: %q", c.args, r.Stderr())
		assert.Equal(t, strings.Count(r.Stderr(), "\n"), 1, "%q: one line, %q", c.args, r.Stderr())
		assert.Assert(t, !strings.Contains(r.Stderr(), "{"), "%q: no JSON, %q", c.args, r.Stderr())
	}

	// An explicit --log-level wins: the records as text, the trace id, the
	// filters as compact JSON, the error record and then the error line.
	r = run(t, root, []string{"TRACE_ID=t-1"}, "stats", "--human", "--log-level", "info")
	r.Assert(t, icmd.Success)
	assert.Assert(t, is.Regexp(`^bd-claim: level=info msg=stats_success trace_id=t-1 ready=\d+ open=\d+ duration_ms=[\d.]+\n$`, r.Stderr()))
	r = run(t, root, nil, "--agent", "h", "--dry-run", "--label", "backend", "--human", "--log-level", "debug")
	r.Assert(t, icmd.Success)
	lines := strings.Split(strings.TrimSuffix(r.Stderr(), "\n"), "\n")
	assert.Equal(t, len(lines), 2, r.Stderr())
	assert.Assert(t, strings.HasPrefix(lines[0], "bd-claim: level=debug msg=workspace_discovery "), lines[0])
	assert.Assert(t, strings.HasPrefix(lines[1], "bd-claim: level=info msg=issue_claim_dry_run issue_id="), lines[1])
	assert.Assert(t, is.Contains(lines[1], ` agent=h filters="{\"only_unassigned\":false,\"include_labels\":[\"backend\"],`))
	r = run(t, root, nil, "--agent", "h", "--id", "fx-none", "--human", "--log-level", "error")
	assert.Equal(t, r.ExitCode, 7)
	assert.Assert(t, is.Regexp(`^bd-claim: level=error msg=issue_claim_error agent=h filters=".*" error.code=ISSUE_NOT_FOUND error.message="no issue fx-none in .*" duration_ms=[\d.]+\n`+
		`bd-claim: ISSUE_NOT_FOUND: no issue fx-none in .*\n$`, r.Stderr()))
	run(t, root, nil, "stats", "--human", "--log-level", "debug", "--quiet").Assert(t, icmd.Expected{Err: icmd.None})
}

// help COMMAND and COMMAND --help print the command's usage; claim is the
// default command's name too.
func TestLifecycleHelp(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	for _, args := range [][]string{{"help", "release"}, {"release", "--help"}} {
		r := run(t, root, nil, args...)
		r.Assert(t, icmd.Success)
		assert.Assert(t, strings.HasPrefix(r.Stdout(), "Give a held issue back"), r.Stdout())
		assert.Assert(t, is.Contains(r.Stdout(), "bd-claim release --agent NAME --id ISSUE"))
		assert.Assert(t, is.Contains(r.Stdout(), "--failed"))
	}
	r := run(t, root, nil, "help")
	r.Assert(t, icmd.Success)
	assert.Assert(t, strings.HasPrefix(r.Stdout(), "bd-claim atomically claims"))
	r = run(t, root, nil, "help", "nonsense")
	assert.Assert(t, strings.HasPrefix(r.Stdout(), "bd-claim atomically claims"), "an unknown command: the general help")
	r = run(t, root, nil, "claim", "--agent", "alias", "--dry-run", "--quiet")
	r.Assert(t, icmd.Success)
	assert.Equal(t, decode(t, r).Agent, "alias")
}

// A failure after the store is open is reported with its code, for reap
// and stats too.
func TestLifecycleStoreErrors(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	conn := claimtest.Open(t, claimtest.DBPath(root))
	run(t, root, nil, "--agent", "r", "--lease", "1s", "--quiet").Assert(t, icmd.Success)
	waitLease(t)
	_, err := conn.Exec("CREATE TRIGGER no_updates BEFORE UPDATE ON issues BEGIN SELECT RAISE(ABORT, 'read-only today'); END")
	assert.NilError(t, err)
	r := run(t, root, nil, "reap", "--quiet")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stdout(), `"code":"UNEXPECTED"`))
	assert.Assert(t, is.Contains(r.Stdout(), "read-only today"))

	_, err = conn.Exec(`ALTER TABLE blocked_issues_cache RENAME TO blocked_rows;
		CREATE VIEW blocked_issues_cache AS SELECT json_extract('{', '$') AS issue_id FROM blocked_rows`)
	assert.NilError(t, err)
	r = run(t, root, nil, "stats", "--quiet")
	assert.Equal(t, r.ExitCode, 1, r.Stdout())
	assert.Assert(t, is.Contains(r.Stdout(), "could not read the stats"))
}
