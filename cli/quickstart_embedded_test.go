//go:build embedded

package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// quickStart is the README's quick start: every command line of its sh
// blocks that runs bd-claim, in order, without its comment.
func quickStart(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../README.md")
	assert.NilError(t, err)
	defer f.Close()
	var lines []string
	in, block := false, false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Quick start"
		case in && strings.HasPrefix(line, "```"):
			block = !block && line == "```sh"
		case in && block && strings.Contains(line, "bd-claim "):
			cmd, _, _ := strings.Cut(line, " #")
			lines = append(lines, strings.TrimSpace(cmd))
		}
	}
	assert.Assert(t, len(lines) >= 6, "%q", lines)
	return lines
}

// The README's quick start, word for word, on a fresh bd v1.3 workspace of
// bd's default mode (embedded), by an agent whose work takes ten minutes
// without a heartbeat: its claim (made without --lease) is still its own
// when it closes it, though bd's 5-minute lease on it lapsed and eight
// agents claimed meanwhile. The README's example issue (fx-lbq) is the one
// the agent claimed. Then the README's drop-in for bd ready --claim --json.
func TestEmbeddedQuickStart(t *testing.T) {
	w := claimtest.EmbeddedWorkspace(t, "qs")
	for _, args := range [][]string{
		{"Data loss on concurrent write", "-p", "0", "-t", "bug", "-l", "backend,infra,urgent"},
		{"Slow dashboard", "-p", "1", "-t", "bug", "-l", "infra"},
		{"Docs", "-p", "2"}, {"Tests", "-p", "2"}, {"Refactor", "-p", "3"},
		{"Lint", "-p", "3"}, {"Deps", "-p", "4"}, {"Logo", "-p", "4"},
	} {
		w.OK(append([]string{"create"}, args...)...)
	}
	id := ""
	sh := func(line string, exit ...int) string {
		t.Helper()
		line = strings.ReplaceAll(strings.ReplaceAll(line, "bd-claim ", `"$BDCLAIM" `), "fx-lbq", id)
		r := icmd.RunCmd(icmd.Command("bash", "-c", line), icmd.Dir(w.Dir), icmd.WithEnv(append(append(baseEnv(), w.Env...), "BDCLAIM="+binary)...))
		want := 0
		if len(exit) > 0 {
			want = exit[0]
		}
		assert.Equal(t, r.ExitCode, want, "%s\n%s", line, r.Combined())
		return r.Stdout()
	}
	lines := quickStart(t)
	step := func(prefix string) string {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("the quick start has no line %q…: %q", prefix, lines)
		return ""
	}
	assert.Assert(t, strings.HasPrefix(sh(step("bd-claim --agent backend-1 --dry-run --human")), "would claim "))
	took := sh(step("bd-claim --agent backend-1 --human"))
	assert.Assert(t, strings.HasPrefix(took, "claimed "), took)
	id = strings.Fields(took)[1]

	// Ten minutes of work, no heartbeat: bd's lease of the claim ended
	// five minutes ago.
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	conn, end, err := dolt.OpenEmbeddedConn(context.Background(), ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
	assert.NilError(t, err)
	_, err = conn.ExecContext(context.Background(), `UPDATE leases SET granted_at = granted_at - INTERVAL 10 MINUTE,
		heartbeat_at = heartbeat_at - INTERVAL 10 MINUTE, lease_expires_at = lease_expires_at - INTERVAL 10 MINUTE WHERE issue_id = ?`, id)
	assert.NilError(t, err)
	end()

	sh(step("for i in $(seq 8); do bd-claim"))
	sh(step("bd-claim --agent infra-1 --label infra"), 3) // the infra bugs are taken
	var shown []struct{ Status, Assignee string }
	w.JSON(&shown, "show", id)
	assert.Equal(t, shown[0].Status+"/"+shown[0].Assignee, "in_progress/backend-1", "still the agent's after ten minutes")
	var closed struct {
		Issue struct{ ID, Status string }
	}
	assert.NilError(t, json.Unmarshal([]byte(sh(step("bd-claim close   --agent backend-1 --id fx-lbq"))), &closed))
	assert.Equal(t, closed.Issue.ID+"/"+closed.Issue.Status, id+"/closed")

	// The lease lines: nothing is left, so the claim waits out its five
	// minutes unless an issue comes; one does.
	w.OK("create", "Late arrival", "-p", "1")
	leased := sh(step("bd-claim --agent backend-1 --lease 10m --wait 5m"))
	var got struct {
		Issue   struct{ ID string }
		ClaimID int64 `json:"claim_id"`
	}
	assert.NilError(t, json.Unmarshal([]byte(leased), &got), leased)
	id = got.Issue.ID
	sh(step("bd-claim heartbeat --agent backend-1 --id fx-lbq"))
	sh(step("bd-claim reap --older-than 1h"))
	sh(step("bd-claim release --agent backend-1 --id fx-lbq --failed"))

	// The drop-in for bd ready --claim --json: bd's list of the claimed
	// issue, then [] (exit 0) once nothing is left (the released issue
	// backs off).
	w.OK("create", "Drop-in", "-p", "0")
	var list []struct{ ID, Title, Status, Assignee string }
	assert.NilError(t, json.Unmarshal([]byte(sh(step("BEADS_ACTOR=backend-1 bd-claim --bd-json"))), &list))
	assert.Equal(t, len(list), 1)
	assert.Equal(t, list[0].Title+"/"+list[0].Status+"/"+list[0].Assignee, "Drop-in/in_progress/backend-1")
	assert.Equal(t, sh(step("BEADS_ACTOR=backend-1 bd-claim --bd-json")), "[]\n")
}
