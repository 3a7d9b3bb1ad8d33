package claimtest_test

import (
	"database/sql"
	"os"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

func TestMain(m *testing.M) { os.Exit(claimtest.DoltMain(m)) }

// A server of its own starts, serves, and is gone after Stop.
func TestDoltStartStop(t *testing.T) {
	claimtest.NeedDolt(t) // skips under -short, fails without the binaries
	t.Parallel()
	start := time.Now()
	srv, err := claimtest.StartDolt(t.TempDir())
	assert.NilError(t, err)
	t.Logf("dolt sql-server accepted connections after %v", time.Since(start).Round(time.Millisecond))
	conn, err := sql.Open("mysql", srv.DSN(""))
	assert.NilError(t, err)
	defer conn.Close()
	var version string
	assert.NilError(t, conn.QueryRow("SELECT @@version").Scan(&version))
	assert.Check(t, is.Equal(version, "8.0.31"))

	conn.SetMaxIdleConns(0) // no pooled connection that would outlive the server
	start = time.Now()
	assert.NilError(t, srv.Stop())
	t.Logf("dolt sql-server stopped in %v", time.Since(start).Round(time.Millisecond))
	assert.Check(t, conn.Ping() != nil, "the server still answers after Stop")
	assert.NilError(t, srv.Stop(), "a second Stop is a no-op")
}

// The real bd makes a server-mode workspace on the package's server, lists
// what it created and writes its lease when it claims.
func TestDoltWorkspace(t *testing.T) {
	srv := claimtest.NeedDolt(t)
	t.Parallel()
	start := time.Now()
	w := srv.Workspace(t, "hx")
	t.Logf("bd init --server took %v", time.Since(start).Round(time.Millisecond))
	other := srv.Workspace(t, "hx")
	assert.Check(t, w.Database != other.Database, "two workspaces share database %s", w.Database)

	type issue struct {
		ID, Title, Status, Assignee string
	}
	var a, b issue
	w.JSON(&a, "create", "First", "-p", "1")
	w.JSON(&b, "create", "Second", "-p", "2")
	var ready []issue
	w.JSON(&ready, "ready")
	assert.DeepEqual(t, ready, []issue{{a.ID, "First", "open", ""}, {b.ID, "Second", "open", ""}})
	var none []issue
	other.JSON(&none, "ready")
	assert.Check(t, is.Len(none, 0), "the other workspace's database is its own")

	r := w.As("agent-1").OK("update", a.ID, "--claim")
	assert.Check(t, is.Equal(r.Stderr(), ""), "bd warned (the port file silences the deprecation warning)")
	conn := w.DB(t)
	var holder string
	var granted, expires time.Time
	assert.NilError(t, conn.QueryRow("SELECT holder, granted_at, lease_expires_at FROM leases WHERE issue_id = ?", a.ID).
		Scan(&holder, &granted, &expires))
	assert.Check(t, is.Equal(holder, "agent-1"))
	assert.Check(t, is.Equal(expires.Sub(granted), 5*time.Minute))
	assert.Check(t, is.Equal(claimtest.Count(t, conn, "SELECT count(*) FROM leases"), 1))
	var status, assignee string
	assert.NilError(t, conn.QueryRow("SELECT status, assignee FROM issues WHERE id = ?", a.ID).Scan(&status, &assignee))
	assert.Check(t, is.Equal(status+" "+assignee, "in_progress agent-1"))
}
