package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// gascityBudget is how long Gas City's gc hook lets a work_query run
// (hookWorkQueryTimeout, 150 s in the Gas City releases that claim with
// gc hook --claim).
const gascityBudget = 150 * time.Second

// gascityHook runs the recipe as Gas City runs a work_query: `sh -c
// COMMAND` in the workspace, with bd's environment plus the GC_* and
// BEADS_* variables given, under Gas City's budget, and decodes stdout as
// Gas City does, a list of issues.
func gascityHook(t *testing.T, w *claimtest.BdWorkspace, bin string, env ...string) []map[string]any {
	t.Helper()
	issues, err := gascityCall(w, bin, env...)
	assert.NilError(t, err)
	return issues
}

// gascityCall is gascityHook that returns its failure, for goroutines.
func gascityCall(w *claimtest.BdWorkspace, bin string, env ...string) ([]map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gascityBudget)
	defer cancel()
	script := filepath.Join(claimtest.Root(), "scripts", "gascity-work-query.sh")
	cmd := exec.CommandContext(ctx, "sh", "-c", "sh "+script+" rig/worker")
	cmd.Dir = w.Dir
	cmd.Env = append(append(slices.Clone(w.Env), baseEnv()...), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var issues []map[string]any
	if err != nil {
		return nil, fmt.Errorf("%v; stdout: %s; stderr: %s", err, out, stderr.String())
	}
	if err := json.Unmarshal(out, &issues); err != nil {
		return nil, fmt.Errorf("stdout is not a list of issues (%v): %q", err, out)
	}
	if len(issues) > 1 {
		return nil, fmt.Errorf("more than one issue: %s", out)
	}
	return issues, nil
}

// routedWorkspace is a bd v0.49.6 workspace with n ready issues routed to
// rig/worker, 3 routed to rig/other and 2 not routed, and a directory
// holding bd-claim as `bd-claim`, to put on PATH.
func routedWorkspace(t *testing.T, n int) (w *claimtest.BdWorkspace, bin string, routed []string) {
	t.Helper()
	w = claimtest.SQLiteWorkspace(t, "v0.49.6")
	for i := range n + 5 {
		r := w.OK("create", fmt.Sprintf("issue %d", i), "--silent")
		id := strings.TrimSpace(r.Stdout())
		switch {
		case i < n:
			w.OK("update", id, "--metadata", `{"gc.routed_to":"rig/worker"}`)
			routed = append(routed, id)
		case i < n+3:
			w.OK("update", id, "--metadata", `{"gc.routed_to":"rig/other"}`)
		}
	}
	bin = t.TempDir()
	assert.NilError(t, os.Symlink(binary, filepath.Join(bin, "bd-claim")))
	return w, bin, routed
}

// The controller's probe (no GC_SESSION_ID) sees routed work and claims
// nothing; a session claims one routed issue, and asking again returns the
// same issue (resumed) rather than a second one; the probe run with that
// session's actor sees the issue it holds, and still writes nothing.
// Another session gets the other routed issue; then there is none left.
func TestGasCityWorkQueryProbeAndResume(t *testing.T) {
	t.Parallel()
	w, bin, routed := routedWorkspace(t, 2)
	db := filepath.Join(w.Dir, ".beads", "beads.db")
	sum := claimtest.FileSum(t, db)
	probe := gascityHook(t, w, bin, "BEADS_ACTOR=")
	assert.Equal(t, len(probe), 1)
	assert.Equal(t, probe[0]["status"], "open")
	assert.Assert(t, slices.Contains(routed, probe[0]["id"].(string)))
	assert.Equal(t, claimtest.FileSum(t, db), sum, "the probe wrote")

	session := []string{"GC_SESSION_ID=gc-s1", "GC_SESSION_NAME=rig--worker-1", "GC_AGENT=rig/worker", "BEADS_ACTOR=rig/worker-1"}
	got := gascityHook(t, w, bin, session...)
	assert.Equal(t, len(got), 1)
	assert.Equal(t, got[0]["status"], "in_progress")
	assert.Equal(t, got[0]["assignee"], "rig/worker-1")
	again := gascityHook(t, w, bin, session...)
	assert.Equal(t, len(again), 1)
	assert.Equal(t, again[0]["id"], got[0]["id"], "a session that holds an issue gets it back, not a new one")
	sum = claimtest.FileSum(t, db)
	held := gascityHook(t, w, bin, "BEADS_ACTOR=rig/worker-1")
	assert.Equal(t, len(held), 1)
	assert.Equal(t, held[0]["id"], got[0]["id"], "the probe sees the issue the actor holds")
	assert.Equal(t, claimtest.FileSum(t, db), sum, "the probe wrote")

	other := gascityHook(t, w, bin, "GC_SESSION_ID=gc-s2", "GC_AGENT=rig/worker", "BEADS_ACTOR=rig/worker-2")
	assert.Equal(t, len(other), 1)
	assert.Assert(t, other[0]["id"] != got[0]["id"] && slices.Contains(routed, other[0]["id"].(string)), "%v", other)
	none := gascityHook(t, w, bin, "GC_SESSION_ID=gc-s3", "GC_AGENT=rig/worker", "BEADS_ACTOR=rig/worker-3")
	assert.Equal(t, len(none), 0, "%v", none)
}

// The recipe fails as a Gas City query should: without its target it
// stops at once (exit 2, nothing run); a workspace bd-claim cannot find is
// bd-claim's exit status (5), which Gas City counts as a failed query, not
// as no work.
func TestGasCityWorkQueryFailures(t *testing.T) {
	t.Parallel()
	script := filepath.Join(claimtest.Root(), "scripts", "gascity-work-query.sh")
	r := icmd.RunCmd(icmd.Command("sh", "-c", "sh "+script), icmd.WithEnv("PATH="+os.Getenv("PATH")))
	r.Assert(t, icmd.Expected{ExitCode: 2, Err: "give the routed target (gc.routed_to) as the first argument"})
	assert.Equal(t, r.Stdout(), "")

	w, bin, _ := routedWorkspace(t, 1)
	_, err := gascityCall(w, bin, "GC_SESSION_ID=gc-s1", "BEADS_ACTOR=rig/worker-1", "BEADS_DIR="+filepath.Join(w.Dir, "no-such-dir"))
	assert.ErrorContains(t, err, "exit status 5")
	assert.ErrorContains(t, err, "WORKSPACE_NOT_FOUND")
}

// A routed swarm of hooks drains the routed issues: each is handed to
// exactly one session, the issues routed elsewhere are left alone, and a
// drained queue is `[]`.
func TestGasCityWorkQuerySwarm(t *testing.T) {
	t.Parallel()
	const sessions, issues = 8, 24
	w, bin, routed := routedWorkspace(t, issues)
	var mu sync.Mutex
	owner := map[string][]string{}
	var errs []error
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actor := fmt.Sprintf("rig/worker-%d", s)
			env := []string{"GC_SESSION_ID=gc-s" + fmt.Sprint(s), "GC_AGENT=rig/worker", "BEADS_ACTOR=" + actor}
			for {
				got, err := gascityCall(w, bin, env...)
				if err == nil && len(got) == 0 {
					return
				}
				var id string
				if err == nil {
					id = got[0]["id"].(string)
					// The work is done: close it, so that the next call claims anew.
					if r := run(t, w.Dir, append(slices.Clone(w.Env), "BEADS_ACTOR="+actor), "close", "--id", id, "--quiet"); r.ExitCode != 0 {
						err = fmt.Errorf("close %s: %s", id, r.Combined())
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					owner[id] = append(owner[id], actor)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, len(errs), 0, "%v", errs)
	assert.Equal(t, len(owner), issues, "claimed %v", owner)
	for id, who := range owner {
		assert.Assert(t, slices.Contains(routed, id), "%s is not routed to rig/worker", id)
		assert.Equal(t, len(who), 1, "%s was handed to %v", id, who)
	}
}
