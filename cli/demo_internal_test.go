package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
)

// The demo's verdict catches every way a drain can go wrong.
func TestVerdict(t *testing.T) {
	t.Parallel()
	d := claim.Demo{Ready: []string{"a", "b"}, Blocked: []string{"x"}}
	assert.Assert(t, len(verdict(d, [][]string{{"a"}, {"b"}})) == 0)
	assert.DeepEqual(t, verdict(d, [][]string{{"a", "b"}, {"b"}}), []string{"b claimed 2 times [agent-1 agent-2]", "3 claims for 2 ready issues"})
	assert.DeepEqual(t, verdict(d, [][]string{{"a"}, {"x"}}), []string{"b claimed 0 times []", "blocked x claimed by [agent-2]"})
}

func TestRaceReportsAgentErrors(t *testing.T) {
	t.Parallel()
	_, err := race(context.Background(), claim.Workspace{DBPath: filepath.Join(t.TempDir(), "missing.db")}, 2)
	assert.ErrorContains(t, err, "DB_NOT_FOUND")
}

func TestReport(t *testing.T) {
	t.Parallel()
	d := claim.Demo{Ready: []string{"a", "b"}}
	var out strings.Builder
	assert.NilError(t, report(&out, d, [][]string{{"a", "b"}, {}}, time.Second))
	assert.Equal(t, out.String(), "  agent-1   claimed   2  [a b]\n  agent-2   claimed   0  []\n2 claims in 1s: 2 claims/s\n"+
		"verdict: PASS: every one of the 2 ready issues was claimed exactly once; the 0 blocked ones were left alone\n")
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
