//go:build embedded

package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// embeddedIssues inserts n open issues PREFIX-r1..rN into an embedded
// workspace's database directly, with bd's column defaults, as doltIssues
// does on a server: enough for races, which test exclusivity.
func embeddedIssues(t *testing.T, w *claimtest.BdWorkspace, prefix string, n int) {
	t.Helper()
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	ctx := context.Background()
	conn, end, err := dolt.OpenEmbeddedConn(ctx, ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
	assert.NilError(t, err)
	defer end()
	for i := 1; i <= n; i++ {
		_, err := conn.ExecContext(ctx, "INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, row_lock) VALUES (?, ?, '', '', '', '', ?, 'task', ?)",
			fmt.Sprintf("%s-r%d", prefix, i), "race "+strconv.Itoa(i), i%4, i)
		assert.NilError(t, err)
	}
}

// Embedded Dolt: bd's `bd ready --claim` processes fail no more often
// beside bd-claim than alone (besideBd).
func TestEmbeddedRaceWithBd(t *testing.T) {
	besideBd(t, func(prefix string) (*claimtest.BdRunner, func(string) *claimtest.BdRunner) {
		w := claimtest.EmbeddedWorkspace(t, prefix)
		embeddedIssues(t, w, prefix, 40)
		return &w.BdRunner, func(agent string) *claimtest.BdRunner { return &w.As(agent).BdRunner }
	})
}

// kill -9 of claim processes at random moments leaves no half claim
// (killRandomly); bd then works on the workspace (the engine's lock died
// with the processes).
func TestEmbeddedKill9(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "k9")
	embeddedIssues(t, w, "k9", 40)
	killRandomly(t, w.Dir, w.Env)
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	conn, end, err := dolt.OpenEmbeddedConn(context.Background(), ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
	assert.NilError(t, err)
	claimed := noHalfClaims(t, conn)
	end()
	var list []struct{ ID string }
	w.JSON(&list, "list", "--status", "in_progress", "--limit", "0")
	assert.Equal(t, len(list), claimed, "bd sees every claim")
	w.As("after").OK("ready", "--claim", "--json")
}

// The MCP server on an embedded workspace holds the engine only during a
// tool call: between calls bd works on the workspace as if no server ran
// (bd waits for the engine without end when another process holds it), and
// the server's claims, renewals and releases are bd's to see.
func TestEmbeddedMCP(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "mc")
	var created struct{ ID string }
	w.JSON(&created, "create", "served", "-p", "1")
	s := serve(t, w.Dir, "agent-m", "--log-level", "debug")
	got := s.callOK(t, "claim", map[string]any{"lease": "3s"})
	assert.Equal(t, got.Issue.ID, created.ID)
	for range 3 { // while the server runs and renews the lease
		var shown []struct{ Status, Assignee string }
		w.JSON(&shown, "show", created.ID)
		assert.Equal(t, shown[0].Status+"/"+shown[0].Assignee, "in_progress/agent-m")
		time.Sleep(time.Second)
	}
	s.callOK(t, "release", map[string]any{"id": created.ID})
	var shown []struct{ Status string }
	w.JSON(&shown, "show", created.ID)
	assert.Equal(t, shown[0].Status, "open")
	assert.NilError(t, s.Close())
	assert.Assert(t, strings.Contains(s.stderr.String(), `"msg":"issue_renewal_success"`), s.stderr.String())
}

// The embedded driver sends no usage event to DoltHub. Unless metrics are
// off, the driver, once per process, creates .dolt/temptf/
// dolt_embedded_metrics before it sends (measured with a program that
// opens the engine without bd-claim's claim/dolt/nometrics). A claim
// process waiting a second in a new workspace, its environment without
// DOLT_METRICS_DISABLED, leaves no such file.
func TestEmbeddedNoMetrics(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "nm")
	env := slices.DeleteFunc(slices.Clone(w.Env), func(kv string) bool { return strings.HasPrefix(kv, "DOLT_METRICS_DISABLED=") })
	run(t, w.Dir, env, "--agent", "a", "--wait", "1s", "--quiet").Assert(t, icmd.Expected{ExitCode: 3})
	found := ""
	filepath.WalkDir(w.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "dolt_embedded_metrics" {
			found = p
		}
		return nil
	})
	assert.Equal(t, found, "", "the driver prepared a usage event")
}
