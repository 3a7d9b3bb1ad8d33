package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// doltRun runs the built bd-claim in workspace w with bd's environment.
func doltRun(t *testing.T, w *claimtest.DoltWorkspace, args ...string) *icmd.Result {
	t.Helper()
	return run(t, w.Dir, w.Env, args...)
}

// doltIssues inserts n open issues id PREFIX-r1..rN directly, with bd's
// column defaults: enough for races, which test exclusivity, not the
// footprint (the twins do that with issues bd made).
func doltIssues(t *testing.T, conn *sql.DB, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s-r%d", prefix, i)
		_, err := conn.Exec("INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, row_lock) VALUES (?, ?, '', '', '', '', ?, 'task', ?)",
			id, "race "+strconv.Itoa(i), i%4, i)
		assert.NilError(t, err)
		ids = append(ids, id)
	}
	_, err := conn.Exec("CALL DOLT_COMMIT('-Am', 'test issues')")
	assert.NilError(t, err)
	return ids
}

// The whole contract on a Dolt server workspace, through the binary:
// claim-next, --json fields, --id re-claim, heartbeat, release, and what
// the real bd sees afterwards.
func TestDoltCLILifecycle(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "cl")
	var a, b struct{ ID string }
	w.JSON(&a, "create", "first", "-p", "1", "-l", "backend")
	w.JSON(&b, "create", "second", "-p", "2")

	r := doltRun(t, w, "--agent", "agent-1", "--dry-run")
	r.Assert(t, icmd.Success)
	assert.Assert(t, strings.Contains(r.Stdout(), `"id":"`+a.ID+`"`), r.Stdout())

	r = doltRun(t, w, "--agent", "agent-1")
	r.Assert(t, icmd.Success)
	var out struct {
		Claimed bool
		Issue   struct {
			ID, Status, Assignee string
			Labels               []string
			ContentHash          string `json:"content_hash"`
		}
		ClaimID int64 `json:"claim_id"`
		Lease   struct {
			ExpiresAt string `json:"expires_at"`
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &out), r.Stdout())
	assert.Equal(t, out.Issue.ID, a.ID)
	assert.Equal(t, out.Issue.Status, "in_progress")
	assert.DeepEqual(t, out.Issue.Labels, []string{"backend"})
	assert.Assert(t, out.ClaimID != 0)
	var hash string
	assert.NilError(t, w.DB(t).QueryRow("SELECT content_hash FROM issues WHERE id = ?", a.ID).Scan(&hash))
	assert.Assert(t, hash != "")
	assert.Equal(t, out.Issue.ContentHash, hash, "the JSON shows the issue's content_hash")

	var shown []struct{ Status, Assignee string }
	w.JSON(&shown, "show", a.ID)
	assert.Equal(t, shown[0].Status+"/"+shown[0].Assignee, "in_progress/agent-1")

	// The holder re-claims under the same claim id; another agent is refused.
	doltRun(t, w, "--agent", "agent-1", "--id", a.ID, "--claim-id", strconv.FormatInt(out.ClaimID, 10)).Assert(t, icmd.Success)
	r = doltRun(t, w, "--agent", "agent-2", "--id", a.ID)
	assert.Equal(t, r.ExitCode, 7, r.Combined())
	assert.Assert(t, strings.Contains(r.Stdout(), "ALREADY_CLAIMED"), r.Stdout())

	doltRun(t, w, "heartbeat", "--agent", "agent-1", "--id", a.ID, "--lease", "10m").Assert(t, icmd.Success)
	r = doltRun(t, w, "release", "--agent", "agent-1", "--id", a.ID, "--claim-id", "12345")
	assert.Equal(t, r.ExitCode, 7, r.Combined())
	doltRun(t, w, "release", "--agent", "agent-1", "--id", a.ID, "--claim-id", strconv.FormatInt(out.ClaimID, 10), "--reason", "later").Assert(t, icmd.Success)
	var after []struct{ Status, Assignee string }
	w.JSON(&after, "show", a.ID)
	assert.Equal(t, after[0].Status+"/"+after[0].Assignee, "open/")

	// The failure policy, stats, reset and reap, with the same JSON as on SQLite.
	doltRun(t, w, "--agent", "agent-1", "--id", b.ID).Assert(t, icmd.Success)
	r = doltRun(t, w, "release", "--agent", "agent-1", "--id", b.ID, "--failed", "--reason", "flaky")
	r.Assert(t, icmd.Success)
	assert.Assert(t, strings.Contains(r.Stdout(), `"failures":1`) && strings.Contains(r.Stdout(), `"retry_at":"`), r.Stdout())
	r = doltRun(t, w, "--agent", "agent-2", "--id", b.ID)
	assert.Equal(t, r.ExitCode, 7, r.Combined())
	assert.Assert(t, strings.Contains(r.Stdout(), "in backoff until"), r.Stdout())
	r = doltRun(t, w, "stats")
	r.Assert(t, icmd.Success)
	var st struct {
		Ready   int
		Backoff []struct{ ID string }
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &st), r.Stdout())
	assert.Equal(t, st.Ready, 1)
	assert.Equal(t, len(st.Backoff), 1)
	assert.Equal(t, st.Backoff[0].ID, b.ID)
	r = doltRun(t, w, "reset", "--id", b.ID)
	r.Assert(t, icmd.Success)
	assert.Assert(t, strings.Contains(r.Stdout(), `"cleared_failures":1`), r.Stdout())
	r = doltRun(t, w, "reap")
	r.Assert(t, icmd.Success)
	assert.Assert(t, strings.Contains(r.Stdout(), `"reaped":[]`), r.Stdout())
}

// --wait on a Dolt workspace: a wait that runs out exits 3 with the same
// reason as on SQLite; a waiting claim takes the issue the real bd creates
// meanwhile, long before its wait ends.
func TestDoltCLIWait(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "wt")
	began := time.Now()
	out, r := lc(t, w.Dir, w.Env, "--agent", "w", "--wait", "300ms")
	took := time.Since(began)
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Equal(t, out.Status, "ok")
	assert.Assert(t, out.Issue == nil)
	assert.Equal(t, out.Reason, "nothing became claimable within 300ms")
	assert.Assert(t, took >= 300*time.Millisecond && took < 5*time.Second, "took %s", took)

	waiter := start(t, w.Dir, w.Env, "--agent", "w", "--wait", "60s", "--log-level", "debug")
	waitForLog(t, waiter, "issue_claim_waiting")
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, waiter.Stdout(), "", "it should still be waiting")
	var created struct{ ID string }
	w.As("creator").JSON(&created, "create", "new work", "-p", "1")
	done := time.Now()
	icmd.WaitOnCmd(30*time.Second, waiter)
	assert.Assert(t, !waiter.Timeout)
	assert.Equal(t, waiter.ExitCode, 0, "stdout %q stderr %q", waiter.Stdout(), waiter.Stderr())
	assert.Assert(t, time.Since(done) < 5*time.Second, "took %s after bd create", time.Since(done))
	var claimed result
	assert.NilError(t, json.Unmarshal([]byte(waiter.Stdout()), &claimed), waiter.Stdout())
	assert.Equal(t, claimed.Issue.ID, created.ID)
	assert.Equal(t, claimed.Issue.Assignee, "w")
	var shown []struct{ Status, Assignee string }
	w.JSON(&shown, "show", created.ID)
	assert.Equal(t, shown[0].Status+"/"+shown[0].Assignee, "in_progress/w")
}

// A workspace whose server is not running: the refusal (exit 4) names
// where bd-claim looked and why there, and the command that starts the
// server. Only the workspace's files are needed.
func TestDoltServerNotRunning(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	assert.NilError(t, l.Close()) // a port nothing listens on
	dir := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(dir, ".beads"), 0o755))
	assert.NilError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, ".beads", "metadata.json"), []byte(`{"backend":"dolt","dolt_mode":"server","dolt_database":"fx"}`), 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, ".beads", "dolt-server.port"), []byte(strconv.Itoa(port)), 0o600))
	r := run(t, dir, nil, "--agent", "a", "--quiet")
	assert.Equal(t, r.ExitCode, 4, r.Combined())
	out := decode(t, r)
	assert.Equal(t, out.Error.Code, claim.EUnavailable)
	assert.Assert(t, is.Contains(out.Error.Message, fmt.Sprintf("the Dolt server cannot be reached at 127.0.0.1:%d (the port from .beads/dolt-server.port): "+
		"start the workspace's server with `bd dolt start`, then retry", port)))
}

// bd v1.3 starts the server of a workspace made by a plain `bd init
// --server` itself, on a port the system picks, written to
// .beads/dolt-server.port, which `bd dolt stop` deletes. With that server
// stopped, a claim names where it looked and why there (bd's default
// port, for want of the port file) and `bd dolt start`, which brings the
// server back on another port; an MCP server started meanwhile finds it
// there and serves.
func TestDoltOwnedServerStopped(t *testing.T) {
	w := claimtest.OwnedWorkspace(t, "ow")
	portFile := filepath.Join(w.Dir, ".beads", "dolt-server.port")
	started, err := os.ReadFile(portFile)
	assert.NilError(t, err, "bd init --server writes the port of the server it started")
	var created struct{ ID string }
	w.JSON(&created, "create", "served", "-p", "1")
	w.OK("dolt", "stop")
	_, err = os.Stat(portFile)
	assert.Assert(t, os.IsNotExist(err), "bd dolt stop deletes the port file: %v", err)

	r := run(t, w.Dir, nil, "--agent", "a", "--quiet")
	assert.Equal(t, r.ExitCode, 4, r.Combined())
	out := decode(t, r)
	assert.Equal(t, out.Error.Code, claim.EUnavailable)
	assert.Assert(t, is.Contains(out.Error.Message, "the Dolt server cannot be reached at 127.0.0.1:3307, bd's default port, tried because "+
		".beads/dolt-server.port is missing (bd deletes it when the server it started stops) and nothing else names a port: "+
		"start the workspace's server with `bd dolt start`, then retry"))

	s := serve(t, w.Dir, "agent-m")
	text, isErr := s.call(t, "claim", map[string]any{})
	assert.Assert(t, isErr && strings.Contains(text, `"code":"DB_UNAVAILABLE"`), text)
	w.OK("dolt", "start")
	restarted, err := os.ReadFile(portFile)
	assert.NilError(t, err)
	assert.Assert(t, string(restarted) != string(started), "a new port: %s", restarted)
	assert.Equal(t, s.callOK(t, "claim", map[string]any{}).Issue.ID, created.ID)
	assert.NilError(t, s.Close())
	r = run(t, w.Dir, nil, "--agent", "a", "--dry-run", "--quiet")
	assert.Equal(t, r.ExitCode, 3, "the MCP server's claim is in the restarted server: %s", r.Combined())
}

// Bad connections get their own codes and exit statuses and change nothing.
func TestDoltCLIBadConnections(t *testing.T) {
	srv := claimtest.NeedDolt(t)
	w := srv.Workspace(t, "bad")
	conn := w.DB(t)
	doltIssues(t, conn, w.Prefix, 2)
	before := claimtest.DoltRows(t, conn)
	for _, stmt := range []string{
		"CREATE USER 'reader'@'%' IDENTIFIED BY 'rpw'", "GRANT SELECT ON " + w.Database + ".* TO 'reader'@'%'",
		"CREATE DATABASE halfbeads", "CREATE TABLE halfbeads.schema_migrations (version int PRIMARY KEY)", "INSERT INTO halfbeads.schema_migrations VALUES (66)",
	} {
		_, err := conn.Exec(stmt)
		assert.NilError(t, err)
	}
	env := func(kv ...string) []string {
		e := slices.Clone(w.Env)
		for i := 0; i+1 < len(kv); i += 2 {
			e = append(e, kv[i]+"="+kv[i+1])
		}
		return e
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		exit int
		code string
		msg  string
	}{
		{"server down", env("BEADS_DOLT_SERVER_PORT", "1"), nil, 4, "DB_UNAVAILABLE", "cannot be reached at 127.0.0.1:1 (the port from BEADS_DOLT_SERVER_PORT): start the workspace's server with `bd dolt start`"},
		{"wrong password", env("BEADS_DOLT_SERVER_USER", "reader", "BEADS_DOLT_PASSWORD", "nope"), nil, 5, "DB_ACCESS_DENIED", "refused the login"},
		{"no such database", env("BEADS_DOLT_SERVER_DATABASE", "nosuchdb"), nil, 5, "DB_NOT_FOUND", "never creates one"},
		{"not a Beads database", env("BEADS_DOLT_SERVER_DATABASE", "information_schema"), nil, 6, "SCHEMA_INCOMPATIBLE", "is not a Beads database"},
		{"a database with bd's schema version but no metadata", env("BEADS_DOLT_SERVER_DATABASE", "halfbeads"), nil, 6, "SCHEMA_INCOMPATIBLE", "is not a Beads database"},
		{"read-only user claims", env("BEADS_DOLT_SERVER_USER", "reader", "BEADS_DOLT_PASSWORD", "rpw"), nil, 5, "DB_ACCESS_DENIED", "read-only user can only --dry-run"},
		{"a DSN", w.Env, []string{"--dsn", "root@tcp(127.0.0.1:1)/x"}, 4, "DB_UNAVAILABLE", "cannot be reached at 127.0.0.1:1 (the port from --dsn): is `dolt sql-server` running there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, w.Dir, tc.env, append([]string{"--agent", "a"}, tc.args...)...)
			assert.Equal(t, r.ExitCode, tc.exit, r.Combined())
			assert.Assert(t, strings.Contains(r.Stdout(), `"code":"`+tc.code+`"`), r.Stdout())
			assert.Assert(t, strings.Contains(r.Stdout(), tc.msg), r.Stdout())
			assert.DeepEqual(t, claimtest.DoltRows(t, conn), before)
		})
	}
	r := run(t, w.Dir, env("BEADS_DOLT_SERVER_USER", "reader", "BEADS_DOLT_PASSWORD", "rpw"), "--agent", "a", "--dry-run")
	r.Assert(t, icmd.Success)

	// A project-id mismatch, and a schema bd-claim does not know.
	meta := filepath.Join(w.Dir, ".beads", "metadata.json")
	orig, err := os.ReadFile(meta)
	assert.NilError(t, err)
	var m map[string]any
	assert.NilError(t, json.Unmarshal(orig, &m))
	m["project_id"] = "another-project"
	changed, _ := json.Marshal(m)
	assert.NilError(t, os.WriteFile(meta, changed, 0o644))
	r = doltRun(t, w, "--agent", "a")
	assert.Equal(t, r.ExitCode, 6, r.Combined())
	assert.Assert(t, strings.Contains(r.Stdout(), "project identity mismatch"), r.Stdout())
	assert.NilError(t, os.WriteFile(meta, orig, 0o644))
	_, err = conn.Exec("INSERT INTO schema_migrations (version) VALUES (67)")
	assert.NilError(t, err)
	r = doltRun(t, w, "--agent", "a")
	assert.Equal(t, r.ExitCode, 6, r.Combined())
	assert.Assert(t, strings.Contains(r.Stdout(), "schema version 67; bd-claim supports version 66"), r.Stdout())
	_, err = conn.Exec("DELETE FROM schema_migrations WHERE version = 67")
	assert.NilError(t, err)
	assert.DeepEqual(t, claimtest.DoltRows(t, conn), before)
}

// 32 bd-claim processes drain a workspace (an exit 4, busy, tried again):
// every issue is claimed exactly once; 16 racing --id on one issue: one
// winner.
func TestDoltCLIRaces(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "race")
	conn := w.DB(t)
	ids := doltIssues(t, conn, w.Prefix, 40)
	var mu sync.Mutex
	got := map[string][]string{}
	exits := map[int]int{}
	var wg sync.WaitGroup
	for p := range 32 {
		wg.Go(func() {
			agent := fmt.Sprintf("agent-%d", p)
			for {
				r := doltRun(t, w, "--agent", agent, "--quiet")
				mu.Lock()
				exits[r.ExitCode]++
				mu.Unlock()
				if r.ExitCode == 4 { // the writers' lock stayed held past --timeout-ms: retry, as an agent does
					continue
				}
				if r.ExitCode != 0 {
					if r.ExitCode != 3 {
						t.Errorf("%s: %s", agent, r.Combined())
					}
					return
				}
				var out struct{ Issue struct{ ID string } }
				assert.Check(t, json.Unmarshal([]byte(r.Stdout()), &out))
				mu.Lock()
				got[out.Issue.ID] = append(got[out.Issue.ID], agent)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, exits[3], 32, "every process ends with nothing left: %v", exits)
	assert.Equal(t, len(got), len(ids), "%v", exits)
	for id, agents := range got {
		assert.Equal(t, len(agents), 1, "%s claimed by %v", id, agents)
		var assignee string
		assert.NilError(t, conn.QueryRow("SELECT assignee FROM issues WHERE id = ?", id).Scan(&assignee))
		assert.Equal(t, assignee, agents[0])
	}

	w.JSON(&struct{ ID string }{}, "create", "contested")
	var one struct{ ID string }
	w.JSON(&one, "create", "contested by 16")
	wins := 0
	for p := range 16 {
		wg.Go(func() {
			r := doltRun(t, w, "--agent", fmt.Sprintf("id-%d", p), "--id", one.ID, "--quiet")
			mu.Lock()
			defer mu.Unlock()
			switch r.ExitCode {
			case 0:
				wins++
			case 7, 4: // taken by another, or the writers' lock stayed held past --timeout-ms
			default:
				t.Errorf("exit %d: %s", r.ExitCode, r.Combined())
			}
		})
	}
	wg.Wait()
	assert.Equal(t, wins, 1)
}
