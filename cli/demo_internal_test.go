package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/sqlite"
)

// The demo's verdict catches every way a drain can go wrong.
func TestVerdict(t *testing.T) {
	t.Parallel()
	d := sqlite.Demo{Ready: []string{"a", "b"}, Blocked: []string{"x"}}
	assert.Assert(t, len(verdict(d, [][]string{{"a"}, {"b"}})) == 0)
	assert.DeepEqual(t, verdict(d, [][]string{{"a", "b"}, {"b"}}), []string{"b claimed 2 times [agent-1 agent-2]", "3 claims for 2 ready issues"})
	assert.DeepEqual(t, verdict(d, [][]string{{"a"}, {"x"}}), []string{"b claimed 0 times []", "blocked x claimed by [agent-2]"})
	assert.DeepEqual(t, verdict(sqlite.Demo{Ready: []string{"a"}}, [][]string{{}}), []string{"a claimed 0 times []", "0 claims for 1 ready issue"})
}

func TestRaceReportsAgentErrors(t *testing.T) {
	t.Parallel()
	_, err := race(context.Background(), claim.Workspace{DBPath: filepath.Join(t.TempDir(), "missing.db")}, 2)
	assert.ErrorContains(t, err, "DB_NOT_FOUND")
}

func TestReport(t *testing.T) {
	t.Parallel()
	d := sqlite.Demo{Ready: []string{"a", "b"}}
	var out strings.Builder
	assert.NilError(t, report(&out, d, [][]string{{"a", "b"}, {}}, time.Second))
	assert.Equal(t, out.String(), "  agent-1   claimed   2  [a b]\n  agent-2   claimed   0  []\n2 claims in 1s: 2 claims/s\n"+
		"verdict: PASS: every ready issue was claimed exactly once (2 ready issues), every blocked one left alone (0 blocked issues)\n")
	out.Reset()
	assert.NilError(t, report(&out, sqlite.Demo{Ready: []string{"a"}, Blocked: []string{"x"}}, [][]string{{"a"}}, time.Second))
	assert.Equal(t, out.String(), "  agent-1   claimed   1  [a]\n1 claim in 1s: 1 claims/s\n"+
		"verdict: PASS: every ready issue was claimed exactly once (1 ready issue), every blocked one left alone (1 blocked issue)\n")
	err := report(&out, d, [][]string{{"a"}, {"a"}}, time.Second)
	assert.Error(t, err, "verdict: FAIL: a claimed 2 times [agent-1 agent-2]; b claimed 0 times []")
	assert.Equal(t, preview([]string{"1", "2", "3", "4", "5", "6", "7"}), "[1 2 3 4 5 6] ...")
}

func TestDemoCannotCreateWorkspace(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := demo(context.Background(), "/dev/null/demo", 2, 10, &out)
	assert.ErrorContains(t, err, "not a directory")
	assert.Equal(t, out.String(), "")
}

// Claim ages print short.
func TestAge(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		45 * time.Second: "45s", 12*time.Minute + 30*time.Second: "12m", 3*time.Hour + 5*time.Minute: "3h5m",
		52 * time.Hour: "2d4h", 1500 * time.Millisecond: "1s",
	} {
		assert.Equal(t, age(d), want)
	}
}

// Counts in the stats table agree with their number.
func TestHumanStatsSingular(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := claim.Stats{
		Open: 1, Ready: 1, ReadyByPriority: map[string]int{"P0": 1, "P1": 0},
		InProgress:    []claim.AgentClaims{{Agent: "a1", Issues: []claim.HeldIssue{{ID: "fx-1", ClaimID: 7, ClaimedAt: &until, AgeSeconds: 90, LeaseUntil: &until, Expired: true}}}},
		ExpiredLeases: []claim.Expired{{ID: "fx-1", Holder: "a1", ClaimID: 7, LeaseUntil: &until}},
		LastHour:      claim.EventCounts{Claims: 1, Releases: 1, Failures: 1, Reclaims: 1, Closes: 1},
	}
	var out strings.Builder
	humanStats(output{w: &out, human: true}, st)
	assert.Equal(t, out.String(), strings.Join([]string{
		"ready        1  (P0 1, P1 0)",
		"open         1  (0 blocked)",
		"in progress  1  (1 agent, 1 expired lease)",
		"backoff      0  ",
		"abandoned    0  ",
		"last hour       1 claim, 1 release, 1 close, 1 failure, 1 reclaim",
		"",
		"AGENT  ISSUE  CLAIM  AGE  LEASE",
		"a1     fx-1   7      1m   EXPIRED 2026-01-02T03:04:05Z",
		"",
	}, "\n"))
	assert.Equal(t, plural(0, "agent", "agents"), "0 agents")
	assert.Equal(t, plural(2, "agent", "agents"), "2 agents")
}
